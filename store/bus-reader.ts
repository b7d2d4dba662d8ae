import { headers, type Msg, type NatsConnection } from '@nats-io/transport-node'
import type { StoreReader } from './clickhouse.js'
import { busMaxPayload, encodeJson, subjects, type StoreQueryReply } from './bus.js'
import { QueryRefusedError, StoreError } from './errors.js'
import { QUERY_TIME_LIMIT_S } from './clickhouse.js'

/** Room left in each part of a reply for the protocol's own bytes (subject, headers). */
const PART_HEADROOM = 4096

/** The header each part of a reply carries: how many parts the whole answer has. */
const PARTS_HEADER = 'Forge-Parts'

/**
 * Answers a request in parts no larger than the bus's max_payload, each saying how many there are:
 * a store query may return more than one message can carry (a 100,000-attempt run's audit heads
 * are ~18 MB), and one over-size reply used to throw in the ingester.
 */
export function respondInParts(nc: NatsConnection, msg: Msg, body: Uint8Array): void {
  const size = Math.max(1024, busMaxPayload(nc) - PART_HEADROOM)
  const count = Math.max(1, Math.ceil(body.length / size))
  for (let i = 0; i < count; i++) {
    const h = headers()
    h.set(PARTS_HEADER, String(count))
    msg.respond(body.subarray(i * size, (i + 1) * size), { headers: h })
  }
}

/** Sends a request answered by respondInParts and returns the whole answer; throws if it ended early. */
export async function requestInParts(nc: NatsConnection, subject: string, payload: Uint8Array, timeoutMs: number): Promise<Uint8Array> {
  const parts: Uint8Array[] = []
  let count: number | undefined
  for await (const msg of await nc.requestMany(subject, payload, { strategy: 'timer', maxWait: timeoutMs })) {
    parts.push(msg.data)
    count ??= Number(msg.headers?.get(PARTS_HEADER) || 1)
    if (parts.length >= count) break
  }
  if (count === undefined || parts.length < count) throw new Error(parts.length === 0 ? `no answer within ${timeoutMs} ms` : `the answer stopped after ${parts.length} of ${count} part(s) (${timeoutMs} ms)`)
  return Buffer.concat(parts)
}

/** A StoreReader that asks the ingester (the embedded store's single owner) over NATS request/reply. */
export function busReader(nc: NatsConnection, opts: { timeoutMs?: number; closeConnection?: boolean } = {}): StoreReader {
  return {
    async query<T>(sql: string, params: Record<string, unknown> = {}, read: { timeoutSeconds?: number } = {}): Promise<T[]> {
      let reply: StoreQueryReply
      const timeoutSeconds = read.timeoutSeconds ?? QUERY_TIME_LIMIT_S
      try {
        // the ingester stops the query after timeout_s: wait a little longer for its answer
        const answer = await requestInParts(nc, subjects.storeQuery, encodeJson({ sql, params, timeout_s: timeoutSeconds }), opts.timeoutMs ?? timeoutSeconds * 1000 + 5_000)
        reply = JSON.parse(new TextDecoder().decode(answer)) as StoreQueryReply
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
