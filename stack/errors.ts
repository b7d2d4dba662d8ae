/** Thrown when a required binary (temporal, nats-server) is not installed; says how to install it. */
export class MissingBinaryError extends Error {
  override name = 'MissingBinaryError'
}

/** Thrown when a local stack process does not come up; names its log file. */
export class StackStartError extends Error {
  override name = 'StackStartError'
}

/** Thrown when a flag, environment variable or config value is invalid; names it. */
export class ConfigError extends Error {
  override name = 'ConfigError'
}
