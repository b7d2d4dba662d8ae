/**
 * RunWorkflow plans a run as task × attempt and fans it out to ShardWorkflow children
 * (≤ shard_size attempts each) so no single history nears Temporal's limits; a run of one shard runs
 * it in its own history. Workflows do no I/O and hold no big payloads: results travel through NATS;
 * activities return small summaries.
 */
import {
  CancellationScope,
  continueAsNew,
  executeChild,
  isCancellation,
  patched,
  proxyActivities,
  workflowInfo,
} from '@temporalio/workflow'
import { finalRunStatus, type FinalRunStatus, type RunCompleteness } from '../core/completeness.js'
import type { RunPlan } from '../core/contracts/index.js'
import type { AttemptInput, AttemptSummary, RunActivities } from '../workers/activity-types.js'
import { attemptActivityOptions, bookkeepingActivityOptions } from './activity-options.js'
import { judgeScheduler } from './judging.js'
import { FINAL_RECORD_WITH_CHECK_PATCH, RECONCILE_PATCH, reconcileRun } from './reconcile.js'
import { SequentialRun } from './sequential.js'
import { attemptInputOf, isNonRetryable, mergeTally, type RunTally } from './tally.js'
import { activityWindow, attemptBatchSize, batchInputOf } from './attempt-batches.js'

export type { RunTally }

export interface ShardInput {
  plan: RunPlan
  /** flattened attempt index range [start, end) over task_ids × attempts */
  start: number
  end: number
}

export interface RunWorkflowInput {
  plan: RunPlan
  /** carried across continue-as-new */
  next_shard?: number
  tally?: RunTally
  started_at?: number
  /** shards one execution runs before it continues as new (default 400; small in tests) */
  shards_per_execution?: number
}

export interface RunWorkflowResult {
  run_id: string
  total: number
  tally: RunTally
  /** completed, or (runs with the completeness check) degraded / incomplete */
  status: FinalRunStatus
  /** what the completeness check found (absent on runs started before it existed) */
  completeness?: RunCompleteness
}

const SHARDS_PER_EXECUTION = 400

/** RunWorkflow records its start while its first shards start (histories before it: start first) */
export const EAGER_SHARDS_PATCH = 'forge-eager-shards-v1'

/**
 * A run of one shard (≤ shard_size attempts) runs ShardWorkflow's code in its own history instead of
 * as a child: no child to start before the first attempt, no child completion to hop back after the
 * last — ~50 ms of a warm 1,000-attempt run's ~900 (issue 15). Histories before it replay with the child.
 */
export const INLINE_SHARD_PATCH = 'forge-inline-single-shard-v1'

/**
 * A run that fails or is cancelled while its 'running' record is still on its way waits for that record
 * before it records the end, so the end keeps the start time (histories before it recorded at once).
 */
export const END_AFTER_START_PATCH = 'forge-end-record-after-start-v1'

export function shardRanges(total: number, shardSize: number): { start: number; end: number }[] {
  const ranges: { start: number; end: number }[] = []
  for (let start = 0; start < total; start += shardSize) ranges.push({ start, end: Math.min(total, start + shardSize) })
  return ranges
}

export async function RunWorkflow(input: RunWorkflowInput): Promise<RunWorkflowResult> {
  const { plan } = input
  // opt-in sequential stopping is its own path (workflows/sequential.ts); runs without it keep this one
  if (plan.sequential) return SequentialRun(input)
  const book = proxyActivities<RunActivities>(bookkeepingActivityOptions)
  const total = plan.task_ids.length * plan.attempts
  const shards = shardRanges(total, plan.shard_size)
  const tally: RunTally = input.tally ?? { outcomes: {}, not_executed: 0 }
  let startedAt = input.started_at
  // the 'running' record goes out with the first shards, not before them: one activity round trip
  // (on a local run, a wait for the first worker) less before the first attempt (issue 15)
  let recordingStart: Promise<void> | undefined
  // always set once the shards are done; in a failure it may not be
  const startedField = (): { started_at?: number } => (startedAt !== undefined ? { started_at: startedAt } : {})
  if (startedAt === undefined) {
    if (patched(EAGER_SHARDS_PATCH)) {
      recordingStart = book.recordRunStatus({ plan, status: 'running' }).then((at) => {
        startedAt = at
      })
    } else startedAt = await book.recordRunStatus({ plan, status: 'running' })
  }

  let next = input.next_shard ?? 0
  const perExecution = input.shards_per_execution ?? SHARDS_PER_EXECUTION
  const stopAt = Math.min(shards.length, next + perExecution)
  let completeness: RunCompleteness | undefined
  let recorded: FinalRunStatus | undefined
  try {
    const lane = async (): Promise<void> => {
      while (next < stopAt) {
        const index = next++
        const range = shards[index]!
        const shard: ShardInput = { plan, start: range.start, end: range.end }
        const shardTally =
          shards.length === 1 && patched(INLINE_SHARD_PATCH)
            ? await ShardWorkflow(shard)
            : await executeChild(ShardWorkflow, { workflowId: `${workflowInfo().workflowId}/shard-${index}`, args: [shard] })
        mergeTally(tally, shardTally)
      }
    }
    await Promise.all([...(recordingStart ? [recordingStart] : []), ...Array.from({ length: Math.min(plan.max_shards_in_flight, stopAt - next) }, lane)])
    // the workflow owns its run's status: stored results are checked against the plan (issue 12)
    if (stopAt >= shards.length && patched(RECONCILE_PATCH)) {
      const withRecord = patched(FINAL_RECORD_WITH_CHECK_PATCH) ? startedField() : undefined
      ;({ completeness, recorded } = await reconcileRun(plan, undefined, withRecord))
    }
  } catch (error) {
    const status = isCancellation(error) ? 'cancelled' : 'failed'
    await CancellationScope.nonCancellable(async () => {
      // the 'running' record goes out with the first attempts and may still be on its way when one of
      // them fails the run: its start time is this record's too (a record without it lost the run's)
      if (recordingStart !== undefined && patched(END_AFTER_START_PATCH)) await recordingStart.catch(() => undefined)
      await book.recordRunStatus({ plan, status, ...startedField() })
    })
    throw error
  }
  // outside the try: continue-as-new works by throwing, and is not a failure of the run
  if (stopAt < shards.length) {
    return await continueAsNew<typeof RunWorkflow>({ plan, next_shard: stopAt, tally, ...startedField(), shards_per_execution: perExecution })
  }
  const status = completeness === undefined ? 'completed' : finalRunStatus(completeness)
  // the check that ended the run recorded it already (the same status: the same function of the same report)
  if (recorded !== status) await book.recordRunStatus({ plan, status, ...startedField(), ...(completeness !== undefined ? { completeness } : {}) })
  return { run_id: plan.run_id, total, tally, status, ...(completeness !== undefined ? { completeness } : {}) }
}

