/**
 * RunWorkflow and ShardWorkflow on the real Temporal dev server binary, with stub activities in
 * place of the suite loader, adapters and NATS. Plus a replay of a committed history, which fails
 * when a change to workflow code would break runs already in flight.
 */
import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { Context } from '@temporalio/activity'
import { WorkflowFailedError, WorkflowNotFoundError, type WorkflowHandle } from '@temporalio/client'
import { ActivityFailure, ApplicationFailure, ChildWorkflowFailure, defaultPayloadConverter } from '@temporalio/common'
import { TestWorkflowEnvironment } from '@temporalio/testing'
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker, type WorkflowBundle } from '@temporalio/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RunPlan } from '../../core/contracts/index.js'
import { attemptUidOf } from '../../core/identity.js'
import { findBinary } from '../../stack/binaries.js'
import { finalRunStatus, missingAttempts, type RunCompleteness } from '../../core/completeness.js'
import type { AttemptBatchInput, AttemptInput, AttemptSummary, CompletenessInput, ReconcileActivities, RunActivities, RunStatusInput } from '../../workers/activity-types.js'
import { runEachAttempt } from './batch-stub.js'
import { historiesDir, readHistory, writeHistoryOnce } from './histories.js'
import type { RunWorkflow, RunWorkflowResult, ShardInput } from '../../workflows/run.js'

const workflowsPath = fileURLToPath(new URL('../../workflows/index.ts', import.meta.url))
const brokenWorkflowsPath = fileURLToPath(new URL('./nondeterministic-run.ts', import.meta.url))
/** the replayed run uses fixed ids: the child workflow ids in its history derive from them */
const REPLAY_WORKFLOW_ID = 'forge-replay-run-2x2'
/** the history event types these tests read (temporal.api.enums.v1.EventType) */
const EventType = { EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: 10, EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED: 29 } as const
const STARTED_AT = 1_750_000_000_000


let env: TestWorkflowEnvironment
let bundle: WorkflowBundle

const quiet = { info() {}, warn: console.warn, error: console.error, debug() {}, trace() {}, log() {} }

beforeAll(async () => {
  // ERROR: the activity failures these tests provoke on purpose are logged at WARN
  Runtime.install({ logger: new DefaultLogger('ERROR') })
  // 'existing-path': the SDK must never download a server (there is no network here)
  env = await TestWorkflowEnvironment.createLocal({ server: { executable: { type: 'existing-path', path: findBinary('temporal') } } })
  bundle = await bundleWorkflowCode({ workflowsPath, logger: quiet })
})
afterAll(async () => {
  await env?.teardown()
})

function plan(overrides: Partial<RunPlan> & Pick<RunPlan, 'task_ids' | 'attempts'>): RunPlan {
  return RunPlan.parse({
    run_id: `run-${randomUUID()}`,
    config_id: 'cfg-1',
    suite_path: '/suites/toy',
    suite: 'toy',
    adapter: 'stub',
    adapter_config: { temperature: 0 },
    seed: 'seed-1',
    heartbeat_timeout_ms: 60_000,
    ...overrides,
  })
}

interface AttemptCall {
  input: AttemptInput
  /** Temporal's activity attempt number, 1 on the first try */
  try: number
  /** the ShardWorkflow that scheduled it */
  workflow_id: string | undefined
}

interface StubOptions {
  outcome?: (input: AttemptInput) => string
  delayMs?: number
  /** throws to make the activity fail */
  fail?: (input: AttemptInput, tryNumber: number) => void
  /** throws to make a batch activity fail (before it runs any attempt) */
  failBatch?: (input: AttemptBatchInput, tryNumber: number) => void
  /** the result of this call never reaches the store (a lost message) */
  lost?: (input: AttemptInput) => boolean
  /** how long the 'running' record takes to be recorded (ms) */
  runningRecordMs?: number
  /** the check records the run's final status when asked to (final_record), as workers/reconcile.ts does */
  recordWithCheck?: boolean
}

/** What the completeness check reports for a run the store holds whole. */
function complete(planned: number, rerun = 0): RunCompleteness {
  return { planned, stored: planned, missing_count: 0, missing: [], doubled: 0, harness_errors: 0, rerun }
}

