/**
 * Opt-in sequential stopping, a separate path of RunWorkflow taken only when the plan has a
 * `sequential` rule (runs without one keep the shard path, and their histories replay unchanged).
 * One SequentialTaskWorkflow child per task runs the task's attempts in rounds and stops once the
 * Wilson 95% interval of its passes is narrow enough. Deterministic: decisions depend only on the
 * outcomes the activities returned. At the end (behind SEQUENTIAL_RECONCILE_PATCH) the store is checked
 * against exactly the attempts the tasks scheduled, as on the shard path (workflows/reconcile.ts).
 */
import {
  ApplicationFailure,
  CancellationScope,
  continueAsNew,
  executeChild,
  isCancellation,
  patched,
  proxyActivities,
  workflowInfo,
} from '@temporalio/workflow'
import { finalRunStatus, type RunCompleteness } from '../core/completeness.js'
import type { RunPlan } from '../core/contracts/index.js'
import { wilsonWidth } from '../core/stats.js'
import type { AttemptSummary, RunActivities } from '../workers/activity-types.js'
import { attemptActivityOptions, bookkeepingActivityOptions } from './activity-options.js'
import { judgeScheduler } from './judging.js'
import { reconcileRun, SEQUENTIAL_RECONCILE_PATCH } from './reconcile.js'
import type { RunWorkflow, RunWorkflowInput, RunWorkflowResult } from './run.js'
import { attemptInputOf, isNonRetryable, mergeTally, type RunTally } from './tally.js'

/** RunWorkflow's input on the sequential path: what it carries across continue-as-new. */
export interface SequentialRunInput extends RunWorkflowInput {
  next_task?: number
  stopped_tasks?: string[]
  /**
   * tasks that stopped early → the attempts they scheduled (0 … n − 1); the others scheduled all
   * `plan.attempts`. Absent on an execution continued from one that ran before the completeness check
   * (its counts are unknown, so that run ends without the check).
   */
  scheduled_attempts?: Record<string, number>
}

export interface SequentialRunResult extends RunWorkflowResult {
  /** tasks whose attempts stopped early because their interval was narrow enough, in plan order */
  stopped_tasks: string[]
}

const TASKS_PER_EXECUTION = 400
/** attempts one SequentialTaskWorkflow execution schedules before it continues as new */
const ATTEMPTS_PER_EXECUTION = 1000
/** child workflows pending at once, well under Temporal's 2,000 */
const MAX_TASK_LANES = 50

/** The sequential path of RunWorkflow (called by it when `plan.sequential` is set). */
export async function SequentialRun(input: SequentialRunInput): Promise<SequentialRunResult> {
  const { plan } = input
  const rule = plan.sequential
  if (!rule) throw ApplicationFailure.nonRetryable('the sequential path needs a plan with a sequential rule', 'ConfigError')
  const book = proxyActivities<RunActivities>(bookkeepingActivityOptions)
  const tally: RunTally = input.tally ?? { outcomes: {}, not_executed: 0 }
  const stopped = [...(input.stopped_tasks ?? [])]
  const scheduled = scheduledSoFar(input)
  let startedAt = input.started_at
  if (startedAt === undefined) startedAt = await book.recordRunStatus({ plan, status: 'running' })

  let next = input.next_task ?? 0
  const stopAt = Math.min(plan.task_ids.length, next + TASKS_PER_EXECUTION)
  let completeness: RunCompleteness | undefined
  try {
    // enough tasks at once to keep about max_in_flight attempts running
    const lanes = Math.min(stopAt - next, MAX_TASK_LANES, Math.max(plan.max_shards_in_flight, Math.floor(plan.max_in_flight / rule.round_size)))
    const lane = async (): Promise<void> => {
      while (next < stopAt) {
        const index = next++
        const taskId = plan.task_ids[index]!
        const result = await executeChild(SequentialTaskWorkflow, {
          workflowId: `${workflowInfo().workflowId}/task-${index}`,
          args: [{ plan, task_id: taskId }],
        })
        mergeTally(tally, result.tally)
        if (!result.stopped_early) continue
        stopped.push(taskId)
        // a child that ran before `scheduled` existed: each attempt it scheduled either ran (n) or was not executed
        if (scheduled !== undefined) scheduled[taskId] = result.scheduled ?? result.n + result.tally.not_executed
      }
    }
    await Promise.all(Array.from({ length: lanes }, lane))
    // the workflow owns its run's status: the store is checked against the attempts the tasks scheduled
    if (stopAt >= plan.task_ids.length && scheduled !== undefined && patched(SEQUENTIAL_RECONCILE_PATCH)) {
      completeness = (await reconcileRun(plan, inPlanOrderRecord(plan, scheduled))).completeness
    }
  } catch (error) {
    const status = isCancellation(error) ? 'cancelled' : 'failed'
    await CancellationScope.nonCancellable(() => book.recordRunStatus({ plan, status, started_at: startedAt, stopped_tasks: inPlanOrder(plan, stopped) }))
    throw error
  }
  // outside the try: continue-as-new works by throwing
  if (stopAt < plan.task_ids.length) {
    const carried: SequentialRunInput = { plan, next_task: stopAt, tally, started_at: startedAt, stopped_tasks: stopped, ...(scheduled !== undefined ? { scheduled_attempts: scheduled } : {}) }
    return await continueAsNew<typeof RunWorkflow>(carried)
  }
  const stoppedTasks = inPlanOrder(plan, stopped)
  const status = completeness === undefined ? 'completed' : finalRunStatus(completeness)
  const checked = completeness !== undefined ? { completeness } : {}
  await book.recordRunStatus({ plan, status, started_at: startedAt, stopped_tasks: stoppedTasks, ...checked })
  // every scheduled attempt either returned an outcome or was not executed: the planned count
  const total = Object.values(tally.outcomes).reduce((a, b) => a + b, 0) + tally.not_executed
  return { run_id: plan.run_id, total, tally, status, stopped_tasks: stoppedTasks, ...checked }
}

