/** Thrown when a fixture cannot be built from its files (bad SQL, unreadable CSV, a condition that does not apply). */
export class FixtureSeedError extends Error {
  override readonly name = 'FixtureSeedError'
  constructor(
    readonly fixture: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`fixture "${fixture}": ${message}`, options)
  }
}