function stubActivities(opts: StubOptions = {}) {
  const attempts: AttemptCall[] = []
  const statuses: RunStatusInput[] = []
  /** which activity recorded each of `statuses` */
  const recordedBy: ('recordRunStatus' | 'checkCompleteness')[] = []
  const returned: string[] = []
  const window = { current: 0, max: 0 }
  /** `task#attempt` of every result that reached the (pretend) store */
  const stored = new Set<string>()
  const checks: CompletenessInput[] = []
  const batches: AttemptBatchInput[] = []
  /** each batch activity's start-to-close limit (ms) */
  const batchLimits: number[] = []
  const activities: RunActivities & ReconcileActivities = {
    async runAttempts(input: AttemptBatchInput): Promise<AttemptSummary[]> {
      batches.push(input)
      batchLimits.push(Context.current().info.startToCloseTimeoutMs)
      opts.failBatch?.(input, Context.current().info.attempt)
      return runEachAttempt(activities, input)
    },
    async runAttempt(input: AttemptInput): Promise<AttemptSummary> {
      const info = Context.current().info
      attempts.push({ input, try: info.attempt, workflow_id: info.workflowExecution?.workflowId })
      window.current++
      window.max = Math.max(window.max, window.current)
      try {
        if (opts.delayMs) await new Promise((resolve) => setTimeout(resolve, opts.delayMs))
        opts.fail?.(input, info.attempt)
        const outcome = opts.outcome?.(input) ?? 'pass'
        returned.push(outcome)
        if (!(opts.lost?.(input) ?? false)) stored.add(`${input.task_id}#${input.attempt}`)
        return {
          attempt_uid: attemptUidOf(input),
          outcome,
          failure_bucket: outcome === 'pass' ? null : 'wrong_answer',
        }
      } finally {
        window.current--
      }
    },
    async recordRunStatus(input: RunStatusInput): Promise<number> {
      statuses.push(input)
      recordedBy.push('recordRunStatus')
      if (input.status === 'running' && opts.runningRecordMs) await new Promise((resolve) => setTimeout(resolve, opts.runningRecordMs))
      return input.started_at ?? STARTED_AT
    },
    async checkCompleteness(input: CompletenessInput) {
      checks.push(input)
      const byTask = new Map<string, Set<number>>()
      for (const key of stored) {
        const [task, attempt] = key.split('#') as [string, string]
        byTask.set(task, (byTask.get(task) ?? new Set()).add(Number(attempt)))
      }
      const found = missingAttempts(input, byTask)
      const report = { planned: input.task_ids.length * input.attempts, stored: found.stored, missing_count: found.count, missing: found.missing, doubled: 0, harness_errors: 0 }
      const final = input.final_record
      if (!opts.recordWithCheck || final === undefined || (report.missing_count > 0 && !final.last_round)) return report
      const completeness = { ...report, rerun: final.rerun }
      const status = finalRunStatus(completeness)
      statuses.push({ plan: final.plan, status, ...(final.started_at !== undefined ? { started_at: final.started_at } : {}), completeness })
      recordedBy.push('checkCompleteness')
      return { ...report, recorded: status }
    },
  }
  return { activities, attempts, statuses, recordedBy, returned, window, checks, batches, batchLimits }
}

/** Runs one RunWorkflow on its own task queue with a worker holding `activities`; returns the handle once it closed. */
async function runOnWorker(
  activities: RunActivities & ReconcileActivities,
  runPlan: RunPlan,
  workflowId = `run-${randomUUID()}`,
  extra: { shards_per_execution?: number } = {},
): Promise<{ handle: WorkflowHandle<typeof RunWorkflow>; result: Promise<RunWorkflowResult> }> {
  const taskQueue = `wf-test-${randomUUID()}`
  const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle: bundle, activities })
  const handle = await env.client.workflow.start<typeof RunWorkflow>('RunWorkflow', {
    taskQueue,
    workflowId,
    args: [{ plan: runPlan, ...extra }],
  })
  // settle (resolve or reject) while the worker runs, then report the outcome to the caller
  const settled = await worker.runUntil(handle.result().then((value) => ({ value }), (error: unknown) => ({ error })))
  const result = 'error' in settled ? Promise.reject(settled.error) : Promise.resolve(settled.value)
  result.catch(() => undefined) // the caller inspects it; never an unhandled rejection
  return { handle, result }
}

function causeChain(error: unknown): unknown[] {
  const chain: unknown[] = []
  for (let e = error; e !== undefined && e !== null; e = (e as { cause?: unknown }).cause) chain.push(e)
  return chain
}

/** key → every (task, attempt) pair, in plan order */
function allPairs(p: RunPlan): string[] {
  return p.task_ids.flatMap((t) => Array.from({ length: p.attempts }, (_, a) => `${t}#${a}`))
}

