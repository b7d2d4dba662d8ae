/** What a run, shard or task workflow counts, and the rules its lanes share. */
import { RetryState } from '@temporalio/common'
import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow'
import type { RunPlan } from '../core/contracts/index.js'
import { attemptScopeOfPlan } from '../core/run-scope.js'
import type { AttemptInput } from '../workers/activity-types.js'
import { NON_RETRYABLE_ERROR_TYPES } from './activity-options.js'

export interface RunTally {
  /** attempts whose result was published, by outcome */
  outcomes: Record<string, number>
  /** attempts the infrastructure could not execute after every retry */
  not_executed: number
  /** runs with a judge: judge activities that completed, and those that failed after every retry */
  judged?: number
  judge_not_executed?: number
}

/** Temporal gave up at once: thrown non-retryable, or of a type the retry policy lists as such. */
export function isNonRetryable(error: Error): boolean {
  if (error instanceof ActivityFailure && error.retryState === RetryState.NON_RETRYABLE_FAILURE) return true
  const cause = (error as { cause?: unknown }).cause
  return cause instanceof ApplicationFailure && (cause.nonRetryable === true || NON_RETRYABLE_ERROR_TYPES.includes(cause.type ?? ''))
}

export function mergeTally(into: RunTally, from: RunTally): void {
  for (const [outcome, n] of Object.entries(from.outcomes)) into.outcomes[outcome] = (into.outcomes[outcome] ?? 0) + n
  into.not_executed += from.not_executed
  if (from.judged !== undefined) into.judged = (into.judged ?? 0) + from.judged
  if (from.judge_not_executed !== undefined) into.judge_not_executed = (into.judge_not_executed ?? 0) + from.judge_not_executed
}

/** The input of one attempt activity; only runs with a judge, their own price table or faults carry it, so other inputs stay as they were. */
export function attemptInputOf(plan: RunPlan, taskId: string, attempt: number): AttemptInput {
  // the run's scope as its grant covers it (its absent fields are undefined: the input's JSON has none)
  return { ...attemptScopeOfPlan(plan), task_id: taskId, attempt, ...(plan.grants !== undefined ? { grant: plan.grants.attempts } : {}) }
}
