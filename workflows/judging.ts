/**
 * Workflow-side scheduling of the judge activity (tier 2, judge metrics) on the run's judge task
 * queue, after an attempt activity said its attempt needs judging. Taken only when the plan has a
 * `judge`: runs without one schedule exactly what they did before, so their histories replay.
 * Judge activities do not hold up the attempt lanes; a shard waits for them before it returns.
 */
import { isCancellation, proxyActivities, type ActivityOptions } from '@temporalio/workflow'
import type { JudgeSettings, RunPlan } from '../core/contracts/index.js'
import { attemptKeyFor } from '../core/identity.js'
import type { AttemptInput, AttemptSummary, JudgeActivities } from '../workers/activity-types.js'
import { NON_RETRYABLE_ERROR_TYPES } from './activity-options.js'
import type { RunTally } from './run.js'

/** Judge activities: long enough for two questions with one retry each; infrastructure errors retried. */
export function judgeActivityOptions(judge: JudgeSettings): ActivityOptions {
  return {
    taskQueue: judge.task_queue,
    startToCloseTimeout: judge.timeout_ms * 4 + 60_000,
    // a judge worker that never comes (none polls the queue) must not hang the run forever
    scheduleToCloseTimeout: Math.max(judge.timeout_ms * 20, 60 * 60_000),
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 5, nonRetryableErrorTypes: NON_RETRYABLE_ERROR_TYPES },
  }
}

export interface JudgeScheduler {
  /** schedules the judge activity for an attempt when the plan has a judge and the attempt asked for one */
  after(input: AttemptInput, summary: AttemptSummary): void
  /** waits for every judge activity scheduled so far */
  drain(): Promise<void>
}

const none: JudgeScheduler = { after: () => undefined, drain: async () => undefined }

export function judgeScheduler(plan: RunPlan, tally: RunTally): JudgeScheduler {
  const judge = plan.judge
  if (judge === undefined) return none
  const { judgeAttempt } = proxyActivities<JudgeActivities>(judgeActivityOptions(judge))
  const pending: Promise<void>[] = []
  return {
    after(input, summary) {
      if (summary.judge === undefined) return
      pending.push(
        judgeAttempt({
          ...attemptKeyFor(input),
          suite_path: input.suite_path,
          judge,
          golden_divergence: summary.judge.golden_divergence,
          metrics: summary.judge.metrics,
          ...(plan.grants?.judge !== undefined ? { grant: plan.grants.judge } : {}),
        }).then(
          () => {
            tally.judged = (tally.judged ?? 0) + 1
          },
          (error: unknown) => {
            if (isCancellation(error)) throw error
            // tier 2 stays `pending` for the attempt, which keeps it in the review queue
            tally.judge_not_executed = (tally.judge_not_executed ?? 0) + 1
          },
        ),
      )
    },
    async drain() {
      await Promise.all(pending)
    },
  }
}
