/** The shape of a metric in the registry (core/metrics). */
import type { AgentTrace, Grade, InvariantResult, Task } from '../contracts/index.js'

export type MetricCategory = 'tool_usage' | 'budget' | 'output_format' | 'security' | 'state' | 'quality'

interface MetricBase {
  /** stable snake_case name: the `metric` column of stored rows */
  name: string
  description: string
  /** bumped whenever what the metric measures changes; stored on every row */
  version: number
  category: MetricCategory
}

/** What a deterministic metric reads: the captured trace and the tier-0/1 results, never the self-report. */
export interface MetricInput {
  trace: AgentTrace
  task: Task
  grades: readonly Grade[]
  invariants: readonly InvariantResult[]
  /** values the worker holds as secret (its secret-named environment, secrets passed to the agent): secret_leak looks for them */
  secrets?: readonly string[]
}

/** A deterministic metric's reading: `value` null means there was nothing to measure (not applicable). */
export interface MetricReading {
  value: number | null
  /** null: informational (or not applicable) */
  passed: boolean | null
  detail: string
}

/** A pure function of the trace; cheap; runs on every attempt, before any judge. */
export interface DeterministicMetric extends MetricBase {
  kind: 'deterministic'
  /** a failed gating metric keeps the attempt from the judge metrics (when the run's gate is `deterministic`) */
  gate: boolean
  compute(input: MetricInput): MetricReading
}

/** Scored 1–5 by the judge model against `rubric`; normalized to 0–1, passed from `pass_at`. */
export interface JudgeMetric extends MetricBase {
  kind: 'judge'
  rubric: string
  /** the lowest 1–5 score that counts as passed */
  pass_at: number
}

export type MetricDefinition = DeterministicMetric | JudgeMetric
