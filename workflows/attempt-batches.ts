/** Several attempts per attempt activity (issue 15): pure helpers of ShardWorkflow's scheduling. */
import type { RunPlan } from '../core/contracts/index.js'
import type { AttemptBatchInput, AttemptInput } from '../workers/activity-types.js'

/** Activities a shard keeps in flight when each runs `lanes` attempts at once: max_in_flight attempts in all. */
export function activityWindow(plan: Pick<RunPlan, 'max_in_flight'>, lanes: number): number {
  return Math.ceil(plan.max_in_flight / lanes)
}

/**
 * Attempts per activity for a shard of `size` attempts: the plan's attempts_per_activity (absent: 1)
 * for each of its `lanes`, lowered so the shard still has its window of activities to keep full.
 * One lane (replayed histories depend on it): at least max_in_flight activities. Several: at most
 * the window's activities, so a shard that fits in max_in_flight still runs all of it at once.
 */
export function attemptBatchSize(plan: Pick<RunPlan, 'attempts_per_activity' | 'max_in_flight'>, size: number, lanes = 1): number {
  const wanted = (plan.attempts_per_activity ?? 1) * lanes
  const window = activityWindow(plan, lanes)
  return Math.max(1, Math.min(wanted, lanes === 1 ? Math.floor(size / window) : Math.ceil(size / window)))
}

/** One batch activity's input from the attempt inputs of one run (they share every field but task and attempt). */
export function batchInputOf(inputs: AttemptInput[]): AttemptBatchInput {
  const first = inputs[0]
  if (first === undefined) throw new Error('an attempt batch needs at least one attempt')
  const { task_id: _task, attempt: _attempt, ...base } = first
  return { base, items: inputs.map((input) => ({ task_id: input.task_id, attempt: input.attempt })) }
}
