import { ForgeError } from '../core/errors.js'

/** Thrown when the ClickHouse store cannot be opened or answered with an error; carries the SQL's first line. */
export class StoreError extends ForgeError {
  override name = 'StoreError'
  readonly kind = 'store'
}

/** Thrown when a read is refused before it reaches ClickHouse (a write, a file or URL table function, INTO OUTFILE); says why. Bad input: exit 2. */
export class QueryRefusedError extends ForgeError {
  override name = 'QueryRefusedError'
  readonly kind = 'validation'
}

/** Thrown when the embedded chDB directory is owned by another process and no owner answers over NATS. */
export class StoreLockedError extends StoreError {
  override name = 'StoreLockedError'
}

/** Thrown when a NATS server cannot be reached or a JetStream call fails. */
export class BusError extends ForgeError {
  override name = 'BusError'
  readonly kind = 'store'
}
