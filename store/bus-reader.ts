import type { NatsConnection } from '@nats-io/transport-node'
import type { StoreReader } from './clickhouse.js'
import { encodeJson, subjects, type StoreQueryReply } from './bus.js'
import { StoreError } from './errors.js'

/** A StoreReader that asks the ingester (the embedded store's single owner) over NATS request/reply. */
export function busReader(nc: NatsConnection, opts: { timeoutMs?: number; closeConnection?: boolean } = {}): StoreReader {
  return {
    async query<T>(sql: string, params: Record<string, unknown> = {}): Promise<T[]> {
      let reply: StoreQueryReply
      try {
        const msg = await nc.request(subjects.storeQuery, encodeJson({ sql, params }), { timeout: opts.timeoutMs ?? 30_000 })
        reply = msg.json<StoreQueryReply>()
      } catch (error) {
        throw new StoreError(`the ingester did not answer a store query: ${(error as Error).message}`, { cause: error })
      }
      if (!reply.ok) throw new StoreError(reply.error)
      return reply.rows as T[]
    },
    async close() {
      if (opts.closeConnection) await nc.drain().catch(() => undefined)
    },
  }
}
