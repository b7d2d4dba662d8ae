/** Pure row↔domain converters for the sweep tables (`sweeps`, one row per sweep; `sweep_cells`, one per cell). */
import { SweepCell, SweepRecord, SweepSpec } from '../core/contracts/sweep.js'
import { fromChDateTime, toChDateTime } from './converters.js'

export interface SweepRow {
  sweep_id: string
  name: string
  schedule_id: string
  spec: string
  status: string
  verdict: string
  cell_count: number
  cells_done: number
  regressed: number
  failed: number
  started_at: string
  finished_at: string | null
  revision: number
  ingested_at: string
}

export interface SweepCellRow {
  sweep_id: string
  cell: number
  run_id: string
  suite: string
  adapter: string
  model: string
  seed: string
  baseline: string
  status: string
  verdict: string
  config_id: string
  attempts: number
  not_executed: number
  pass_rate: number | null
  harness_errors: number
  baseline_version: number | null
  baseline_run_id: string
  baseline_pass_rate: number | null
  findings: string
  promoted_version: number | null
  error: string
  revision: number
  ingested_at: string
}

export function sweepToRows(record: SweepRecord, ingestedAt: number): { sweep: SweepRow; cells: SweepCellRow[] } {
  const ingested = toChDateTime(ingestedAt)
  return {
    sweep: {
      sweep_id: record.sweep_id,
      name: record.name,
      schedule_id: record.schedule_id,
      spec: JSON.stringify(record.spec),
      status: record.status,
      verdict: record.verdict,
      cell_count: record.cells.length,
      cells_done: record.cells.filter((c) => c.status === 'completed' || c.status === 'failed').length,
      regressed: record.cells.filter((c) => c.verdict === 'regressed').length,
      failed: record.cells.filter((c) => c.verdict === 'failed').length,
      started_at: toChDateTime(record.started_at),
      finished_at: record.finished_at === null ? null : toChDateTime(record.finished_at),
      revision: record.revision,
      ingested_at: ingested,
    },
    cells: record.cells.map((c) => ({
      sweep_id: record.sweep_id,
      cell: c.cell,
      run_id: c.run_id,
      suite: c.suite,
      adapter: c.adapter,
      model: c.model,
      seed: c.seed,
      baseline: c.baseline,
      status: c.status,
      verdict: c.verdict,
      config_id: c.config_id,
      attempts: c.attempts,
      not_executed: c.not_executed,
      pass_rate: c.pass_rate,
      harness_errors: c.harness_errors,
      baseline_version: c.baseline_version,
      baseline_run_id: c.baseline_run_id,
      baseline_pass_rate: c.baseline_pass_rate,
      findings: c.findings === null ? '' : JSON.stringify(c.findings),
      promoted_version: c.promoted_version,
      error: c.error,
      revision: record.revision,
      ingested_at: ingested,
    })),
  }
}

const num = (v: unknown): number => Number(v)
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v))

/** A stored sweep with its cells; throws when a row does not hold a valid sweep (a store written by someone else). */
export function rowsToSweep(sweep: SweepRow, cells: SweepCellRow[]): SweepRecord {
  return SweepRecord.parse({
    sweep_id: sweep.sweep_id,
    name: sweep.name,
    schedule_id: sweep.schedule_id,
    spec: SweepSpec.parse(JSON.parse(sweep.spec)),
    status: sweep.status,
    verdict: sweep.verdict,
    started_at: fromChDateTime(sweep.started_at),
    finished_at: sweep.finished_at === null ? null : fromChDateTime(sweep.finished_at),
    revision: num(sweep.revision),
    cells: cells
      .map((c) =>
        SweepCell.parse({
          cell: num(c.cell),
          run_id: c.run_id,
          suite: c.suite,
          adapter: c.adapter,
          model: c.model,
          seed: c.seed,
          baseline: c.baseline,
          status: c.status,
          verdict: c.verdict,
          config_id: c.config_id,
          attempts: num(c.attempts),
          not_executed: num(c.not_executed),
          pass_rate: numOrNull(c.pass_rate),
          harness_errors: num(c.harness_errors),
          baseline_version: numOrNull(c.baseline_version),
          baseline_run_id: c.baseline_run_id,
          baseline_pass_rate: numOrNull(c.baseline_pass_rate),
          findings: c.findings === '' ? null : JSON.parse(c.findings),
          promoted_version: numOrNull(c.promoted_version),
          error: c.error,
        }),
      )
      .sort((a, b) => a.cell - b.cell),
  })
}