/** Runs attempts [start, end) of a run with at most `max_in_flight` attempt activities pending. */
export async function ShardWorkflow(input: ShardInput): Promise<RunTally> {
  const { plan } = input
  const { runAttempt } = proxyActivities<RunActivities>(attemptActivityOptions(plan))
  const tally: RunTally = { outcomes: {}, not_executed: 0 }
  const judging = judgeScheduler(plan, tally)
  const counted = (attemptInput: AttemptInput, summary: AttemptSummary): void => {
    tally.outcomes[summary.outcome] = (tally.outcomes[summary.outcome] ?? 0) + 1
    judging.after(attemptInput, summary)
  }
  const runOne = async (attemptInput: AttemptInput): Promise<void> => {
    let summary: AttemptSummary
    try {
      summary = await runAttempt(attemptInput)
    } catch (error) {
      if (isCancellation(error)) throw error
      // configuration errors fail the run at once; exhausted infrastructure retries are counted
      if (error instanceof Error && isNonRetryable(error)) throw error
      tally.not_executed++
      return
    }
    counted(attemptInput, summary)
  }
  const inputAt = (index: number): AttemptInput => attemptInputOf(plan, plan.task_ids[Math.floor(index / plan.attempts)]!, index % plan.attempts)
  // issue 15: several attempts per activity, and several of them at once in one activity (lanes);
  // the patches keep histories of shards that ran one per activity, or one at a time, replayable
  const size = input.end - input.start
  const lanes = (plan.attempt_lanes ?? 1) > 1 && attemptBatchSize(plan, size, plan.attempt_lanes) > 1 && patched('attempt-lanes') ? plan.attempt_lanes! : 1
  const batch = attemptBatchSize(plan, size, lanes)
  const batched = batch > 1 && patched('attempt-batches')
  const step = batched ? batch : 1
  // a batch runs its attempts in ⌈batch / lanes⌉ rounds: each round may take one attempt's limit
  // (a dead worker is still noticed by its missed heartbeats, not by this limit)
  const { runAttempts } = proxyActivities<RunActivities>({ ...attemptActivityOptions(plan), startToCloseTimeout: plan.attempt_timeout_ms * Math.ceil(step / lanes) })
  let next = input.start
  const lane = async (): Promise<void> => {
    while (next < input.end) {
      const from = next
      next = Math.min(input.end, next + step)
      if (!batched) {
        await runOne(inputAt(from))
        continue
      }
      const inputs = Array.from({ length: next - from }, (_, i) => inputAt(from + i))
      let summaries: AttemptSummary[]
      try {
        summaries = await runAttempts({ ...batchInputOf(inputs), ...(lanes > 1 ? { lanes: Math.min(lanes, inputs.length) } : {}) })
      } catch (error) {
        if (isCancellation(error)) throw error
        if (error instanceof Error && isNonRetryable(error)) throw error
        // the batch gave up after its retries: each attempt gets its own activity (and retries) so the
        // tally stays exact, `lanes` at a time; attempts the batch published already are published
        // again under the same attempt_uid, which the bus and the store deduplicate
        let fallback = 0
        const fallbackLane = async (): Promise<void> => {
          while (fallback < inputs.length) await runOne(inputs[fallback++]!)
        }
        await Promise.all(Array.from({ length: Math.min(lanes, inputs.length) }, fallbackLane))
        continue
      }
      inputs.forEach((attemptInput, i) => counted(attemptInput, summaries[i]!))
    }
  }
  const activities = Math.ceil(size / step)
  await Promise.all(Array.from({ length: Math.min(activityWindow(plan, lanes), activities) }, lane))
  await judging.drain()
  return tally
}
