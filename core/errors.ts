/**
 * Forge's one error taxonomy. Every known failure is a `ForgeError` of one kind, and its kind
 * decides the exit code a script can branch on (README, "Exit codes"). The areas keep their own
 * error classes (engine/errors.ts, store/errors.ts, …) as subclasses; `cli/base.ts` maps by
 * `instanceof ForgeError`, never by a name string. Error `name`s stay as they are: Temporal matches
 * non-retryable activity failures by them.
 */

/** Exit codes of the `forge` CLI; `regression` is forge compare's "a regression was found", not an error. */
export const EXIT_CODES = { ok: 0, failure: 1, badInput: 2, missingBinary: 3, stack: 4, store: 5, regression: 6, degraded: 7 } as const

/**
 * What went wrong, by who can fix it: `run_failed` (the run itself failed, was cancelled or ended
 * incomplete), `degraded` (the run completed, but harness errors exceed 2% of its attempts),
 * `config` (a flag, variable or setting), `validation` (a suite file or other input), `missing_binary`
 * (a server binary is not installed), `stack` (a local server did not come up), `store` (ClickHouse or NATS).
 */
export type ErrorKind = 'run_failed' | 'degraded' | 'config' | 'validation' | 'missing_binary' | 'stack' | 'store'

const EXIT_CODE_OF_KIND: Readonly<Record<ErrorKind, number>> = {
  run_failed: EXIT_CODES.failure,
  degraded: EXIT_CODES.degraded,
  config: EXIT_CODES.badInput,
  validation: EXIT_CODES.badInput,
  missing_binary: EXIT_CODES.missingBinary,
  stack: EXIT_CODES.stack,
  store: EXIT_CODES.store,
}

/** The base of every error Forge knows how to report: a kind and the exit code that follows from it. */
export abstract class ForgeError extends Error {
  abstract readonly kind: ErrorKind

  /** the process exit code of this error (README, "Exit codes") */
  get exitCode(): number {
    return EXIT_CODE_OF_KIND[this.kind]
  }
}

/** Thrown when a flag, environment variable or config value is invalid; names it and the value. */
export class ConfigError extends ForgeError {
  override name = 'ConfigError'
  readonly kind = 'config'
}

/** The exit code of a known failure; undefined for anything else (a bug: oclif prints it whole). */
export function exitCodeOf(error: unknown): number | undefined {
  return error instanceof ForgeError ? error.exitCode : undefined
}
