/**
 * The pure part of sweeps: the matrix's cells, their run ids and baseline names, and the verdicts.
 * SweepWorkflow calls these, so they import types only and stay deterministic.
 */
import type { CellVerdict, SweepAdapter, SweepCell, SweepSpec, SweepVerdict } from './contracts/sweep.js'

export interface CellParams {
  cell: number
  /** the suite reference as the spec gives it (name, absolute path or package) */
  suite_ref: string
  adapter: string
  adapter_config: Record<string, unknown>
  /** '' when the adapter uses its own default */
  model: string
  seed: string
  run_id: string
}

/** `forge-sweep-<sweep id>`: the workflow id of a sweep started by `forge sweep`. */
export const SWEEP_WORKFLOW_PREFIX = 'forge-sweep-'

/**
 * The sweep id of a workflow: a Schedule names its workflows `<workflow id>-<RFC 3339 time>`, so
 * the id keeps only the characters a run id may hold (letters, digits, _ and -).
 */
export function sweepIdFrom(workflowId: string): string {
  const id = (workflowId.startsWith(SWEEP_WORKFLOW_PREFIX) ? workflowId.slice(SWEEP_WORKFLOW_PREFIX.length) : workflowId).replace(/[^A-Za-z0-9_-]/g, '')
  return id.slice(0, 90) || 'sweep'
}

/** Every cell of the matrix, in a stable order: suites, then adapters, then models, then seeds. */
export function sweepCells(spec: SweepSpec, sweepId: string): CellParams[] {
  const cells: CellParams[] = []
  const models = spec.models.length > 0 ? spec.models : ['']
  for (const suite of spec.suites) {
    for (const entry of spec.adapters) {
      const adapter = adapterOf(entry)
      for (const model of models) {
        for (const seed of spec.seeds) {
          const cell = cells.length
          cells.push({
            cell,
            suite_ref: suite,
            adapter: adapter.name,
            adapter_config: { ...spec.adapter_config, ...adapter.config, ...(model !== '' ? { model } : {}) },
            model,
            seed,
            run_id: `${sweepId}-c${cell}`,
          })
        }
      }
    }
  }
  return cells
}

function adapterOf(entry: SweepAdapter): { name: string; config: Record<string, unknown> } {
  return typeof entry === 'string' ? { name: entry, config: {} } : entry
}

/** A baseline name from the spec's template; what a name cannot hold becomes `-`. */
export function baselineNameOf(template: string, values: { name: string; suite: string; adapter: string; model: string; seed: string }): string {
  const filled = template.replace(/\{(name|suite|adapter|model|seed)\}/g, (_, key: keyof typeof values) => values[key] || 'default')
  const clean = filled.replace(/[^A-Za-z0-9_.-]/g, '-').replace(/^[^A-Za-z0-9]+/, '')
  return clean.slice(0, 200) || 'baseline'
}

/**
 * Whether a cell's run may become its baseline's next version: one cell per baseline — the first
 * seed's, unless the template names {seed} (then every cell has a baseline of its own).
 */
export function promotesBaseline(spec: Pick<SweepSpec, 'promote_baseline' | 'baseline' | 'seeds'>, cell: Pick<CellParams, 'seed'>): boolean {
  if (spec.promote_baseline !== 'if_no_regression') return false
  return spec.baseline.includes('{seed}') || cell.seed === spec.seeds[0]
}

/** A finished cell's verdict: its run failed, it had no baseline, the comparison flagged something, or it passed. */
export function cellVerdictOf(input: { runFailed: boolean; baselineFound: boolean; regression: boolean }): CellVerdict {
  if (input.runFailed) return 'failed'
  if (!input.baselineFound) return 'no_baseline'
  return input.regression ? 'regressed' : 'pass'
}

/**
 * The sweep's verdict, the morning answer: `regressed` if any cell regressed, else `failed` if a
 * cell's run failed, else `pass` if any cell was compared, else `no_baseline`; `pending` until every
 * cell has one.
 */
export function sweepVerdictOf(cells: readonly Pick<SweepCell, 'verdict'>[]): SweepVerdict {
  if (cells.length === 0) return 'no_baseline'
  if (cells.some((c) => c.verdict === 'pending')) return 'pending'
  if (cells.some((c) => c.verdict === 'regressed')) return 'regressed'
  if (cells.some((c) => c.verdict === 'failed')) return 'failed'
  if (cells.some((c) => c.verdict === 'pass')) return 'pass'
  return 'no_baseline'
}
