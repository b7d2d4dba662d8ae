/**
 * Opt-in sequential stopping on the real Temporal dev server binary with stub activities: a task's
 * attempts run in rounds and stop once its Wilson interval is narrow enough; the run records which
 * tasks stopped early; the history replays deterministically. At the end the store is checked against
 * exactly the attempts the tasks scheduled, and only those are re-run (issue 12 for sequential runs).
 */
import { randomUUID } from 'node:crypto'
import { Context } from '@temporalio/activity'
import { TestWorkflowEnvironment } from '@temporalio/testing'
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker, type WorkflowBundle } from '@temporalio/worker'
import { ApplicationFailure } from '@temporalio/common'
import { WorkflowFailedError } from '@temporalio/client'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RunPlan } from '../../core/contracts/index.js'
import { attemptUidOf } from '../../core/identity.js'
import { wilsonWidth } from '../../core/stats.js'
import { findBinary } from '../../stack/binaries.js'
import { runEachAttempt } from './batch-stub.js'
import { historiesDir, readHistory, writeHistoryOnce } from './histories.js'
import { missingAttempts, type RunCompleteness } from '../../core/completeness.js'
import type { AttemptInput, AttemptSummary, CompletenessInput, ReconcileActivities, RunActivities, RunStatusInput } from '../../workers/activity-types.js'
import type { RunWorkflow } from '../../workflows/run.js'
import type { SequentialRunInput, SequentialRunResult } from '../../workflows/sequential.js'

const workflowsPath = fileURLToPath(new URL('../../workflows/index.ts', import.meta.url))
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

/** What the completeness check reports for a run the store holds whole. */
function complete(planned: number, rerun = 0): RunCompleteness {
  return { planned, stored: planned, missing_count: 0, missing: [], doubled: 0, harness_errors: 0, rerun }
}

/**
 * Stub activities; `lost` says which results never reach the (pretend) store, which the stub's
 * completeness check reads like the real one: planned attempts by task, missing ones in plan order.
 */
function stub(outcome: (input: AttemptInput) => string, fail?: (input: AttemptInput) => void, lost?: (input: AttemptInput) => boolean) {
  const calls: { task: string; attempt: number; workflow: string | undefined; republish?: number }[] = []
  const statuses: RunStatusInput[] = []
  const checks: CompletenessInput[] = []
  const stored = new Map<string, Set<number>>()
  const activities: RunActivities & ReconcileActivities = {
    async runAttempt(input: AttemptInput): Promise<AttemptSummary> {
      const workflow = Context.current().info.workflowExecution?.workflowId
      calls.push({ task: input.task_id, attempt: input.attempt, workflow, ...(input.republish !== undefined ? { republish: input.republish } : {}) })
      fail?.(input)
      const result = outcome(input)
      if (!(lost?.(input) ?? false)) stored.set(input.task_id, (stored.get(input.task_id) ?? new Set()).add(input.attempt))
      return { attempt_uid: attemptUidOf(input), outcome: result, failure_bucket: null }
    },
    async checkCompleteness(input: CompletenessInput) {
      checks.push(input)
      const found = missingAttempts(input, stored)
      const planned = input.task_ids.reduce((sum, t) => sum + (input.attempts_by_task?.[t] ?? input.attempts), 0)
      return { planned, stored: found.stored, missing_count: found.count, missing: found.missing, doubled: 0, harness_errors: 0 }
    },
    runAttempts: (input) => runEachAttempt(activities, input),
    async recordRunStatus(input: RunStatusInput): Promise<number> {
      statuses.push(input)
      return input.started_at ?? 1_750_000_000_000
    },
  }
  return { activities, calls, statuses, checks }
}

async function run(activities: RunActivities & ReconcileActivities, plan: RunPlan, workflowId = `seq-${randomUUID()}`, carried: Partial<SequentialRunInput> = {}) {
  const taskQueue = `seq-test-${randomUUID()}`
  const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle: bundle, activities })
  const handle = await env.client.workflow.start<typeof RunWorkflow>('RunWorkflow', { taskQueue, workflowId, args: [{ plan, ...carried }] })
  const settled = await worker.runUntil(handle.result().then((value) => ({ value }), (error: unknown) => ({ error })))
  return { handle, settled }
}

