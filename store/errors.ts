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

/**
 * ClickHouse error codes that name a value it cannot take (a parse, type or range error): the data's
 * fault, not the store's, so retrying the same rows can never succeed.
 */
const DATA_ERROR_CODES = new Set([6, 25, 26, 27, 32, 38, 41, 53, 69, 70, 72, 117, 131, 190, 321, 349, 407, 691])

/** Whether ClickHouse refused an insert for a value in it (its `code`, or the `Code: N.` of its message). */
export function refusedAsData(error: unknown): boolean {
  if (error === null || typeof error !== 'object') return false
  const given = (error as { code?: unknown }).code
  const code = typeof given === 'string' || typeof given === 'number' ? Number(given) : Number(/Code: (\d+)\./.exec((error as { message?: unknown }).message as string)?.[1])
  return DATA_ERROR_CODES.has(code)
}
