/**
 * Errors thrown by the worker side: suite loading and adapter lookup. Each is a configuration
 * error (retrying cannot fix it), so activities should rethrow them as non-retryable.
 */
import { ForgeError } from '../core/errors.js'
import type { SuiteProblem } from '../core/suite-validation.js'

/** Thrown when a suite directory cannot be found or any of its files is invalid; lists every problem at once. */
export class SuiteLoadError extends ForgeError {
  override name = 'SuiteLoadError'
  readonly kind = 'validation'
  readonly suitePath: string
  readonly problems: SuiteProblem[]

  constructor(suitePath: string, problems: SuiteProblem[], options?: { cause?: unknown }) {
    super(formatSuiteLoadMessage(suitePath, problems), options)
    this.suitePath = suitePath
    this.problems = problems
  }
}

/** Thrown when a run names an adapter that is not registered. */
export class UnknownAdapterError extends ForgeError {
  override name = 'UnknownAdapterError'
  readonly kind = 'config'
  readonly adapter: string
  readonly known: string[]

  constructor(adapter: string, known: string[]) {
    super(`unknown adapter "${adapter}" (known adapters: ${known.join(', ')})`)
    this.adapter = adapter
    this.known = known
  }
}

function formatSuiteLoadMessage(suitePath: string, problems: SuiteProblem[]): string {
  const lines = problems.map((p) => `  ${p.file}: ${p.path ? `${p.path}: ` : ''}${p.message}`)
  return `suite ${suitePath} has ${problems.length} problem(s):\n${lines.join('\n')}`
}

/** Thrown when a secret the adapter config names by reference (`from_env`, `from_file`) cannot be read on this worker. */
export class SecretRefError extends Error {
  override name = 'SecretRefError'
}