const plan = (overrides: Partial<RunPlan> = {}): RunPlan =>
  RunPlan.parse({
    run_id: `run-${randomUUID()}`,
    config_id: 'cfg',
    suite_path: '/suites/toy',
    suite: 'toy',
    task_ids: ['always', 'coin'],
    attempts: 30,
    adapter: 'stub',
    seed: 's',
    sequential: { width: 0.3, round_size: 10, min_attempts: 10 },
    ...overrides,
  })

describe('RunWorkflow with sequential stopping', () => {
  it('stops a task once its Wilson interval is narrow enough and runs the others to the cap', async () => {
    // always passes: width(10, 10) = 0.278 ≤ 0.3 after the first round; a coin: width(15, 30) = 0.337 > 0.3 at the cap
    expect(wilsonWidth(10, 10)).toBeLessThanOrEqual(0.3)
    expect(wilsonWidth(15, 30)).toBeGreaterThan(0.3)
    const p = plan()
    const s = stub((i) => (i.task_id === 'always' || i.attempt % 2 === 0 ? 'pass' : 'fail'))
    const workflowId = `seq-${randomUUID()}`
    const { handle, settled } = await run(s.activities, p, workflowId)

    expect(settled).toEqual({
      value: {
        run_id: p.run_id,
        total: 40,
        tally: { outcomes: { pass: 25, fail: 15 }, not_executed: 0 },
        status: 'completed',
        stopped_tasks: ['always'],
        completeness: complete(40),
      } satisfies SequentialRunResult,
    })
    const byTask = (task: string) => s.calls.filter((c) => c.task === task).map((c) => c.attempt).sort((a, b) => a - b)
    expect(byTask('always')).toEqual(Array.from({ length: 10 }, (_, i) => i))
    expect(byTask('coin')).toEqual(Array.from({ length: 30 }, (_, i) => i))
    // one child workflow per task
    expect(new Set(s.calls.map((c) => `${c.task}:${c.workflow}`))).toEqual(new Set([`always:${workflowId}/task-0`, `coin:${workflowId}/task-1`]))
    expect(s.statuses).toEqual([
      { plan: p, status: 'running' },
      { plan: p, status: 'completed', started_at: 1_750_000_000_000, stopped_tasks: ['always'], completeness: complete(40) },
    ])
    // checked against what was scheduled: 10 attempts of the task that stopped, 30 of the other
    expect(s.checks).toEqual([{ run_id: p.run_id, task_ids: ['always', 'coin'], attempts: 30, attempts_by_task: { always: 10 } }])

    // deterministic: the history replays with the same workflow code
    await Worker.runReplayHistory({ workflowBundle: bundle }, await handle.fetchHistory(), workflowId)
    await Worker.runReplayHistory({ workflowBundle: bundle }, await env.client.workflow.getHandle(`${workflowId}/task-1`).fetchHistory(), `${workflowId}/task-1`)
  })

  it('waits for min_attempts before it may stop, and checks only between rounds', async () => {
    const p = plan({ task_ids: ['always'], attempts: 100, sequential: { width: 0.3, round_size: 7, min_attempts: 15 } })
    const s = stub(() => 'pass')
    const { settled } = await run(s.activities, p)
    // rounds of 7: 7, 14 (< 15), 21 → stops at 21
    expect(settled).toMatchObject({ value: { total: 21, stopped_tasks: ['always'] } })
    expect(s.calls).toHaveLength(21)
  })

  it('counts an attempt the infrastructure could not run as not executed, outside the interval, and re-runs it at the end', async () => {
    const p = plan({ task_ids: ['flaky'], attempts: 30 })
    // a plain error is retried (5 tries, backoff 1+2+4+8 s) and then given up; its re-run succeeds
    const s = stub(
      () => 'pass',
      (i) => {
        if (i.attempt === 0 && i.republish === undefined) throw new Error('connection refused')
      },
    )
    const { settled } = await run(s.activities, p)
    // round 1: 9 passes of n = 9 (< min 10); round 2: 19/19, narrow enough → stopped with 20 scheduled
    expect(settled).toEqual({
      value: { run_id: p.run_id, total: 20, tally: { outcomes: { pass: 19 }, not_executed: 1 }, status: 'completed', stopped_tasks: ['flaky'], completeness: complete(20, 1) },
    })
    expect(s.calls.filter((c) => c.republish !== undefined)).toEqual([{ task: 'flaky', attempt: 0, workflow: expect.any(String) as string, republish: 1 }])
  })

  it('fails the run on a configuration error and records it as failed', async () => {
    const p = plan({ task_ids: ['a'], attempts: 5 })
    const s = stub(
      () => 'pass',
      () => {
        throw ApplicationFailure.nonRetryable('suite toy: manifest suite.yaml not found', 'SuiteLoadError')
      },
    )
    const { settled } = await run(s.activities, p)
    expect('error' in settled && settled.error).toBeInstanceOf(WorkflowFailedError)
    expect(s.statuses.map((x) => x.status)).toEqual(['running', 'failed'])
    expect(s.checks).toEqual([])
  })
})

