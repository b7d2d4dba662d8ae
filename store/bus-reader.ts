import type { NatsConnection } from '@nats-io/transport-node'
import type { StoreReader } from './clickhouse.js'
import { encodeJson, subjects, type StoreQueryReply } from './bus.js'
import { QueryRefusedError, StoreError } from './errors.js'
import { QUERY_TIME_LIMIT_S } from './clickhouse.js'

/** A StoreReader that asks the ingester (the embedded store's single owner) over NATS request/reply. */
export function busReader(nc: NatsConnection, opts: { timeoutMs?: number; closeConnection?: boolean } = {}): StoreReader {
  return {
    async query<T>(sql: string, params: Record<string, unknown> = {}, read: { timeoutSeconds?: number } = {}): Promise<T[]> {
      let reply: StoreQueryReply
      const timeoutSeconds = read.timeoutSeconds ?? QUERY_TIME_LIMIT_S
      try {
        // the ingester stops the query after timeout_s: wait a little longer for its answer
        const msg = await nc.request(subjects.storeQuery, encodeJson({ sql, params, timeout_s: timeoutSeconds }), { timeout: opts.timeoutMs ?? timeoutSeconds * 1000 + 5_000 })
        reply = msg.json<StoreQueryReply>()
      } catch (error) {
        throw new StoreError(`the ingester did not answer a store query: ${(error as Error).message}`, { cause: error })
      }
      if (!reply.ok) throw reply.refused === true ? new QueryRefusedError(reply.error) : new StoreError(reply.error)
      return reply.rows as T[]
    },
    async close() {
      if (opts.closeConnection) await nc.drain().catch(() => undefined)
    },
  }
}
