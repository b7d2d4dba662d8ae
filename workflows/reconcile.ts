/**
 * The end of a run (issue 12): its stored results are checked against its plan; attempts whose
 * results never reached the store are run again (the same attempt_uid and seed, so the store keeps
 * one row each), up to RECONCILE_ROUNDS times. What is still missing then makes the run `incomplete`.
 */
import { isCancellation, proxyActivities } from '@temporalio/workflow'
import { plannedTotal, type FinalRunStatus, type RunCompleteness } from '../core/completeness.js'
import type { RunPlan } from '../core/contracts/index.js'
import type { ReconcileActivities, RunActivities } from '../workers/activity-types.js'
import { attemptActivityOptions, reconcileActivityOptions } from './activity-options.js'
import { attemptInputOf, isNonRetryable } from './tally.js'

/** Runs started before the completeness check replay without it. */
export const RECONCILE_PATCH = 'forge-reconcile-v1'
/** Sequential runs got the check later, behind their own patch: their earlier histories replay without it. */
export const SEQUENTIAL_RECONCILE_PATCH = 'forge-reconcile-sequential-v1'
/** how many times missing attempts are re-run before the run is declared incomplete */
export const RECONCILE_ROUNDS = 3
/** RunWorkflow's check that ends the run publishes the final record (histories before it: a recordRunStatus activity after the check) */
export const FINAL_RECORD_WITH_CHECK_PATCH = 'forge-final-record-with-check-v1'

/** What reconcileRun found, and the final status the check recorded (absent: the workflow records it). */
export interface Reconciled {
  completeness: RunCompleteness
  recorded?: FinalRunStatus
}

/**
 * Checks the run's stored results against its plan, re-running what is missing; never throws but for
 * cancellation or a configuration error. A sequential run passes `attemptsByTask`: its tasks that
 * stopped early planned only the attempts the workflow scheduled, so only those are checked or re-run.
 * With `finalRecord` the check that ends the run also records its final status (started at
 * `finalRecord.started_at`).
 */
export async function reconcileRun(plan: RunPlan, attemptsByTask?: Record<string, number>, finalRecord?: { started_at?: number }): Promise<Reconciled> {
  const { checkCompleteness } = proxyActivities<ReconcileActivities>(reconcileActivityOptions)
  const { runAttempt } = proxyActivities<RunActivities>(attemptActivityOptions(plan))
  // the check's input stays as it was for runs without early stops
  const query = { run_id: plan.run_id, task_ids: plan.task_ids, attempts: plan.attempts, ...(attemptsByTask !== undefined ? { attempts_by_task: attemptsByTask } : {}) }
  const planned = plannedTotal(query)
  let rerun = 0
  for (let round = 1; ; round++) {
    let answer
    try {
      const recording = finalRecord === undefined ? {} : { final_record: { plan, ...finalRecord, rerun, last_round: round > RECONCILE_ROUNDS } }
      answer = await checkCompleteness({ ...query, ...recording })
    } catch (error) {
      if (isCancellation(error)) throw error
      return { completeness: { planned, stored: 0, missing_count: planned, missing: [], doubled: 0, harness_errors: 0, rerun, unchecked: rootMessage(error) } }
    }
    const { recorded, ...report } = answer
    if (report.missing_count === 0 || round > RECONCILE_ROUNDS) return { completeness: { ...report, rerun }, ...(recorded !== undefined ? { recorded } : {}) }
    const queue = [...report.missing]
    const lane = async (): Promise<void> => {
      for (let ref = queue.shift(); ref !== undefined; ref = queue.shift()) {
        try {
          await runAttempt({ ...attemptInputOf(plan, ref.task_id, ref.attempt), republish: round })
        } catch (error) {
          if (isCancellation(error)) throw error
          if (error instanceof Error && isNonRetryable(error)) throw error
          // still missing: the next check counts it
        }
      }
    }
    await Promise.all(Array.from({ length: Math.min(plan.max_in_flight, queue.length) }, lane))
    rerun += report.missing.length
  }
}

function rootMessage(error: unknown): string {
  let current = error
  while (current instanceof Error && current.cause instanceof Error) current = current.cause
  return current instanceof Error ? current.message : String(current)
}
