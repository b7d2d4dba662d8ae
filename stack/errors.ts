import { ForgeError } from '../core/errors.js'

/** Thrown when a required binary (temporal, nats-server) is not installed; says how to install it. */
export class MissingBinaryError extends ForgeError {
  override name = 'MissingBinaryError'
  readonly kind = 'missing_binary'
}

/** Thrown when a local stack process does not come up; names its log file. */
export class StackStartError extends ForgeError {
  override name = 'StackStartError'
  readonly kind = 'stack'
}

// one ConfigError for every area: it lives in the taxonomy (core/errors.ts)
export { ConfigError } from '../core/errors.js'