describe('RunWorkflow with stub activities', () => {
  it('runs every (task, attempt) pair exactly once, tallies the outcomes and records running then completed', async () => {
    const table: Record<string, string[]> = {
      add: ['pass', 'pass', 'pass', 'pass'],
      sub: ['pass', 'fail', 'pass', 'fail'],
      mul: ['fail', 'partial', 'violation', 'pass'],
    }
    const p = plan({ task_ids: ['add', 'sub', 'mul'], attempts: 4 })
    const stub = stubActivities({ outcome: (i) => table[i.task_id]![i.attempt]! })

    const { result } = await runOnWorker(stub.activities, p)

    expect(await result).toEqual({
      run_id: p.run_id,
      total: 12,
      tally: { outcomes: { pass: 7, fail: 3, partial: 1, violation: 1 }, not_executed: 0 },
      status: 'completed',
      completeness: complete(12),
    })
    // the tally is what the stub returned, no more, no less
    const returned: Record<string, number> = {}
    for (const o of stub.returned) returned[o] = (returned[o] ?? 0) + 1
    expect((await result).tally.outcomes).toEqual(returned)

    const pairs = stub.attempts.map((c) => `${c.input.task_id}#${c.input.attempt}`)
    expect(pairs.slice().sort()).toEqual(allPairs(p).sort())
    expect(stub.attempts.map((c) => c.try)).toEqual(Array(12).fill(1))
    // the whole activity input: the plan's fields, nothing else (no tasks travel through Temporal)
    expect(stub.attempts.find((c) => c.input.task_id === 'sub' && c.input.attempt === 2)!.input).toEqual({
      run_id: p.run_id,
      config_id: 'cfg-1',
      suite: 'toy',
      suite_path: '/suites/toy',
      adapter: 'stub',
      adapter_config: { temperature: 0 },
      seed: 'seed-1',
      task_id: 'sub',
      attempt: 2,
    })
    expect(stub.statuses).toEqual([
      { plan: p, status: 'running' },
      { plan: p, status: 'completed', started_at: STARTED_AT, completeness: complete(12) },
    ])
    // the run's one check, asked to record the final status should it end the run (this stub's check does not)
    expect(stub.checks).toEqual([{ run_id: p.run_id, task_ids: ['add', 'sub', 'mul'], attempts: 4, final_record: { plan: p, started_at: STARTED_AT, rerun: 0, last_round: false } }])
  })

  it('splits 12 attempts with shard_size 5 into exactly three ShardWorkflow children covering every attempt', async () => {
    const p = plan({ task_ids: ['a', 'b', 'c'], attempts: 4, shard_size: 5, max_shards_in_flight: 2 })
    const stub = stubActivities()
    const workflowId = `sharded-${randomUUID()}`

    const { handle, result } = await runOnWorker(stub.activities, p, workflowId)
    expect(await result).toEqual({ run_id: p.run_id, total: 12, tally: { outcomes: { pass: 12 }, not_executed: 0 }, status: 'completed', completeness: complete(12) })

    const history = await handle.fetchHistory()
    const children = (history.events ?? [])
      .map((e) => e.startChildWorkflowExecutionInitiatedEventAttributes)
      .filter((a) => a !== null && a !== undefined)
      .map((a) => {
        const input = defaultPayloadConverter.fromPayload<ShardInput>(a.input!.payloads![0]!)
        return { workflowId: a.workflowId ?? '', type: a.workflowType?.name, start: input.start, end: input.end }
      })
      .sort((x, y) => x.start - y.start)
    expect(children).toEqual([
      { workflowId: `${workflowId}/shard-0`, type: 'ShardWorkflow', start: 0, end: 5 },
      { workflowId: `${workflowId}/shard-1`, type: 'ShardWorkflow', start: 5, end: 10 },
      { workflowId: `${workflowId}/shard-2`, type: 'ShardWorkflow', start: 10, end: 12 },
    ])
    for (const child of children) {
      const description = await env.client.workflow.getHandle(child.workflowId).describe()
      expect({ type: description.type, status: description.status.name }).toEqual({ type: 'ShardWorkflow', status: 'COMPLETED' })
    }
    await expect(env.client.workflow.getHandle(`${workflowId}/shard-3`).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError)

    // every attempt ran once, in the shard whose range holds its flattened index
    const ranByShard = Object.fromEntries(
      stub.attempts.map((c) => [`${c.input.task_id}#${c.input.attempt}`, c.workflow_id?.slice(workflowId.length + 1)]),
    )
    expect(stub.attempts).toHaveLength(12)
    expect(ranByShard).toEqual({
      'a#0': 'shard-0', 'a#1': 'shard-0', 'a#2': 'shard-0', 'a#3': 'shard-0', 'b#0': 'shard-0',
      'b#1': 'shard-1', 'b#2': 'shard-1', 'b#3': 'shard-1', 'c#0': 'shard-1', 'c#1': 'shard-1',
      'c#2': 'shard-2', 'c#3': 'shard-2',
    })
  })

  it('keeps at most max_in_flight attempts executing at once, and does fill the window', async () => {
    const p = plan({ task_ids: ['a', 'b', 'c'], attempts: 4, max_in_flight: 3 })
    const stub = stubActivities({ delayMs: 100 })

    const { result } = await runOnWorker(stub.activities, p)

    expect((await result).tally).toEqual({ outcomes: { pass: 12 }, not_executed: 0 })
    expect(stub.attempts).toHaveLength(12)
    expect(stub.window.max).toBe(3)
  })

  it('retries infrastructure errors: a flaky attempt counts once, one that never succeeds counts as not executed and is re-run at the end', async () => {
    const p = plan({ task_ids: ['flaky', 'broken', 'ok'], attempts: 1 })
    const stub = stubActivities({
      fail: (input, tryNumber) => {
        if (input.task_id === 'flaky' && tryNumber <= 2) throw ApplicationFailure.retryable('NATS publish timed out', 'TimeoutError')
        // the outage is over by the time the completeness check re-runs it
        if (input.task_id === 'broken' && input.republish === undefined) throw new Error('connection refused')
      },
    })

    const { result } = await runOnWorker(stub.activities, p)

    expect(await result).toEqual({ run_id: p.run_id, total: 3, tally: { outcomes: { pass: 2 }, not_executed: 1 }, status: 'completed', completeness: complete(3, 1) })
    const tries: Record<string, number[]> = {}
    for (const c of stub.attempts) (tries[`${c.input.task_id}${c.input.republish === undefined ? '' : ` (re-run ${c.input.republish})`}`] ??= []).push(c.try)
    // retry policy: maximumAttempts 5 (backoff 1 s, 2 s, 4 s, 8 s)
    expect(tries).toEqual({ flaky: [1, 2, 3], broken: [1, 2, 3, 4, 5], 'broken (re-run 1)': [1], ok: [1] })
    expect(stub.statuses.map((s) => s.status)).toEqual(['running', 'completed'])
  })

  it('re-runs attempts whose results never reached the store, and ends incomplete, naming them, when they stay missing', async () => {
    const p = plan({ task_ids: ['a', 'b'], attempts: 3 })
    // a#1 is lost once (the re-run brings it in); b#2 is lost every time
    const stub = stubActivities({ lost: (input) => (input.task_id === 'a' && input.attempt === 1 && input.republish === undefined) || (input.task_id === 'b' && input.attempt === 2) })

    const { result } = await runOnWorker(stub.activities, p)

    const completeness: RunCompleteness = { planned: 6, stored: 5, missing_count: 1, missing: [{ task_id: 'b', attempt: 2 }], doubled: 0, harness_errors: 0, rerun: 4 }
    expect(await result).toEqual({ run_id: p.run_id, total: 6, tally: { outcomes: { pass: 6 }, not_executed: 0 }, status: 'incomplete', completeness })
    const reruns = stub.attempts.filter((c) => c.input.republish !== undefined).map((c) => `${c.input.task_id}#${c.input.attempt} round ${c.input.republish}`)
    expect(reruns.sort()).toEqual(['a#1 round 1', 'b#2 round 1', 'b#2 round 2', 'b#2 round 3'])
    expect(stub.checks).toHaveLength(4)
    expect(stub.statuses).toEqual([
      { plan: p, status: 'running' },
      { plan: p, status: 'incomplete', started_at: STARTED_AT, completeness },
    ])
  })

  it('lets the completeness check that ends the run record its final status: no recordRunStatus after it (forge-final-record-with-check-v1)', async () => {
    const p = plan({ task_ids: ['a', 'b'], attempts: 3 })
    // as in the test above: a#1 is lost once, b#2 every time; only the last check ends the run
    const stub = stubActivities({ recordWithCheck: true, lost: (input) => (input.task_id === 'a' && input.attempt === 1 && input.republish === undefined) || (input.task_id === 'b' && input.attempt === 2) })

    const { handle, result } = await runOnWorker(stub.activities, p)

    const completeness: RunCompleteness = { planned: 6, stored: 5, missing_count: 1, missing: [{ task_id: 'b', attempt: 2 }], doubled: 0, harness_errors: 0, rerun: 4 }
    expect(await result).toEqual({ run_id: p.run_id, total: 6, tally: { outcomes: { pass: 6 }, not_executed: 0 }, status: 'incomplete', completeness })
    expect(stub.checks.map((c) => ({ rerun: c.final_record?.rerun, last_round: c.final_record?.last_round, started_at: c.final_record?.started_at }))).toEqual([
      { rerun: 0, last_round: false, started_at: STARTED_AT },
      { rerun: 2, last_round: false, started_at: STARTED_AT },
      { rerun: 3, last_round: false, started_at: STARTED_AT },
      { rerun: 4, last_round: true, started_at: STARTED_AT },
    ])
    expect(stub.statuses).toEqual([
      { plan: p, status: 'running' },
      { plan: p, status: 'incomplete', started_at: STARTED_AT, completeness },
    ])
    expect(stub.recordedBy).toEqual(['recordRunStatus', 'checkCompleteness'])
    // the history agrees: the check is the run's last activity
    const scheduled = ((await handle.fetchHistory()).events ?? [])
      .filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
      .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name)
    expect(scheduled.at(-1)).toBe('checkCompleteness')
    expect(scheduled.filter((name) => name === 'recordRunStatus')).toHaveLength(1)
  })

  it('records the final status itself when the check that ended the run did not (a worker from before the change)', async () => {
    const p = plan({ task_ids: ['a'], attempts: 2 })
    // this stub's check ignores final_record, as a worker without it does
    const stub = stubActivities()
    const { result } = await runOnWorker(stub.activities, p)
    expect((await result).status).toBe('completed')
    expect(stub.checks.map((c) => c.final_record?.last_round)).toEqual([false])
    expect(stub.statuses).toEqual([
      { plan: p, status: 'running' },
      { plan: p, status: 'completed', started_at: STARTED_AT, completeness: complete(2) },
    ])
    expect(stub.recordedBy).toEqual(['recordRunStatus', 'recordRunStatus'])
  })

  it.each([
    // one shard runs in the run's own history (forge-inline-single-shard-v1); three are children
    { shards: 1, shard_size: 1000, chain: [WorkflowFailedError, ActivityFailure, ApplicationFailure] },
    { shards: 3, shard_size: 1, chain: [WorkflowFailedError, ChildWorkflowFailure, ActivityFailure, ApplicationFailure] },
  ])('fails the run on a non-retryable configuration error, without retrying it, and records the run as failed ($shards shard(s))', async ({ shard_size, chain: expectedChain }) => {
    const p = plan({ task_ids: ['a'], attempts: 3, max_in_flight: 1, max_shards_in_flight: 1, shard_size })
    const stub = stubActivities({
      fail: () => {
        throw ApplicationFailure.nonRetryable('suite toy: manifest suite.yaml not found', 'SuiteLoadError')
      },
    })

    const { result } = await runOnWorker(stub.activities, p)
    const error = await result.then(
      () => undefined,
      (e: unknown) => e,
    )

    expect(error).toBeInstanceOf(WorkflowFailedError)
    const chain = causeChain(error)
    expect(chain.map((e) => (e as object).constructor)).toEqual(expectedChain)
    const root = chain.at(-1) as ApplicationFailure
    expect({ type: root.type, nonRetryable: root.nonRetryable }).toEqual({ type: 'SuiteLoadError', nonRetryable: true })
    expect(root.message).toContain('manifest suite.yaml not found')
    expect(stub.attempts.map((c) => ({ task: c.input.task_id, attempt: c.input.attempt, try: c.try }))).toEqual([{ task: 'a', attempt: 0, try: 1 }])
    expect(stub.statuses).toEqual([
      { plan: p, status: 'running' },
      { plan: p, status: 'failed', started_at: STARTED_AT },
    ])
  })

  it("records a run that fails while its 'running' record is still on its way as failed with its start time (forge-end-record-after-start-v1)", async () => {
    const p = plan({ task_ids: ['a'], attempts: 1, max_in_flight: 1 })
    // the attempt fails at once; the 'running' record (sent with it) takes 500 ms
    const stub = stubActivities({
      runningRecordMs: 500,
      fail: () => {
        throw ApplicationFailure.nonRetryable('suite toy: manifest suite.yaml not found', 'SuiteLoadError')
      },
    })
    const { result } = await runOnWorker(stub.activities, p)
    await expect(result).rejects.toBeInstanceOf(WorkflowFailedError)
    expect(stub.statuses).toEqual([
      { plan: p, status: 'running' },
      { plan: p, status: 'failed', started_at: STARTED_AT },
    ])
  })

  it('continues as new after shards_per_execution shards without recording the run as failed', async () => {
    const p = plan({ task_ids: ['a', 'b', 'c', 'd', 'e'], attempts: 1, shard_size: 1 })
    const stub = stubActivities()
    const { result } = await runOnWorker(stub.activities, p, `run-${randomUUID()}`, { shards_per_execution: 2 })
    expect(await result).toEqual({ run_id: p.run_id, total: 5, tally: { outcomes: { pass: 5 }, not_executed: 0 }, status: 'completed', completeness: complete(5) })
    expect(stub.statuses.map((s) => s.status)).toEqual(['running', 'completed'])
    expect(stub.attempts.map((c) => c.input.task_id).sort()).toEqual(['a', 'b', 'c', 'd', 'e'])
  })

  it('fails the run on an error whose type the retry policy lists as non-retryable, even when not thrown as such', async () => {
    class ConfigError extends Error {
      override name = 'ConfigError'
    }
    const p = plan({ task_ids: ['a'], attempts: 2, max_in_flight: 1 })
    const stub = stubActivities({
      fail: () => {
        throw new ConfigError('adapter_config.model is missing')
      },
    })
    const { result } = await runOnWorker(stub.activities, p)
    const error = await result.then(() => undefined, (e: unknown) => e)
    expect(error).toBeInstanceOf(WorkflowFailedError)
    expect(stub.attempts.map((c) => c.try)).toEqual([1])
    expect(stub.statuses.map((s) => s.status)).toEqual(['running', 'failed'])
  })
})