describe('the completeness check of a sequential run', () => {
  /** always passes (stops after 10 of 30); coin alternates (runs all 30) */
  const outcome = (i: AttemptInput) => (i.task_id === 'always' || i.attempt % 2 === 0 ? 'pass' : 'fail')
  const reruns = (s: ReturnType<typeof stub>) => s.calls.filter((c) => c.republish !== undefined).map((c) => `${c.task}#${c.attempt} round ${c.republish}`).sort()

  it('re-runs exactly the scheduled attempts whose results were lost, never the attempts a stopped task did not schedule', async () => {
    const p = plan()
    const s = stub(outcome, undefined, (i) => i.republish === undefined && ((i.task_id === 'always' && i.attempt === 3) || (i.task_id === 'coin' && (i.attempt === 7 || i.attempt === 29))))
    const { settled } = await run(s.activities, p)

    expect(settled).toEqual({
      value: { run_id: p.run_id, total: 40, tally: { outcomes: { pass: 25, fail: 15 }, not_executed: 0 }, status: 'completed', stopped_tasks: ['always'], completeness: complete(40, 3) },
    })
    expect(reruns(s)).toEqual(['always#3 round 1', 'coin#29 round 1', 'coin#7 round 1'])
    // `always` stopped after 10: its attempts 10 … 29 were never scheduled, so never run, not even by the check
    expect(Math.max(...s.calls.filter((c) => c.task === 'always').map((c) => c.attempt))).toBe(9)
    expect(s.checks).toHaveLength(2)
    expect(s.checks.every((c) => c.attempts === 30 && c.attempts_by_task?.['always'] === 10 && c.attempts_by_task['coin'] === undefined)).toBe(true)
    expect(s.statuses.at(-1)).toEqual({ plan: p, status: 'completed', started_at: 1_750_000_000_000, stopped_tasks: ['always'], completeness: complete(40, 3) })
  })

  it('ends incomplete, naming the scheduled attempt still missing after three re-runs, with planned = scheduled', async () => {
    const p = plan()
    // always#9, the last attempt before the task stopped, never reaches the store
    const s = stub(outcome, undefined, (i) => i.task_id === 'always' && i.attempt === 9)
    const { settled } = await run(s.activities, p)

    const completeness: RunCompleteness = { planned: 40, stored: 39, missing_count: 1, missing: [{ task_id: 'always', attempt: 9 }], doubled: 0, harness_errors: 0, rerun: 3 }
    expect(settled).toEqual({
      value: { run_id: p.run_id, total: 40, tally: { outcomes: { pass: 25, fail: 15 }, not_executed: 0 }, status: 'incomplete', stopped_tasks: ['always'], completeness },
    })
    expect(reruns(s)).toEqual(['always#9 round 1', 'always#9 round 2', 'always#9 round 3'])
    expect(s.checks).toHaveLength(4)
    expect(s.statuses).toEqual([
      { plan: p, status: 'running' },
      { plan: p, status: 'incomplete', started_at: 1_750_000_000_000, stopped_tasks: ['always'], completeness },
    ])
  })

  it('a continued execution checks the early stops carried in (scheduled_attempts) too: only their scheduled attempts are re-run', async () => {
    const p = plan({ task_ids: ['early', 'always'] })
    const s = stub(() => 'pass')
    // the first execution ran `early` (stopped after 10) and continued as new; its results never reached this stub's store
    const carried = { next_task: 1, stopped_tasks: ['early'], scheduled_attempts: { early: 10 }, started_at: 1_750_000_000_000, tally: { outcomes: { pass: 10 }, not_executed: 0 } }
    const { settled } = await run(s.activities, p, `seq-${randomUUID()}`, carried)
    expect(settled).toEqual({
      value: { run_id: p.run_id, total: 20, tally: { outcomes: { pass: 20 }, not_executed: 0 }, status: 'completed', stopped_tasks: ['early', 'always'], completeness: complete(20, 10) },
    })
    expect(s.checks[0]).toEqual({ run_id: p.run_id, task_ids: ['early', 'always'], attempts: 30, attempts_by_task: { early: 10, always: 10 } })
    expect(s.calls.filter((c) => c.republish !== undefined).map((c) => `${c.task}#${c.attempt}`).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `early#${i}`).sort())
  })

  it('a run continued from an execution that predates the check (early stops carried without counts) ends without it', async () => {
    const p = plan({ task_ids: ['early', 'always'] })
    const s = stub(() => 'pass')
    // what an execution before the check carried across continue-as-new: the stops, not what they scheduled
    const { settled } = await run(s.activities, p, `seq-${randomUUID()}`, { next_task: 1, stopped_tasks: ['early'], started_at: 1_750_000_000_000, tally: { outcomes: { pass: 10 }, not_executed: 0 } })
    expect(settled).toEqual({
      value: { run_id: p.run_id, total: 20, tally: { outcomes: { pass: 20 }, not_executed: 0 }, status: 'completed', stopped_tasks: ['early', 'always'] },
    })
    expect(s.checks).toEqual([])
    expect(s.calls.every((c) => c.task === 'always')).toBe(true)
  })
})

