/**
 * Opt-in sequential stopping on the real Temporal dev server binary with stub activities: a task's
 * attempts run in rounds and stop once its Wilson interval is narrow enough; the run records which
 * tasks stopped early; the history replays deterministically.
 */
import { randomUUID } from 'node:crypto'
import { Context } from '@temporalio/activity'
import { TestWorkflowEnvironment } from '@temporalio/testing'
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker, type WorkflowBundle } from '@temporalio/worker'
import { ApplicationFailure } from '@temporalio/common'
import { WorkflowFailedError } from '@temporalio/client'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RunPlan } from '../../core/contracts/index.js'
import { attemptUidOf } from '../../core/identity.js'
import { wilsonWidth } from '../../core/stats.js'
import { findBinary } from '../../stack/binaries.js'
import { runEachAttempt } from './batch-stub.js'
import { historiesDir, readHistory, writeHistoryOnce } from './histories.js'
import type { AttemptInput, AttemptSummary, RunActivities, RunStatusInput } from '../../workers/activity-types.js'
import type { RunWorkflow } from '../../workflows/run.js'
import type { SequentialRunResult } from '../../workflows/sequential.js'

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

function stub(outcome: (input: AttemptInput) => string, fail?: (input: AttemptInput) => void) {
  const calls: { task: string; attempt: number; workflow: string | undefined }[] = []
  const statuses: RunStatusInput[] = []
  const activities: RunActivities = {
    async runAttempt(input: AttemptInput): Promise<AttemptSummary> {
      calls.push({ task: input.task_id, attempt: input.attempt, workflow: Context.current().info.workflowExecution?.workflowId })
      fail?.(input)
      const result = outcome(input)
      return { attempt_uid: attemptUidOf(input), outcome: result, failure_bucket: null }
    },
    runAttempts: (input) => runEachAttempt(activities, input),
    async recordRunStatus(input: RunStatusInput): Promise<number> {
      statuses.push(input)
      return input.started_at ?? 1_750_000_000_000
    },
  }
  return { activities, calls, statuses }
}

async function run(activities: RunActivities, plan: RunPlan, workflowId = `seq-${randomUUID()}`) {
  const taskQueue = `seq-test-${randomUUID()}`
  const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle: bundle, activities })
  const handle = await env.client.workflow.start<typeof RunWorkflow>('RunWorkflow', { taskQueue, workflowId, args: [{ plan }] })
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
      } satisfies SequentialRunResult,
    })
    const byTask = (task: string) => s.calls.filter((c) => c.task === task).map((c) => c.attempt).sort((a, b) => a - b)
    expect(byTask('always')).toEqual(Array.from({ length: 10 }, (_, i) => i))
    expect(byTask('coin')).toEqual(Array.from({ length: 30 }, (_, i) => i))
    // one child workflow per task
    expect(new Set(s.calls.map((c) => `${c.task}:${c.workflow}`))).toEqual(new Set([`always:${workflowId}/task-0`, `coin:${workflowId}/task-1`]))
    expect(s.statuses).toEqual([
      { plan: p, status: 'running' },
      { plan: p, status: 'completed', started_at: 1_750_000_000_000, stopped_tasks: ['always'] },
    ])

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

  it('counts an attempt the infrastructure could not run as not executed, outside the interval', async () => {
    const p = plan({ task_ids: ['flaky'], attempts: 30 })
    // a plain error is retried (5 tries, backoff 1+2+4+8 s) and then given up
    const s = stub(
      () => 'pass',
      (i) => {
        if (i.attempt === 0) throw new Error('connection refused')
      },
    )
    const { settled } = await run(s.activities, p)
    // round 1: 9 passes of n = 9 (< min 10); round 2: 19/19, narrow enough → stopped with 20 scheduled
    expect(settled).toEqual({
      value: { run_id: p.run_id, total: 20, tally: { outcomes: { pass: 19 }, not_executed: 1 }, status: 'completed', stopped_tasks: ['flaky'] },
    })
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

  it('replays the sequential run recorded before the completeness check (RunWorkflow and both task children)', async () => {
    // always: width(2, 2) = 0.66 ≤ 0.7 → stops after 2; coin: 1/2 is too wide → runs to the cap of 4
    const p = plan({ run_id: 'run-replay-seq', task_ids: ['always', 'coin'], attempts: 4, sequential: { width: 0.7, round_size: 2, min_attempts: 2 } })
    const s = stub((i) => (i.task_id === 'always' || i.attempt % 2 === 0 ? 'pass' : 'fail'))
    const { handle } = await run(s.activities, p, before)
    const f = files(before)
    writeHistoryOnce(f.run, await handle.fetchHistory())
    for (const child of ['task-0', 'task-1'] as const) writeHistoryOnce(f[child], await env.client.workflow.getHandle(`${before}/${child}`).fetchHistory())
    for (const [key, file] of Object.entries(f)) {
      const history = readHistory(file)
      expect(history.events?.length).toBeGreaterThan(5)
      await Worker.runReplayHistory({ workflowBundle: bundle }, history, key === 'run' ? before : `${before}/${key}`)
    }
  })
})