describe('ShardWorkflow with several attempts per activity (issue 15)', () => {
  it('runs 12 attempts as 3 batch activities of 4, each pair exactly once, window still full', async () => {
    const p = plan({ task_ids: ['a', 'b', 'c'], attempts: 4, max_in_flight: 3, attempts_per_activity: 10 })
    const stub = stubActivities({ delayMs: 50, outcome: (input) => (input.attempt === 0 ? 'fail' : 'pass') })

    const { result } = await runOnWorker(stub.activities, p)

    expect((await result).tally).toEqual({ outcomes: { pass: 9, fail: 3 }, not_executed: 0 })
    // min(10 per activity, 12 attempts / 3 in flight) = 4 per activity, one after another
    expect(stub.batches.map((b) => b.items.length)).toEqual([4, 4, 4])
    expect(stub.batchLimits).toEqual([4, 4, 4].map((n) => n * p.attempt_timeout_ms))
    expect(stub.attempts.map((c) => `${c.input.task_id}#${c.input.attempt}`).sort()).toEqual(allPairs(p).sort())
    expect(stub.window.max).toBe(3)
  })

  it('a plan without attempts_per_activity schedules one attempt per activity, as before', async () => {
    const p = plan({ task_ids: ['a', 'b'], attempts: 3 })
    const stub = stubActivities()
    const { result } = await runOnWorker(stub.activities, p)
    expect((await result).tally).toEqual({ outcomes: { pass: 6 }, not_executed: 0 })
    expect(stub.batches).toEqual([])
    expect(stub.attempts).toHaveLength(6)
  })

  it('a batch that fails after every retry falls back to one activity per attempt, so the tally stays exact', async () => {
    const p = plan({ task_ids: ['a', 'flaky'], attempts: 2, max_in_flight: 1, attempts_per_activity: 2 })
    const stub = stubActivities({
      failBatch: (input) => {
        if (input.items.some((item) => item.task_id === 'flaky')) throw ApplicationFailure.retryable('bus down', 'BusDown')
      },
    })

    const { result } = await runOnWorker(stub.activities, p)

    expect((await result).tally).toEqual({ outcomes: { pass: 4 }, not_executed: 0 })
    // retry policy: maximumAttempts 5 for the failing batch, then one activity per attempt
    expect(stub.batches.map((b) => b.items.map((i) => `${i.task_id}#${i.attempt}`))).toEqual([['a#0', 'a#1'], ...Array(5).fill(['flaky#0', 'flaky#1'])])
    expect(stub.attempts.map((c) => `${c.input.task_id}#${c.input.attempt}`)).toEqual(['a#0', 'a#1', 'flaky#0', 'flaky#1'])
  })
})