/** The early stops carried in: none on a first execution; unknown when continued from an execution that ran before the check. */
function scheduledSoFar(input: SequentialRunInput): Record<string, number> | undefined {
  if (input.scheduled_attempts !== undefined) return { ...input.scheduled_attempts }
  return (input.stopped_tasks ?? []).length === 0 ? {} : undefined
}

export interface SequentialTaskInput {
  plan: RunPlan
  task_id: string
  /** carried across continue-as-new */
  next_attempt?: number
  k?: number
  n?: number
  tally?: RunTally
}

export interface SequentialTaskResult {
  task_id: string
  /** passed attempts, of n executed */
  k: number
  n: number
  tally: RunTally
  /** stopped before plan.attempts because the interval was narrow enough */
  stopped_early: boolean
  /** attempts scheduled (0 … scheduled − 1), each run or not executed; absent from children that ran before it existed */
  scheduled?: number
}

/**
 * Runs one task's attempts in rounds of `round_size` (at most max_in_flight at once); before each
 * round, stops once n ≥ min_attempts and the Wilson 95% interval is at most `width` wide.
 */
export async function SequentialTaskWorkflow(input: SequentialTaskInput): Promise<SequentialTaskResult> {
  const { plan, task_id: taskId } = input
  const rule = plan.sequential
  if (!rule) throw ApplicationFailure.nonRetryable('SequentialTaskWorkflow needs a plan with a sequential rule', 'ConfigError')
  const { runAttempt } = proxyActivities<RunActivities>(attemptActivityOptions(plan))
  const tally: RunTally = input.tally ?? { outcomes: {}, not_executed: 0 }
  const judging = judgeScheduler(plan, tally)
  let next = input.next_attempt ?? 0
  let k = input.k ?? 0
  let n = input.n ?? 0
  let scheduled = 0
  while (next < plan.attempts) {
    if (n >= rule.min_attempts && wilsonWidth(k, n) <= rule.width) {
      await judging.drain()
      return { task_id: taskId, k, n, tally, stopped_early: true, scheduled: next }
    }
    if (scheduled >= ATTEMPTS_PER_EXECUTION) {
      await judging.drain()
      return await continueAsNew<typeof SequentialTaskWorkflow>({ plan, task_id: taskId, next_attempt: next, k, n, tally })
    }
    const end = Math.min(plan.attempts, next + rule.round_size)
    let attempt = next
    const lane = async (): Promise<void> => {
      while (attempt < end) {
        const current = attempt++
        let summary: AttemptSummary
        const attemptInput = attemptInputOf(plan, taskId, current)
        try {
          summary = await runAttempt(attemptInput)
        } catch (error) {
          if (isCancellation(error)) throw error
          // configuration errors fail the run at once; exhausted infrastructure retries are counted
          if (error instanceof Error && isNonRetryable(error)) throw error
          tally.not_executed++
          continue
        }
        n++
        if (summary.outcome === 'pass') k++
        tally.outcomes[summary.outcome] = (tally.outcomes[summary.outcome] ?? 0) + 1
        judging.after(attemptInput, summary)
      }
    }
    await Promise.all(Array.from({ length: Math.min(plan.max_in_flight, end - next) }, lane))
    scheduled += end - next
    next = end
  }
  await judging.drain()
  return { task_id: taskId, k, n, tally, stopped_early: false, scheduled: next }
}


/** the counts by task in task order, not completion order: the check's input must not depend on timing */
function inPlanOrderRecord(plan: RunPlan, counts: Readonly<Record<string, number>>): Record<string, number> {
  return Object.fromEntries(plan.task_ids.filter((id) => counts[id] !== undefined).map((id) => [id, counts[id]!]))
}

/** task order, not completion order: the stored record must not depend on timing */
function inPlanOrder(plan: RunPlan, tasks: readonly string[]): string[] {
  const order = new Map(plan.task_ids.map((id, i) => [id, i]))
  return [...tasks].sort((a, b) => order.get(a)! - order.get(b)!)
}
