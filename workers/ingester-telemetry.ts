/**
 * What the ingester reports on /metrics: rows inserted, messages rejected, insert rounds (from its
 * own stats), and the ingest lag read from JetStream at scrape time — messages the durable consumer
 * has not acked yet and the age of the oldest of them — so a falling-behind ingester shows before
 * `forge run` waits on it.
 */
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import type { MetricFamily } from '../core/prometheus.js'
import { INGESTER_CONSUMER, RESULTS_STREAM } from '../store/bus.js'
import type { IngesterStats } from './ingester.js'

export interface IngestLag {
  /** messages delivered to no ingester yet plus those delivered and not acked */
  pending: number
  /** seconds since the oldest message the consumer has not acked was stored (0 when caught up) */
  lag_seconds: number
}

/** The consumer's backlog and the age of its oldest unacked message; undefined when JetStream does not answer. */
export async function ingestLag(nc: NatsConnection, now: () => number = Date.now, jsm?: JetStreamManager): Promise<IngestLag | undefined> {
  try {
    const manager = jsm ?? (await jetstreamManager(nc))
    const info = await manager.consumers.info(RESULTS_STREAM, INGESTER_CONSUMER)
    const pending = info.num_pending + info.num_ack_pending
    if (pending === 0) return { pending, lag_seconds: 0 }
    // the ack floor is the last message acked in order: the next stored one is the oldest not yet acked
    let seq = info.ack_floor.stream_seq + 1
    for (let tries = 0; tries < 5; tries++) {
      const msg = await manager.streams.getMessage(RESULTS_STREAM, { seq }).catch(() => null)
      if (msg !== null) return { pending, lag_seconds: Math.max(0, (now() - msg.time.getTime()) / 1000) }
      seq++ // deleted or aged out: try the next one
    }
    return { pending, lag_seconds: 0 }
  } catch {
    return undefined
  }
}

export function ingesterMetrics(stats: IngesterStats, lag: IngestLag | undefined, now: () => number = Date.now): MetricFamily[] {
  return [
    { name: 'forge_ingested_attempts_total', help: 'Attempt rows this ingester inserted into ClickHouse.', type: 'counter', samples: [{ value: stats.inserted_attempts }] },
    { name: 'forge_ingested_runs_total', help: 'Run records this ingester inserted.', type: 'counter', samples: [{ value: stats.inserted_runs }] },
    { name: 'forge_ingest_rejected_total', help: 'Malformed messages logged and terminated.', type: 'counter', samples: [{ value: stats.rejected }] },
    { name: 'forge_ingest_batches_total', help: 'Insert rounds.', type: 'counter', samples: [{ value: stats.batches }] },
    { name: 'forge_ingest_insert_failures_total', help: 'Inserts the store failed (not a value it refused); their messages were redelivered.', type: 'counter', samples: [{ value: stats.insert_failures }] },
    { name: 'forge_results_trimmed_total', help: 'Stored messages trimmed off the results stream after FORGE_RESULTS_KEEP.', type: 'counter', samples: [{ value: stats.trimmed_messages }] },
    { name: 'forge_ingest_failing_seconds', help: 'How long the store has failed every insert (0 while inserts go in).', type: 'gauge', samples: [{ value: stats.failing === undefined ? 0 : Math.max(0, (now() - stats.failing.since) / 1000) }] },
    // unknown lag is a missing sample, never a reassuring zero
    { name: 'forge_ingest_pending_messages', help: 'Results-stream messages the ingesters have not acked yet.', type: 'gauge', samples: lag ? [{ value: lag.pending }] : [] },
    { name: 'forge_ingest_lag_seconds', help: 'Age of the oldest results-stream message not yet stored.', type: 'gauge', samples: lag ? [{ value: lag.lag_seconds }] : [] },
  ]
}
