/** The sweep's activity surface as types only: SweepWorkflow imports this file and nothing else of its activities. */
import type { RunPlan } from '../core/contracts/index.js'
import type { SweepCell, SweepRecord, SweepSpec } from '../core/contracts/sweep.js'
import type { CellParams } from '../core/sweep.js'

export interface PlanCellInput {
  sweep_id: string
  cell: CellParams
  spec: SweepSpec
  /** the sweep's grant (SweepWorkflowInput.grant, store/grants.ts) */
  grant?: string
}

export interface EvaluateCellInput {
  sweep_id: string
  run_id: string
  /** the suite's name (RunPlan.suite) */
  suite: string
  baseline: string
  /** attempts the run published: the evaluation waits until the store holds them all */
  published: number
  /** tag the run as the baseline's next version unless it regressed */
  promote: boolean
  /** the sweep's start (epoch ms): cells compare with the baseline as it was then, not with a version this sweep promoted */
  sweep_started_at: number
  /** the sweep and the cell `baseline` and `promote` follow from, and the sweep's grant: checked before anything is promoted */
  spec?: SweepSpec
  cell?: CellParams
  grant?: string
}

/** What the comparison with the baseline found for one cell (a slice of SweepCell). */
export type CellEvaluation = Pick<
  SweepCell,
  'verdict' | 'attempts' | 'pass_rate' | 'harness_errors' | 'baseline_version' | 'baseline_run_id' | 'baseline_pass_rate' | 'findings' | 'promoted_version'
>

export interface SweepActivities {
  /** loads the cell's suite on the worker and builds its RunPlan; bad settings fail non-retryable (ConfigError) */
  planSweepCell(input: PlanCellInput): Promise<RunPlan>
  /** waits until the run is stored, compares it with its baseline and (optionally) promotes it */
  evaluateSweepCell(input: EvaluateCellInput): Promise<CellEvaluation>
  /** publishes the sweep's state for the ingester (msg id sweep/<id>/<revision>); `grant`: the sweep's, over its spec */
  recordSweep(record: SweepRecord, grant?: string): Promise<void>
}
