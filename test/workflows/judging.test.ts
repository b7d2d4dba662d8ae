/**
 * Judging on its own task queue: with a `judge` on the plan, the shard schedules the judge activity
 * after each attempt that asks for one, on the judge queue, without holding up the attempt lanes;
 * without one, nothing changes (the committed histories replay: run-workflow.test.ts). Real
 * Temporal dev server, stub activities.
 */
import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { Context } from '@temporalio/activity'
import { ApplicationFailure } from '@temporalio/common'
import { TestWorkflowEnvironment } from '@temporalio/testing'
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker, type WorkflowBundle } from '@temporalio/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { JudgeSettings, RunPlan } from '../../core/contracts/index.js'
import { attemptUidOf } from '../../core/identity.js'
import { findBinary } from '../../stack/binaries.js'
import type { AttemptInput, AttemptSummary, CompletenessInput, JudgeActivities, JudgeInput, JudgeSummary, ReconcileActivities, RunActivities, RunStatusInput } from '../../workers/activity-types.js'
import type { RunWorkflow, RunWorkflowResult } from '../../workflows/run.js'

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

function plan(overrides: Partial<RunPlan>): RunPlan {
  return RunPlan.parse({
    run_id: `run-${randomUUID()}`,
    config_id: 'cfg-1',
    suite_path: '/suites/toy',
    suite: 'toy',
    task_ids: ['a', 'b'],
    attempts: 3,
    adapter: 'stub',
    seed: 'seed-1',
    ...overrides,
  })
}

/** attempts with an odd index fail and ask for golden divergence and metrics; even ones pass and ask for metrics only */
function attemptActivities(ask = true) {
  const calls: AttemptInput[] = []
  const activities: RunActivities & ReconcileActivities = {
    async runAttempt(input: AttemptInput): Promise<AttemptSummary> {
      calls.push(input)
      const failed = input.attempt % 2 === 1
      return {
        attempt_uid: attemptUidOf(input),
        outcome: failed ? 'fail' : 'pass',
        failure_bucket: failed ? 'wrong_answer' : null,
        ...(ask ? { judge: { golden_divergence: failed, metrics: true } } : {}),
      }
    },
    async recordRunStatus(input: RunStatusInput): Promise<number> {
      return input.started_at ?? 1
    },
    // every attempt reaches the store here
    async checkCompleteness(input: CompletenessInput) {
      const planned = input.task_ids.length * input.attempts
      return { planned, stored: planned, missing_count: 0, missing: [], doubled: 0, harness_errors: 0 }
    },
  }
  return { activities, calls }
}

function judgeActivities(opts: { fail?: (input: JudgeInput) => boolean } = {}) {
  const calls: { input: JudgeInput; queue: string; at: number }[] = []
  const activities: JudgeActivities = {
    async judgeAttempt(input: JudgeInput): Promise<JudgeSummary> {
      calls.push({ input, queue: Context.current().info.taskQueue, at: Date.now() })
      if (opts.fail?.(input)) throw ApplicationFailure.nonRetryable('judge worker broke', 'JudgeBroke')
      return { attempt_uid: input.attempt_uid, tier2: input.golden_divergence ? 'localized' : 'not_applicable', needs_human_review: false, metrics: 2 }
    },
  }
  return { activities, calls }
}

async function run(p: RunPlan, attempts: RunActivities & ReconcileActivities, judge: JudgeActivities, judgeOptions: { maxTaskQueueActivitiesPerSecond?: number } = {}): Promise<RunWorkflowResult> {
  const taskQueue = `wf-judging-${randomUUID()}`
  const attemptWorker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle: bundle, activities: attempts })
  const judgeWorker = await Worker.create({ connection: env.nativeConnection, taskQueue: p.judge?.task_queue ?? 'unused', activities: judge, ...judgeOptions })
  const handle = await env.client.workflow.start<typeof RunWorkflow>('RunWorkflow', { taskQueue, workflowId: `run-${randomUUID()}`, args: [{ plan: p }] })
  return judgeWorker.runUntil(attemptWorker.runUntil(handle.result()))
}

describe('judge activities on their own task queue', () => {
  it('schedules the judge for every attempt that asks, on the judge queue, with the settings and what to do', async () => {
    const judgeQueue = `judge-${randomUUID()}`
    const p = plan({ judge: JudgeSettings.parse({ model: 'judge-1', task_queue: judgeQueue, metrics: ['correctness'] }) })
    const attempts = attemptActivities()
    const judge = judgeActivities()
    const result = await run(p, attempts.activities, judge.activities)
    expect(result).toEqual({
      run_id: p.run_id,
      total: 6,
      tally: { outcomes: { pass: 4, fail: 2 }, not_executed: 0, judged: 6 },
      status: 'completed',
      completeness: { planned: 6, stored: 6, missing_count: 0, missing: [], doubled: 0, harness_errors: 0, rerun: 0 },
    })
    // the attempt activity carries the judge settings only for runs that have them
    expect(attempts.calls.every((c) => c.judge !== undefined && c.judge.model === 'judge-1')).toBe(true)
    expect(judge.calls.map((c) => c.queue)).toEqual(Array(6).fill(judgeQueue))
    const b1 = judge.calls.find((c) => c.input.task_id === 'b' && c.input.attempt === 1)
    expect(b1?.input).toEqual({
      attempt_uid: `${p.run_id}/cfg-1/b/1`,
      run_id: p.run_id,
      config_id: 'cfg-1',
      suite: 'toy',
      suite_path: '/suites/toy',
      task_id: 'b',
      attempt: 1,
      judge: p.judge,
      golden_divergence: true,
      metrics: true,
    })
    expect(judge.calls.filter((c) => c.input.golden_divergence).map((c) => `${c.input.task_id}#${c.input.attempt}`).sort()).toEqual(['a#1', 'b#1'])
  })

  it('schedules nothing without a judge on the plan, whatever the attempts ask', async () => {
    const p = plan({})
    const attempts = attemptActivities(true)
    const judge = judgeActivities()
    const result = await run(p, attempts.activities, judge.activities)
    expect(result.tally).toEqual({ outcomes: { pass: 4, fail: 2 }, not_executed: 0 })
    expect(judge.calls).toEqual([])
    expect(attempts.calls.every((c) => !('judge' in c))).toBe(true)
  })

  it('a judge that fails is counted, and the run still completes: judging never gates the outcome', async () => {
    const p = plan({ judge: JudgeSettings.parse({ model: 'judge-1', task_queue: `judge-${randomUUID()}` }) })
    const judge = judgeActivities({ fail: (input) => input.task_id === 'a' })
    const result = await run(p, attemptActivities().activities, judge.activities)
    expect(result).toMatchObject({ status: 'completed', tally: { outcomes: { pass: 4, fail: 2 }, not_executed: 0, judged: 3, judge_not_executed: 3 } })
  })

  it("is rate-limited by the judge workers' activities per second, apart from the attempts", async () => {
    const p = plan({ task_ids: ['a', 'b', 'c'], attempts: 2, judge: JudgeSettings.parse({ model: 'judge-1', task_queue: `judge-${randomUUID()}` }) })
    const attempts = attemptActivities()
    const judge = judgeActivities()
    await run(p, attempts.activities, judge.activities, { maxTaskQueueActivitiesPerSecond: 2 })
    const starts = judge.calls.map((c) => c.at).sort((x, y) => x - y)
    expect(starts).toHaveLength(6)
    // 6 activities at 2 per second cannot all start within the first 1.5 s (unlimited, they start within milliseconds)
    expect(starts.at(-1)! - starts[0]!).toBeGreaterThanOrEqual(1500)
  })
})
