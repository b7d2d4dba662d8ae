/**
 * The completeness check of a run (issue 12), an activity so RunWorkflow can own its run's status:
 * wait until the ingester has stored everything published so far, then compare the store with the
 * plan. A store that is behind or unreachable throws (retried with backoff while the supervisor
 * restarts what died); it never answers from a partial view.
 */
import type { JetStreamClient } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import { finalRunStatus } from '../core/completeness.js'
import { resultsKey, storeFailureOf, waitForIngestedBacklog } from '../store/bus.js'
import type { StoreReader } from '../store/clickhouse.js'
import { checkStoredAgainstPlan } from '../store/completeness.js'
import type { Logger } from '../engine/logger.js'
import type { CompletenessAnswer, CompletenessInput, ReconcileActivities } from './activity-types.js'
import { startHeartbeat } from './heartbeat.js'
import { publishRunStatus } from './run-record.js'

export interface ReconcileDeps {
  nc: NatsConnection
  /** where the check that ends a run publishes the run's final record */
  js: JetStreamClient
  /** the store as this worker reads it: a ClickHouse server, or the ingester over NATS */
  reader: StoreReader
  logger: Logger
  /** how long one activity try waits for the ingester before it throws (and is retried); default 60 s */
  ingestWaitMs?: number
  /** the key the final record's plan grant is checked under (default: the bus connection's results key) */
  resultsKey?: () => string | undefined
  now?: () => number
}

/** Thrown when the ingester has not stored what was published yet; retried. */
export class IngestBehindError extends Error {
  override name = 'IngestBehindError'
}

export function createReconcileActivities(deps: ReconcileDeps): ReconcileActivities {
  const check = async ({ final_record: final, ...input }: CompletenessInput): Promise<CompletenessAnswer> => {
    const { caughtUp, progress } = await waitForIngestedBacklog(deps.nc, { timeoutMs: deps.ingestWaitMs ?? 60_000, pollMs: 10 })
    if (!caughtUp) {
      // a store that fails every insert is the reason the run ends incomplete, not "behind"
      const failing = await storeFailureOf(deps.nc)
      const why = failing === undefined ? '' : `: the store has failed every insert for ${Math.max(0, Math.round((Date.now() - failing.since) / 1000))} s (${failing.error})`
      throw new IngestBehindError(`the ingester has not stored the results stream up to seq ${progress.target} yet (acked ${progress.acked}, ${progress.pending} pending)${why}`)
    }
    const report = await checkStoredAgainstPlan(deps.reader, input)
    deps.logger.info({ run_id: input.run_id, task_id: '', attempt: null, span_id: null, parent_span_id: null, category: 'scheduler', planned: report.planned, stored: report.stored, missing: report.missing_count, doubled: report.doubled }, 'completeness checked')
    // the check that ends the run records its final status here: the workflow would otherwise start one more activity for it
    if (final === undefined || (report.missing_count > 0 && !final.last_round)) return report
    const completeness = { ...report, rerun: final.rerun }
    const status = finalRunStatus(completeness)
    const recording = { plan: final.plan, status, completeness, ...(final.started_at !== undefined ? { started_at: final.started_at } : {}) }
    await publishRunStatus(deps.js, (deps.resultsKey ?? resultsKey)(), recording, (deps.now ?? Date.now)())
    return { ...report, recorded: status }
  }
  return {
    async checkCompleteness(input: CompletenessInput): Promise<CompletenessAnswer> {
      // a worker that dies during the check is noticed within the heartbeat timeout, however long the store takes to answer
      const stopHeartbeat = startHeartbeat()
      try {
        return await check(input)
      } finally {
        stopHeartbeat()
      }
    },
  }
}
