/** Errors of the judge side of a worker. */

/** Thrown when the judge's endpoint or model is configured so that no call can work; retrying cannot fix it. */
export class JudgeConfigError extends Error {
  override name = 'JudgeConfigError'
}
