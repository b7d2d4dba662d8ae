import { ForgeError } from '../../core/errors.js'

/** Thrown when a fixture cannot be built from its files (bad SQL, unreadable CSV, a condition that does not apply). */
export class FixtureSeedError extends ForgeError {
  override readonly name = 'FixtureSeedError'
  readonly kind = 'validation'
  constructor(
    readonly fixture: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`fixture "${fixture}": ${message}`, options)
  }
}
