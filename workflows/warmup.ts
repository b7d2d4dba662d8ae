/**
 * A warm worker's workflow warm-up (issue 15, app/workflow-warmup.ts). A workflow worker that has not
 * run a workflow yet took ~80–95 ms for a run's first workflow task against ~20 once it had, and the
 * whole run's workflow tasks were slower with it (the Temporal SDK's and Forge's workflow code, the
 * payload converter and the protobuf encoders of its commands, compiled on first use): the first big
 * run after a small one whose workflows `forge run`'s own host served ran ~12 % slower. This workflow
 * does what a run's first workflow task does — a shard's batch inputs built from a real plan and their
 * `runAttempts` activities scheduled — on whichever workflow worker polls, with nothing executed: the
 * activities go to a task queue no worker polls (`void_queue`) and are abandoned at once, their
 * schedule-to-close timeout letting the server drop them.
 */
import { ActivityCancellationType, CancellationScope, isCancellation, proxyActivities, sleep } from '@temporalio/workflow'
import type { RunPlan } from '../core/contracts/index.js'
import type { AttemptSummary, RunActivities } from '../workers/activity-types.js'
import { attemptActivityOptions } from './activity-options.js'
import { attemptBatchSize, batchInputOf } from './attempt-batches.js'
import { attemptInputOf } from './tally.js'

export interface WarmupWorkflowInput {
  /** a plan as a run's (app/plan-run.ts): its batches are what the warm-up schedules */
  plan: RunPlan
  /** a task queue no worker polls: what is scheduled there never runs */
  void_queue: string
}

export interface WarmupWorkflowResult {
  /** batch activities scheduled (and abandoned) */
  scheduled: number
}

export async function WarmupWorkflow(input: WarmupWorkflowInput): Promise<WarmupWorkflowResult> {
  const { plan } = input
  const { runAttempts } = proxyActivities<RunActivities>({
    ...attemptActivityOptions(plan),
    taskQueue: input.void_queue,
    scheduleToCloseTimeout: '10s',
    cancellationType: ActivityCancellationType.ABANDON,
    retry: { maximumAttempts: 1 },
  })
  const total = plan.task_ids.length * plan.attempts
  // a shard's batches, as ShardWorkflow cuts them (workflows/run.ts)
  const lanes = Math.max(1, plan.attempt_lanes ?? 1)
  const step = Math.max(1, attemptBatchSize(plan, total, lanes))
  const inFlight = Math.max(1, Math.floor(plan.max_in_flight / lanes))
  const inputAt = (index: number) => attemptInputOf(plan, plan.task_ids[Math.floor(index / plan.attempts)]!, index % plan.attempts)
  let scheduled = 0
  try {
    await CancellationScope.cancellable(async () => {
      const pending: Promise<AttemptSummary[]>[] = []
      for (let from = 0; from < total && pending.length < inFlight; from += step) {
        const inputs = Array.from({ length: Math.min(step, total - from) }, (_, i) => inputAt(from + i))
        pending.push(runAttempts({ ...batchInputOf(inputs), ...(lanes > 1 ? { lanes: Math.min(lanes, inputs.length) } : {}) }))
        scheduled++
      }
      // the commands go out with this task; the next one abandons them
      await sleep(1)
      CancellationScope.current().cancel()
      await Promise.allSettled(pending)
    })
  } catch (error) {
    if (!isCancellation(error)) throw error
  }
  return { scheduled }
}