describe('ShardWorkflow with several attempts at once per activity (attempt_lanes, issue 15)', () => {
  it('runs 40 attempts as 2 activities of 20 with 4 lanes each: every pair exactly once, max_in_flight attempts at once', async () => {
    const p = plan({ task_ids: ['a', 'b', 'c', 'd'], attempts: 10, max_in_flight: 8, attempts_per_activity: 10, attempt_lanes: 4 })
    const stub = stubActivities({ delayMs: 30, outcome: (input) => (input.attempt % 2 === 0 ? 'fail' : 'pass') })

    const { result } = await runOnWorker(stub.activities, p)

    expect((await result).tally).toEqual({ outcomes: { pass: 20, fail: 20 }, not_executed: 0 })
    // a window of 8 / 4 = 2 activities; min(10 × 4, ⌈40 / 2⌉) = 20 attempts each, 4 at once
    expect(stub.batches.map((b) => [b.items.length, b.lanes])).toEqual([[20, 4], [20, 4]])
    expect(stub.attempts.map((c) => `${c.input.task_id}#${c.input.attempt}`).sort()).toEqual(allPairs(p).sort())
    expect(stub.window.max).toBe(8)
    // 20 attempts 4 at a time: 5 rounds, each allowed one attempt's limit
    expect(stub.batchLimits).toEqual([5 * p.attempt_timeout_ms, 5 * p.attempt_timeout_ms])
  })

  it('a shard that fits in max_in_flight still runs all of it at once (activities of fewer attempts than lanes)', async () => {
    const p = plan({ task_ids: ['a', 'b', 'c', 'd', 'e'], attempts: 2, max_in_flight: 20, attempts_per_activity: 10, attempt_lanes: 10 })
    const stub = stubActivities({ delayMs: 100 })

    const { result } = await runOnWorker(stub.activities, p)

    expect((await result).tally).toEqual({ outcomes: { pass: 10 }, not_executed: 0 })
    // window 2, ⌈10 / 2⌉ = 5 per activity, each running its 5 at once
    expect(stub.batches.map((b) => [b.items.length, b.lanes])).toEqual([[5, 5], [5, 5]])
    expect(stub.window.max).toBe(10)
  })

  it('lanes are not used where a shard is too small for a batch: one attempt per activity, as before', async () => {
    const p = plan({ task_ids: ['a', 'b'], attempts: 2, max_in_flight: 200, attempts_per_activity: 10, attempt_lanes: 10 })
    const stub = stubActivities()
    const { result } = await runOnWorker(stub.activities, p)
    expect((await result).tally).toEqual({ outcomes: { pass: 4 }, not_executed: 0 })
    expect(stub.batches).toEqual([])
    expect(stub.attempts).toHaveLength(4)
  })

  it('a batch with lanes that fails after every retry falls back to one activity per attempt, lanes at a time', async () => {
    const p = plan({ task_ids: ['a', 'flaky'], attempts: 4, max_in_flight: 2, attempts_per_activity: 2, attempt_lanes: 2 })
    const stub = stubActivities({
      delayMs: 50,
      failBatch: (input) => {
        if (input.items.some((item) => item.task_id === 'flaky')) throw ApplicationFailure.retryable('bus down', 'BusDown')
      },
    })

    const { result } = await runOnWorker(stub.activities, p)

    expect((await result).tally).toEqual({ outcomes: { pass: 8 }, not_executed: 0 })
    expect(stub.attempts.map((c) => `${c.input.task_id}#${c.input.attempt}`).sort()).toEqual(allPairs(p).sort())
    expect(stub.window.max).toBe(2)
  })
})

