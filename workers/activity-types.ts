/** The activity surface as types only: workflows import this file and nothing else of workers/. */
import type { CompletenessReport, FinalRunStatus, RunCompleteness } from '../core/completeness.js'
import type { JudgeSettings, RunPlan } from '../core/contracts/index.js'
import type { AttemptScope } from '../core/run-scope.js'

/** One attempt activity's input: its run's scope (core/run-scope.ts, what the run's attempt grant covers) and the attempt. */
export interface AttemptInput extends AttemptScope {
  task_id: string
  attempt: number
  /**
   * set when the completeness check re-runs an attempt whose result never reached the store: the
   * round number, so its messages get fresh msg ids (the store still keeps one row per attempt_uid)
   */
  republish?: number
  /** the run's attempt grant (RunPlan.grants.attempts, store/grants.ts): set when its planner held the results key */
  grant?: string
}

/** What an attempt activity returns to its workflow: small on purpose (the result travels via NATS). */
export interface AttemptSummary {
  attempt_uid: string
  outcome: string
  failure_bucket: string | null
  /** the judge worker's part for this attempt (only for runs with a judge); absent: nothing to judge */
  judge?: { golden_divergence: boolean; metrics: boolean }
}

export interface RunStatusInput {
  plan: RunPlan
  status: 'running' | 'completed' | 'degraded' | 'incomplete' | 'failed' | 'cancelled'
  started_at?: number
  /** sequential runs: tasks that stopped early because their interval was narrow enough */
  stopped_tasks?: string[]
  /** what the completeness check found at the end (issue 12) */
  completeness?: RunCompleteness
}

/** What the completeness check compares: the run's plan, by task and attempt count. */
export interface CompletenessInput {
  run_id: string
  task_ids: string[]
  attempts: number
  /** sequential runs: tasks that stopped early → the attempts their workflow scheduled (0 … n − 1); absent: every task planned `attempts` */
  attempts_by_task?: Record<string, number>
  /**
   * RunWorkflow's checks (FINAL_RECORD_WITH_CHECK_PATCH): when this check ends the run — nothing is
   * missing, or `last_round` — it publishes the run's final record itself, its status that of the
   * report with `rerun` re-run attempts (core/completeness.ts finalRunStatus), and says so
   */
  final_record?: { plan: RunPlan; started_at?: number; rerun: number; last_round: boolean }
}

/** The completeness check's answer: the store against the plan, and the final status it recorded, if it did. */
export interface CompletenessAnswer extends CompletenessReport {
  recorded?: FinalRunStatus
}

/** Activities of the completeness check: once the ingester caught up, the store against the plan. */
export interface ReconcileActivities {
  checkCompleteness(input: CompletenessInput): Promise<CompletenessAnswer>
}

/** Several attempts of one run in one activity (RunPlan.attempts_per_activity): the shared fields once, then each attempt's task and number. */
export interface AttemptBatchInput {
  base: Omit<AttemptInput, 'task_id' | 'attempt'>
  items: { task_id: string; attempt: number }[]
  /** how many of the items run at once (RunPlan.attempt_lanes); absent: one after another */
  lanes?: number
}

export interface RunActivities {
  runAttempt(input: AttemptInput): Promise<AttemptSummary>
  /**
   * Runs the batch's attempts, `lanes` at a time (one after another when absent), each published
   * under its own attempt_uid exactly as runAttempt does; heartbeats the summaries done so far (by
   * item, null for one not done), and a retry runs only the others. Returns one summary per item, in order.
   */
  runAttempts(input: AttemptBatchInput): Promise<AttemptSummary[]>
  /** publishes the run's record; returns the run's start time (epoch ms) */
  recordRunStatus(input: RunStatusInput): Promise<number>
}

/** The judge activity's input: ids only; the trace is read from the results stream by attempt_uid. */
export interface JudgeInput {
  attempt_uid: string
  run_id: string
  config_id: string
  suite: string
  suite_path: string
  task_id: string
  attempt: number
  judge: JudgeSettings
  /** run tier 2 (golden divergence) */
  golden_divergence: boolean
  /** score the judge metrics */
  metrics: boolean
  /** the run's judge grant (RunPlan.grants.judge, store/grants.ts) */
  grant?: string
}

/** What the judge activity returns to its workflow (small: the results travel through NATS). */
export interface JudgeSummary {
  attempt_uid: string
  tier2: string
  needs_human_review: boolean
  /** judge-metric rows published */
  metrics: number
}

/** Activities of the judge task queue (rate-limited apart from agents). */
export interface JudgeActivities {
  judgeAttempt(input: JudgeInput): Promise<JudgeSummary>
}