describe('replay of committed sequential histories', () => {
  /** recorded before sequential runs had the completeness check: they must replay without it */
  const before = 'forge-replay-seq-v1'
  const files = (workflowId: string) => ({
    run: new URL(`${workflowId}.json`, historiesDir),
    'task-0': new URL(`${workflowId}-task-0.json`, historiesDir),
    'task-1': new URL(`${workflowId}-task-1.json`, historiesDir),
  })

  /** the committed histories of one run, replayed with the current workflow code */
  async function replayCommitted(workflowId: string): Promise<void> {
    for (const [key, file] of Object.entries(files(workflowId))) {
      const history = readHistory(file)
      expect(history.events?.length).toBeGreaterThan(5)
      await Worker.runReplayHistory({ workflowBundle: bundle }, history, key === 'run' ? workflowId : `${workflowId}/${key}`)
    }
  }

  it('replays the sequential run recorded before the completeness check (RunWorkflow and both task children)', async () => {
    // recorded once, from the code before SEQUENTIAL_RECONCILE_PATCH: no check, no marker, status completed
    expect(readFileSync(files(before).run, 'utf8')).not.toContain('EVENT_TYPE_MARKER_RECORDED')
    await replayCommitted(before)
  })

  it('replays a sequential run with the completeness check (recorded once from this run)', async () => {
    const withCheck = 'forge-replay-seq-v2'
    // always: width(2, 2) = 0.66 ≤ 0.7 → stops after 2; coin: 1/2 is too wide → runs to the cap of 4
    const p = plan({ run_id: 'run-replay-seq-v2', task_ids: ['always', 'coin'], attempts: 4, sequential: { width: 0.7, round_size: 2, min_attempts: 2 } })
    // always#1 is lost once: the check re-runs it, so the history holds a re-run too
    const s = stub((i) => (i.task_id === 'always' || i.attempt % 2 === 0 ? 'pass' : 'fail'), undefined, (i) => i.task_id === 'always' && i.attempt === 1 && i.republish === undefined)
    const { handle, settled } = await run(s.activities, p, withCheck)
    expect(settled).toMatchObject({ value: { status: 'completed', completeness: complete(6, 1) } })
    const f = files(withCheck)
    writeHistoryOnce(f.run, await handle.fetchHistory())
    for (const child of ['task-0', 'task-1'] as const) writeHistoryOnce(f[child], await env.client.workflow.getHandle(`${withCheck}/${child}`).fetchHistory())
    await replayCommitted(withCheck)
  })
})
