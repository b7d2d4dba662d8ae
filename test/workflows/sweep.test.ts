/**
 * SweepWorkflow against the real Temporal dev server with stub activities: every cell planned, run as
 * a RunWorkflow child and evaluated; a cell whose planning or run fails is recorded `failed` and the
 * others go on; one cell per baseline may promote; every recorded revision is newer than the last;
 * a Schedule-started sweep takes its id from the workflow id. Plus a replay of a committed sweep history,
 * which fails when a change to SweepWorkflow would break sweeps already in flight.
 */
import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { ApplicationFailure } from '@temporalio/common'
import { TestWorkflowEnvironment } from '@temporalio/testing'
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker, type WorkflowBundle } from '@temporalio/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RunPlan } from '../../core/contracts/index.js'
import { attemptUidOf } from '../../core/identity.js'
import { SweepSpec, type SweepRecord } from '../../core/contracts/sweep.js'
import { findBinary } from '../../stack/binaries.js'
import { runEachAttempt } from './batch-stub.js'
import { historiesDir, readHistory, writeHistoryOnce } from './histories.js'
import type { AttemptInput, AttemptSummary, CompletenessInput, ReconcileActivities, RunActivities, RunStatusInput } from '../../workers/activity-types.js'
import type { CellEvaluation, EvaluateCellInput, PlanCellInput, SweepActivities } from '../../workers/sweep-activity-types.js'
import type { SweepWorkflow } from '../../workflows/sweep.js'

const workflowsPath = fileURLToPath(new URL('../../workflows/index.ts', import.meta.url))
const brokenWorkflowsPath = fileURLToPath(new URL('./nondeterministic-sweep.ts', import.meta.url))
const quiet = { info() {}, warn: console.warn, error: console.error, debug() {}, trace() {}, log() {} }
let env: TestWorkflowEnvironment
let bundle: WorkflowBundle

beforeAll(async () => {
  Runtime.install({ logger: new DefaultLogger('ERROR') })
  env = await TestWorkflowEnvironment.createLocal({ server: { executable: { type: 'existing-path', path: findBinary('temporal') } } })
  bundle = await bundleWorkflowCode({ workflowsPath, logger: quiet })
})
afterAll(async () => {
  await env?.teardown()
})

const runActivities: RunActivities & ReconcileActivities = {
  async runAttempt(input: AttemptInput): Promise<AttemptSummary> {
    // the seed-b cells' runs hit a configuration error: the run fails, and so does its cell
    if (input.seed === 'b' && input.task_id === 't2' && input.attempt === 0) throw ApplicationFailure.nonRetryable('adapter config invalid', 'ConfigError')
    return { attempt_uid: attemptUidOf(input), outcome: input.attempt % 2 === 0 ? 'pass' : 'fail', failure_bucket: null }
  },
  runAttempts: (input) => runEachAttempt(runActivities, input),
  async recordRunStatus(input: RunStatusInput): Promise<number> {
    return input.started_at ?? 1
  },
  // every attempt reaches the store here
  async checkCompleteness(input: CompletenessInput) {
    const planned = input.task_ids.length * input.attempts
    return { planned, stored: planned, missing_count: 0, missing: [], doubled: 0, harness_errors: 0 }
  },
}

function sweepActivities() {
  const records: SweepRecord[] = []
  const evaluations: EvaluateCellInput[] = []
  const activities: SweepActivities = {
    async planSweepCell({ cell, spec }: PlanCellInput): Promise<RunPlan> {
      if (cell.suite_ref === 'broken') throw ApplicationFailure.nonRetryable(`cell ${cell.cell}: suite directory not found`, 'ConfigError')
      return RunPlan.parse({
        run_id: cell.run_id,
        config_id: `${cell.adapter}-cfg`,
        suite_path: `/suites/${cell.suite_ref}`,
        suite: `${cell.suite_ref}-suite`,
        task_ids: ['t1', 't2'],
        attempts: spec.attempts,
        adapter: cell.adapter,
        adapter_config: cell.adapter_config,
        seed: cell.seed,
        heartbeat_timeout_ms: 10_000,
      })
    },
    async evaluateSweepCell(input: EvaluateCellInput): Promise<CellEvaluation> {
      evaluations.push(input)
      const verdict = input.suite === 'toy-suite' ? 'pass' : 'regressed'
      return {
        verdict,
        attempts: input.published,
        pass_rate: 0.5,
        harness_errors: 0,
        baseline_version: 3,
        baseline_run_id: 'r-base',
        baseline_pass_rate: 0.6,
        findings: { success: input.suite === 'toy-suite' ? 0 : 1, tool_usage: 0, cost: 0, latency: 0, tool_calls: 0 },
        // as the real activity: a regressed run never becomes the baseline
        promoted_version: input.promote && verdict !== 'regressed' ? 4 : null,
      }
    },
    async recordSweep(record: SweepRecord): Promise<void> {
      records.push(record)
    },
  }
  return { activities, records, evaluations }
}

async function runSweep(spec: SweepSpec, opts: { workflowId?: string; sweepId?: string } = {}) {
  const taskQueue = `sweep-${randomUUID()}`
  const sweep = sweepActivities()
  const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle: bundle, activities: { ...runActivities, ...sweep.activities } })
  const workflowId = opts.workflowId ?? `forge-sweep-${randomUUID()}`
  const result = await worker.runUntil(
    env.client.workflow.execute<typeof SweepWorkflow>('SweepWorkflow', {
      taskQueue,
      workflowId,
      args: [{ spec, ...(opts.sweepId ? { sweep_id: opts.sweepId } : {}) }],
    }),
  )
  return { result, ...sweep, handle: env.client.workflow.getHandle(workflowId) }
}

