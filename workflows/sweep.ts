/**
 * SweepWorkflow runs a matrix (suites × adapters × models × seeds) as one tracked sweep: each cell is
 * planned on a worker (its suite loaded there), run as a RunWorkflow child with its own run id, then
 * compared with its baseline; the sweep's state is published after every cell, so `forge sweep show`
 * answers while it runs and after. `forge sweep` starts it; so does a Temporal Schedule (`forge
 * schedule create`), which needs no cron service and survives restarts. A broken cell (a suite that
 * does not load, a failed run) is recorded as `failed` and the others go on.
 */
import { isCancellation, proxyActivities, workflowInfo, executeChild, type ActivityOptions } from '@temporalio/workflow'
import type { RunPlan } from '../core/contracts/index.js'
import type { SweepCell, SweepRecord, SweepSpec, SweepVerdict } from '../core/contracts/sweep.js'
import { baselineNameOf, promotesBaseline, sweepCells, sweepIdFrom, sweepVerdictOf, type CellParams } from '../core/sweep.js'
import type { SweepActivities } from '../workers/sweep-activity-types.js'
import { bookkeepingActivityOptions, NON_RETRYABLE_ERROR_TYPES } from './activity-options.js'
import { RunWorkflow, type RunWorkflowResult } from './run.js'

export interface SweepWorkflowInput {
  spec: SweepSpec
  /** `forge sweep` names it; a Schedule's sweep takes its id from the workflow id */
  sweep_id?: string
  /** the Schedule that started it */
  schedule_id?: string
  /** the Schedule's cron and time zone, kept beside the spec (forge schedule list shows them) */
  schedule?: { cron: string; timezone: string }
  /** who started or scheduled it: the grant of `spec` (store/grants.ts), checked by every sweep activity */
  grant?: string
}

export interface SweepWorkflowResult {
  sweep_id: string
  verdict: SweepVerdict
  cells: number
  regressed: number
  failed: number
}

const planOptions: ActivityOptions = {
  startToCloseTimeout: '2m',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 5, nonRetryableErrorTypes: NON_RETRYABLE_ERROR_TYPES },
}

// waits for the ingester: retried with backoff while the store has not caught up with the run
const evaluateOptions: ActivityOptions = {
  startToCloseTimeout: '5m',
  heartbeatTimeout: '1m',
  retry: { initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '1m', maximumAttempts: 30, nonRetryableErrorTypes: NON_RETRYABLE_ERROR_TYPES },
}

export async function SweepWorkflow(input: SweepWorkflowInput): Promise<SweepWorkflowResult> {
  const { spec } = input
  const sweepId = input.sweep_id ?? sweepIdFrom(workflowInfo().workflowId)
  const { planSweepCell } = proxyActivities<SweepActivities>(planOptions)
  const { evaluateSweepCell } = proxyActivities<SweepActivities>(evaluateOptions)
  const { recordSweep } = proxyActivities<SweepActivities>(bookkeepingActivityOptions)

  const params = sweepCells(spec, sweepId)
  const granted = input.grant !== undefined ? { grant: input.grant } : {}
  const cells: SweepCell[] = params.map((p) => ({
    cell: p.cell,
    run_id: p.run_id,
    suite: p.suite_ref,
    adapter: p.adapter,
    model: p.model,
    seed: p.seed,
    baseline: '',
    status: 'pending',
    verdict: 'pending',
    config_id: '',
    attempts: 0,
    not_executed: 0,
    pass_rate: null,
    harness_errors: 0,
    baseline_version: null,
    baseline_run_id: '',
    baseline_pass_rate: null,
    findings: null,
    promoted_version: null,
    error: '',
  }))
  // Date.now() in a workflow is Temporal's: the time of the current workflow task, the same on replay
  const startedAt = Date.now()
  let revision = 0
  const record = (status: SweepRecord['status'], finishedAt: number | null = null): Promise<void> =>
    recordSweep({
      sweep_id: sweepId,
      name: spec.name,
      schedule_id: input.schedule_id ?? '',
      spec,
      status,
      verdict: sweepVerdictOf(cells),
      started_at: startedAt,
      finished_at: finishedAt,
      revision: revision++,
      cells: cells.map((c) => ({ ...c })),
    }, input.grant)

  await record('running')

  const runCell = async (p: CellParams): Promise<void> => {
    const cell = cells[p.cell]!
    cell.status = 'running'
    const fail = (stage: string, error: unknown) => {
      cell.status = 'failed'
      cell.verdict = 'failed'
      cell.error = `${stage}: ${rootMessage(error)}`
    }
    let plan: RunPlan
    try {
      plan = await planSweepCell({ sweep_id: sweepId, cell: p, spec, ...granted })
    } catch (error) {
      if (isCancellation(error)) throw error
      fail('planning the cell failed', error)
      return record('running')
    }
    cell.suite = plan.suite
    cell.config_id = plan.config_id
    cell.baseline = baselineNameOf(spec.baseline, { name: spec.name, suite: plan.suite, adapter: p.adapter, model: p.model, seed: p.seed })
    let result: RunWorkflowResult
    try {
      result = await executeChild(RunWorkflow, { workflowId: `forge-run-${plan.run_id}`, args: [{ plan }] })
    } catch (error) {
      if (isCancellation(error)) throw error
      fail('the run failed', error)
      return record('running')
    }
    cell.not_executed = result.tally.not_executed
    const published = Object.values(result.tally.outcomes).reduce((a, b) => a + b, 0)
    try {
      const evaluation = await evaluateSweepCell({
        sweep_id: sweepId,
        run_id: plan.run_id,
        suite: plan.suite,
        baseline: cell.baseline,
        published,
        promote: promotesBaseline(spec, p),
        sweep_started_at: startedAt,
        spec,
        cell: p,
        ...granted,
      })
      Object.assign(cell, evaluation)
      cell.status = 'completed'
    } catch (error) {
      if (isCancellation(error)) throw error
      fail('comparing with the baseline failed', error)
    }
    return record('running')
  }

  let next = 0
  const lane = async (): Promise<void> => {
    while (next < params.length) await runCell(params[next++]!)
  }
  await Promise.all(Array.from({ length: Math.min(spec.cells_in_flight, params.length) }, lane))
  await record('completed', Date.now())
  return {
    sweep_id: sweepId,
    verdict: sweepVerdictOf(cells),
    cells: cells.length,
    regressed: cells.filter((c) => c.verdict === 'regressed').length,
    failed: cells.filter((c) => c.verdict === 'failed').length,
  }
}

function rootMessage(error: unknown): string {
  let current = error
  while (current instanceof Error && current.cause instanceof Error) current = current.cause
  return current instanceof Error ? current.message : String(current)
}