describe('replay of committed histories', () => {
  // recorded before forge-inline-single-shard-v1, when every run's shards were children: only read now
  const files = { run: new URL('run-2x2.json', historiesDir), shard: new URL('run-2x2-shard-0.json', historiesDir) }

  it('replays the committed 2 × 2 run recorded with its shard as a child (RunWorkflow and ShardWorkflow) with the current workflow code', async () => {
    const committed = { run: readHistory(files.run), shard: readHistory(files.shard) }
    expect(committed.run.events?.length).toBeGreaterThan(10)
    expect(committed.run.events?.some((e) => e.eventType === EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED)).toBe(true)
    await Worker.runReplayHistory({ workflowBundle: bundle }, committed.run, REPLAY_WORKFLOW_ID)
    await Worker.runReplayHistory({ workflowBundle: bundle }, committed.shard, `${REPLAY_WORKFLOW_ID}/shard-0`)
  })

  it('replays the committed 2 × 2 run whose one shard ran in its own history (forge-inline-single-shard-v1)', async () => {
    // fixed ids and plan: the committed history is written once, from this run, and then only read
    const id = `${REPLAY_WORKFLOW_ID}-inline`
    const file = new URL('run-2x2-inline.json', historiesDir)
    const p = plan({ run_id: 'run-replay-2x2-inline', task_ids: ['t1', 't2'], attempts: 2 })
    const stub = stubActivities({ outcome: (i) => (i.attempt === 0 ? 'pass' : 'fail') })
    const { handle, result } = await runOnWorker(stub.activities, p, id)
    expect(await result).toEqual({ run_id: 'run-replay-2x2-inline', total: 4, tally: { outcomes: { pass: 2, fail: 2 }, not_executed: 0 }, status: 'completed', completeness: complete(4) })
    await expect(env.client.workflow.getHandle(`${id}/shard-0`).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError)

    writeHistoryOnce(file, await handle.fetchHistory())
    const committed = readHistory(file)
    const events = committed.events ?? []
    expect(events.some((e) => e.eventType === EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED)).toBe(false)
    const attempts = events.filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED && e.activityTaskScheduledEventAttributes?.activityType?.name === 'runAttempt')
    expect(attempts).toHaveLength(4)
    await Worker.runReplayHistory({ workflowBundle: bundle }, committed, id)
  })

  it('replays the committed 2 × 2 run whose completeness check recorded its final status (forge-final-record-with-check-v1)', async () => {
    // fixed ids and plan: the committed history is written once, from this run, and then only read
    const id = `${REPLAY_WORKFLOW_ID}-record-with-check`
    const file = new URL('run-2x2-record-with-check.json', historiesDir)
    const p = plan({ run_id: 'run-replay-2x2-record-with-check', task_ids: ['t1', 't2'], attempts: 2 })
    const stub = stubActivities({ recordWithCheck: true, outcome: (i) => (i.attempt === 0 ? 'pass' : 'fail') })
    const { handle, result } = await runOnWorker(stub.activities, p, id)
    expect(await result).toEqual({ run_id: 'run-replay-2x2-record-with-check', total: 4, tally: { outcomes: { pass: 2, fail: 2 }, not_executed: 0 }, status: 'completed', completeness: complete(4) })
    expect(stub.recordedBy).toEqual(['recordRunStatus', 'checkCompleteness'])

    writeHistoryOnce(file, await handle.fetchHistory())
    const committed = readHistory(file)
    const scheduled = (committed.events ?? []).filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED).map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name)
    expect(scheduled).toEqual(['recordRunStatus', 'runAttempt', 'runAttempt', 'runAttempt', 'runAttempt', 'checkCompleteness'])
    await Worker.runReplayHistory({ workflowBundle: bundle }, committed, id)
  })

  it('replays the committed shard of a run with attempt lanes (batches of several attempts at once), recorded as a child', async () => {
    const p = plan({ run_id: 'run-replay-lanes', task_ids: ['t1', 't2'], attempts: 4, max_in_flight: 4, attempts_per_activity: 2, attempt_lanes: 2 })
    const stub = stubActivities()
    const { result } = await runOnWorker(stub.activities, p, 'forge-replay-run-lanes')
    expect((await result).tally).toEqual({ outcomes: { pass: 8 }, not_executed: 0 })
    expect(stub.batches.map((b) => [b.items.length, b.lanes])).toEqual([[4, 2], [4, 2]])

    await Worker.runReplayHistory({ workflowBundle: bundle }, readHistory(new URL('run-lanes-shard-0.json', historiesDir)), 'forge-replay-run-lanes/shard-0')
  })

  it('the replay check fails for workflow code that would break that history', async () => {
    const history = readHistory(files.run)
    const broken = await bundleWorkflowCode({ workflowsPath: brokenWorkflowsPath, logger: quiet })
    await expect(Worker.runReplayHistory({ workflowBundle: broken }, history, REPLAY_WORKFLOW_ID)).rejects.toThrow(/nondetermin/i)
  })
})