describe('SweepWorkflow', () => {
  it('plans, runs and evaluates every cell; cells whose planning or run fails are recorded failed and the rest go on', async () => {
    const spec = SweepSpec.parse({ name: 'nightly', suites: ['toy', 'broken', 'smoke'], adapters: ['mock'], seeds: ['a', 'b'], attempts: 2, promote_baseline: 'if_no_regression', cells_in_flight: 3 })
    const { result, records, evaluations } = await runSweep(spec, { sweepId: 's1' })
    expect(result).toEqual({ sweep_id: 's1', verdict: 'regressed', cells: 6, regressed: 1, failed: 4 })

    const last = records.at(-1)!
    expect(last.status).toBe('completed')
    expect(last.finished_at).not.toBeNull()
    expect(records.map((r) => r.revision)).toEqual(Array.from({ length: records.length }, (_, i) => i))
    expect(records[0]!.status).toBe('running')
    expect(records[0]!.cells.every((c) => c.status === 'pending' && c.verdict === 'pending')).toBe(true)
    // one record at the start, one per cell, one at the end
    expect(records).toHaveLength(8)
    expect(last.cells.map((c) => [c.cell, c.suite, c.seed, c.run_id, c.status, c.verdict, c.baseline, c.attempts, c.not_executed, c.promoted_version])).toEqual([
      [0, 'toy-suite', 'a', 's1-c0', 'completed', 'pass', 'nightly.toy-suite.mock.default', 4, 0, 4],
      [1, 'toy-suite', 'b', 's1-c1', 'failed', 'failed', 'nightly.toy-suite.mock.default', 0, 0, null],
      [2, 'broken', 'a', 's1-c2', 'failed', 'failed', '', 0, 0, null],
      [3, 'broken', 'b', 's1-c3', 'failed', 'failed', '', 0, 0, null],
      [4, 'smoke-suite', 'a', 's1-c4', 'completed', 'regressed', 'nightly.smoke-suite.mock.default', 4, 0, null],
      [5, 'smoke-suite', 'b', 's1-c5', 'failed', 'failed', 'nightly.smoke-suite.mock.default', 0, 0, null],
    ])
    expect(last.cells[2]!.error).toBe('planning the cell failed: cell 2: suite directory not found')
    expect(last.cells[1]!.error).toBe('the run failed: adapter config invalid')
    // every evaluation compares with the baseline as it was when the sweep started
    expect(new Set(evaluations.map((e) => e.sweep_started_at)).size).toBe(1)
    expect(evaluations.map((e) => [e.run_id, e.suite, e.published, e.promote]).sort()).toEqual([
      ['s1-c0', 'toy-suite', 4, true],
      ['s1-c4', 'smoke-suite', 4, true],
    ])
  })

  it('takes its id from a Schedule-started workflow id', async () => {
    const spec = SweepSpec.parse({ name: 'nightly', suites: ['toy'], adapters: ['mock'], attempts: 1 })
    const { result, records } = await runSweep(spec, { workflowId: 'forge-sweep-nightly-2026-12-01T02:00:00Z' })
    expect(result).toEqual({ sweep_id: 'nightly-2026-12-01T020000Z', verdict: 'pass', cells: 1, regressed: 0, failed: 0 })
    expect(records.at(-1)!.cells[0]!.run_id).toBe('nightly-2026-12-01T020000Z-c0')
  })
})

describe('replay of a committed sweep history', () => {
  /** fixed ids: the cells' run ids and child workflow ids in the history derive from them */
  const workflowId = 'forge-replay-sweep'
  const file = new URL(`${workflowId}.json`, historiesDir)

  it('replays a committed 3-cell sweep (two cells in flight; one planning failure, one regression) with the current workflow code', async () => {
    // written once, from this sweep, then only read: a later change to SweepWorkflow replays the old history
    const spec = SweepSpec.parse({ name: 'replay', suites: ['toy', 'broken', 'smoke'], adapters: ['mock'], seeds: ['a'], attempts: 2, promote_baseline: 'if_no_regression', cells_in_flight: 2 })
    const { result, handle } = await runSweep(spec, { workflowId, sweepId: 'replay-s1' })
    expect(result).toEqual({ sweep_id: 'replay-s1', verdict: 'regressed', cells: 3, regressed: 1, failed: 1 })
    writeHistoryOnce(file, await handle.fetchHistory())

    const committed = readHistory(file)
    const events = JSON.stringify(committed.events)
    // what the history holds: the cells' child runs (RunWorkflow, run ids from the sweep id), every activity of the sweep
    for (const child of ['forge-run-replay-s1-c0', 'forge-run-replay-s1-c2']) expect(events).toContain(child)
    for (const activity of ['recordSweep', 'planSweepCell', 'evaluateSweepCell']) expect(events).toContain(activity)
    expect(committed.events?.length).toBeGreaterThan(30)
    await Worker.runReplayHistory({ workflowBundle: bundle }, committed, workflowId)
  })

  it('the replay check fails for sweep code that would break that history', async () => {
    const broken = await bundleWorkflowCode({ workflowsPath: brokenWorkflowsPath, logger: quiet })
    await expect(Worker.runReplayHistory({ workflowBundle: broken }, readHistory(file), workflowId)).rejects.toThrow(/nondetermin/i)
  })
})
