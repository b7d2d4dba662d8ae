/** Errors of the judge side of a worker. */
import { ForgeError } from '../../core/errors.js'

/** Thrown when the judge's endpoint or model is configured so that no call can work; retrying cannot fix it. */
export class JudgeConfigError extends ForgeError {
  override name = 'JudgeConfigError'
  readonly kind = 'config'
}
