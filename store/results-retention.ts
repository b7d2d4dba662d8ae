/**
 * Trims the results stream of what the store already holds (core/results-retention.ts says what may
 * go; workers/results-trimmer.ts calls it from the ingester): the stored messages published more
 * than FORGE_RESULTS_KEEP seconds ago. The stream's max_age (7 days) still bounds what no ingester ever
 * stored; a purge leaves JetStream's duplicate window intact, so a late republish is still dropped.
 */
import { jetstreamManager, type MsgRequest } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import { trimCut } from '../core/results-retention.js'
import { INGESTER_CONSUMER, RESULTS_STREAM } from './bus.js'

export interface TrimResult {
  /** messages purged */
  purged: number
  /** the stream's first sequence afterwards */
  firstSeq: number
}

/** Purges the results stream's stored messages older than `keepMs`; purged 0 when none may go. */
export async function trimResultsStream(nc: NatsConnection, keepMs: number, now: number = Date.now()): Promise<TrimResult> {
  const manager = await jetstreamManager(nc)
  const [consumer, stream] = await Promise.all([manager.consumers.info(RESULTS_STREAM, INGESTER_CONSUMER), manager.streams.info(RESULTS_STREAM)])
  const cut = await trimCut({
    firstSeq: stream.state.first_seq,
    ackFloor: consumer.ack_floor.stream_seq,
    keepSince: now - keepMs,
    async messageAtOrAfter(seq) {
      // STREAM.MSG.GET takes next_by_subj (the first message at or after seq); the client's type lists only seq and last_by_subj
      const msg = await manager.streams.getMessage(RESULTS_STREAM, { seq, next_by_subj: 'forge.results.>' } as unknown as MsgRequest)
      return msg === null ? undefined : { seq: msg.seq, time: msg.time.getTime() }
    },
  })
  if (cut === undefined) return { purged: 0, firstSeq: stream.state.first_seq }
  const purged = await manager.streams.purge(RESULTS_STREAM, { seq: cut })
  return { purged: purged.purged, firstSeq: cut }
}
