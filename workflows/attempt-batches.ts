/** Several attempts per attempt activity (issue 15): pure helpers of ShardWorkflow's scheduling. */
import type { RunPlan } from '../core/contracts/index.js'
import type { AttemptBatchInput, AttemptInput } from '../workers/activity-types.js'

/**
 * Attempts per activity for a shard of `size` attempts: the plan's attempts_per_activity (absent: 1),
 * lowered so the shard still has at least max_in_flight activities to keep its window full.
 */
export function attemptBatchSize(plan: Pick<RunPlan, 'attempts_per_activity' | 'max_in_flight'>, size: number): number {
  const wanted = plan.attempts_per_activity ?? 1
  return Math.max(1, Math.min(wanted, Math.floor(size / plan.max_in_flight)))
}

/** One batch activity's input from the attempt inputs of one run (they share every field but task and attempt). */
export function batchInputOf(inputs: AttemptInput[]): AttemptBatchInput {
  const first = inputs[0]
  if (first === undefined) throw new Error('an attempt batch needs at least one attempt')
  const { task_id: _task, attempt: _attempt, ...base } = first
  return { base, items: inputs.map((input) => ({ task_id: input.task_id, attempt: input.attempt })) }
}
