import { ForgeError } from '../errors.js'

/** Thrown when `gradeAll` meets a grader spec that `validateGraderSpec` would reject (a harness error, not an agent failure). */
export class GraderConfigError extends ForgeError {
  override readonly name = 'GraderConfigError'
  readonly kind = 'validation'
  constructor(
    readonly graderType: string,
    readonly problems: { path: (string | number)[]; message: string }[],
  ) {
    super(`invalid ${graderType} grader: ${problems.map((p) => (p.path.length > 0 ? `${p.path.join('.')}: ${p.message}` : p.message)).join('; ')}`)
  }
}
