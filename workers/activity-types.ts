/** The activity surface as types only: workflows import this file and nothing else of workers/. */
import type { RunPlan } from '../core/contracts.js'

export interface AttemptInput {
  run_id: string
  config_id: string
  suite: string
  suite_path: string
  adapter: string
  adapter_config: Record<string, unknown>
  seed: string
  task_id: string
  attempt: number
}

/** What an attempt activity returns to its workflow: small on purpose (the result travels via NATS). */
export interface AttemptSummary {
  attempt_uid: string
  outcome: string
  failure_bucket: string | null
}

export interface RunStatusInput {
  plan: RunPlan
  status: 'running' | 'completed' | 'failed' | 'cancelled'
  started_at?: number
  /** sequential runs: tasks that stopped early because their interval was narrow enough */
  stopped_tasks?: string[]
}

export interface RunActivities {
  runAttempt(input: AttemptInput): Promise<AttemptSummary>
  /** publishes the run's record; returns the run's start time (epoch ms) */
  recordRunStatus(input: RunStatusInput): Promise<number>
}
