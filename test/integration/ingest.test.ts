/** The results path alone: JetStream → ingester → chDB, with duplicates and malformed messages. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { setTimeout as sleep } from 'node:timers/promises'
import { StoredTrace, type AttemptResult } from '../../core/contracts/index.js'
import { attemptKeyOf } from '../../core/identity.js'
import { wellFormed } from '../../core/well-formed.js'
import { jetstreamManager } from '@nats-io/jetstream'
import { openReader } from '../../app/store-access.js'
import { jetstream } from '@nats-io/jetstream'
import { attemptMessageOf, connectBus, encodeJson, progressEventsOf, publishAttempt, publishAttemptResult, publishResult, readStoredTrace, RESULTS_STREAM, resultsKey, subjects, type NatsConnection } from '../../store/bus.js'
import { attemptScopeOf, type AttemptScope } from '../../core/run-scope.js'
import { grantOf } from '../../store/grants.js'
import { MockActivityEnvironment } from '@temporalio/testing'
import { createActivities } from '../../workers/activities.js'
import type { AttemptBatchInput, AttemptSummary } from '../../workers/activity-types.js'
import { createLogger } from '../../engine/logger.js'
import { LIMITS } from '../../engine/attempt-runner.js'
import { packageRoot } from '../../stack/paths.js'
import { join } from 'node:path'
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { attempt } from '../helpers/attempts.js'
import { startTestStack, type TestStack } from '../helpers/stack.js'

let stack: TestStack
let nc: NatsConnection

beforeAll(async () => {
  stack = await startTestStack('ingest')
  // publishes results as a worker does: with the worker's credentials, signed
  nc = await connectBus(stack.endpoints.natsUrl, 'ingest-test', 'worker')
})
afterAll(async () => {
  await nc?.drain()
  await stack?.down()
})

async function countRows(runId: string): Promise<{ final: number; uids: number }> {
  const reader = await openReader(stack.config)
  try {
    const [row] = await reader.query<{ n: string; u: string }>(
      'SELECT count() AS n, uniqExact(attempt_uid) AS u FROM attempts FINAL WHERE run_id = {run:String}',
      { run: runId },
    )
    return { final: Number(row!.n), uids: Number(row!.u) }
  } finally {
    await reader.close()
  }
}

async function waitForRows(runId: string, expected: number): Promise<{ final: number; uids: number }> {
  let counts = await countRows(runId)
  for (let i = 0; i < 100 && counts.final < expected; i++) {
    await sleep(100)
    counts = await countRows(runId)
  }
  return counts
}

/** How many messages the ingester has rejected since it started (its ping answer). */
async function rejectedSoFar(): Promise<number> {
  return (await nc.request(subjects.ingesterPing, new Uint8Array(), { timeout: 2000 })).json<{ stats: { rejected: number } }>().stats.rejected
}

/** The rows `sql` reads once there are at least `atLeast` of them (the ingester's grading lane lags its attempt rows), or after 10 s. */
async function rowsOnceThere<T>(sql: string, atLeast: number): Promise<T[]> {
  const reader = await openReader(stack.config)
  try {
    let rows = await reader.query<T>(sql)
    for (let i = 0; i < 100 && rows.length < atLeast; i++) {
      await sleep(100)
      rows = await reader.query<T>(sql)
    }
    return rows
  } finally {
    await reader.close()
  }
}

/** an attempt of the smoke suite's echo_greeting, as a shard hands it to the attempt activity */
/** an attempt input granted as a planner grants it (store/grants.ts): the worker's activities check it under the stack's key */
const granted = <T extends AttemptScope>(input: T): T & { grant?: string } => {
  const key = resultsKey()
  return key === undefined ? input : { ...input, grant: grantOf(key, 'attempts', attemptScopeOf(input)) }
}

const echoInput = (runId: string, overrides: { suite_path?: string; adapter?: string; adapter_config?: Record<string, unknown> } = {}) =>
  granted({
    run_id: runId,
    config_id: 'c0',
    suite: 'smoke',
    suite_path: join(packageRoot(), 'suites', 'smoke'),
    adapter: 'mock',
    adapter_config: {},
    seed: 'x',
    task_id: 'echo_greeting',
    attempt: 0,
    ...overrides,
  })

/** messages the results stream holds on each of the given subjects */
async function held(...names: string[]): Promise<number[]> {
  const info = await (await jetstreamManager(nc)).streams.info(RESULTS_STREAM, { subjects_filter: 'forge.results.>' })
  const bySubject = (info.state.subjects ?? {}) as Record<string, number>
  return names.map((name) => bySubject[name] ?? 0)
}

describe('ingest', () => {
  it('drops a second publish with the same attempt_uid at JetStream', async () => {
    const js = jetstream(nc)
    const first = await publishAttemptResult(js, attempt('dup-js', 'a', 0))
    const second = await publishAttemptResult(js, attempt('dup-js', 'a', 0))
    expect([first.duplicate, second.duplicate]).toEqual([false, true])
    expect(await waitForRows('dup-js', 1)).toEqual({ final: 1, uids: 1 })
  })

  it('stores one row when the same attempt arrives twice past JetStream dedup (different msg ids)', async () => {
    const js = jetstream(nc)
    const a = attempt('dup-ch', 'a', 0)
    await publishResult(js, subjects.attempt, a, 'delivery-1', a.run_id)
    await sleep(300)
    await publishResult(js, subjects.attempt, { ...a, worker_id: 'second' }, 'delivery-2', a.run_id)
    await publishResult(js, subjects.attempt, attempt('dup-ch', 'b', 0), 'delivery-3', 'dup-ch')
    expect(await waitForRows('dup-ch', 2)).toEqual({ final: 2, uids: 2 })
  })

  it('rejects a malformed message without losing the good ones around it', async () => {
    const js = jetstream(nc)
    await js.publish(subjects.attempt, encodeJson({ attempt_uid: 'bad', outcome: 'maybe' }), { msgID: 'bad-1' })
    await js.publish(subjects.attempt, new TextEncoder().encode('{not json'), { msgID: 'bad-2' })
    await publishAttemptResult(js, attempt('mixed', 'a', 0))
    await publishAttemptResult(js, attempt('mixed', 'a', 1))
    expect(await waitForRows('mixed', 2)).toEqual({ final: 2, uids: 2 })
    const pong = await nc.request(subjects.ingesterPing, new Uint8Array(), { timeout: 2000 })
    expect(pong.json<{ stats: { rejected: number } }>().stats.rejected).toBeGreaterThanOrEqual(2)
  })

  it('stores a result holding half a UTF-16 pair, and the good ones of its batch (one bad escape no longer fails the insert)', async () => {
    const js = jetstream(nc)
    // published as is, as a worker of an older build would: JSON.stringify writes "\ud800"
    await publishAttemptResult(js, attempt('half-pair', 'a', 0, { output: 'half \ud800 pair' }))
    await publishAttemptResult(js, attempt('half-pair', 'b', 0))
    expect(await waitForRows('half-pair', 2)).toEqual({ final: 2, uids: 2 })
    const reader = await openReader(stack.config)
    try {
      const rows = await reader.query<{ task_id: string; output: string }>("SELECT task_id, output FROM attempts FINAL WHERE run_id = 'half-pair' ORDER BY task_id")
      // ClickHouse keeps the escape it cannot decode as its text
      expect(rows).toEqual([
        { task_id: 'a', output: 'half \\ud800 pair' },
        { task_id: 'b', output: 'hi' },
      ])
    } finally {
      await reader.close()
    }
  })

  it('rejects the one message whose value the store refuses, and stores the rest of its batch', async () => {
    const js = jetstream(nc)
    const rejectedBefore = await rejectedSoFar()
    // a valid result whose start lies in the year 10000, which no DateTime64 column takes
    await publishAttemptResult(js, attempt('refused-value', 'a', 0, { started_at: 253_402_300_800_000 }))
    await publishAttemptResult(js, attempt('refused-value', 'b', 0))
    await publishAttemptResult(js, attempt('refused-value', 'c', 0))
    expect(await waitForRows('refused-value', 2)).toEqual({ final: 2, uids: 2 })
    const reader = await openReader(stack.config)
    try {
      expect(await reader.query("SELECT task_id FROM attempts FINAL WHERE run_id = 'refused-value' ORDER BY task_id")).toEqual([{ task_id: 'b' }, { task_id: 'c' }])
    } finally {
      await reader.close()
    }
    const rejected = await rejectedSoFar()
    expect(rejected - rejectedBefore).toBe(1)
  })

  it('rejects a signed result with a count past UInt32 (the store would keep it wrapped to a small number), and stores the rest', async () => {
    const js = jetstream(nc)
    const rejectedBefore = await rejectedSoFar()
    // 2^32 + 3 tool calls would be stored as 3 by the UInt32 column
    await publishAttemptResult(js, attempt('uint32-wrap', 'a', 0, { tool_call_count: 2 ** 32 + 3 }))
    await publishAttemptResult(js, attempt('uint32-wrap', 'b', 0))
    expect(await waitForRows('uint32-wrap', 1)).toEqual({ final: 1, uids: 1 })
    const reader = await openReader(stack.config)
    try {
      expect(await reader.query("SELECT task_id FROM attempts FINAL WHERE run_id = 'uint32-wrap'")).toEqual([{ task_id: 'b' }])
    } finally {
      await reader.close()
    }
    expect((await rejectedSoFar()) - rejectedBefore).toBe(1)
  })

  it('rejects the one grading message whose value the store refuses, and stores the rest of its round', async () => {
    const activities = createActivities({ nc, js: jetstream(nc), workerId: 'template', logger: createLogger('test') })
    await activities.runAttempt(echoInput('refused-grading-template'))
    const template = StoredTrace.parse(await readStoredTrace(nc, 'refused-grading-template/c0/echo_greeting/0'))
    const rejectedBefore = await rejectedSoFar()
    const js = jetstream(nc)
    const [a, b] = [attempt('refused-grading', 'a', 0), attempt('refused-grading', 'b', 0)]
    // a's trace was stored "in the year 10000": its attempt row goes in, its trace row cannot
    await publishAttempt(js, attemptMessageOf(a, { ...template, ...attemptKeyOf(a), stored_at: 253_402_300_800_000 }), 1_000_000)
    await publishAttempt(js, attemptMessageOf(b, { ...template, ...attemptKeyOf(b) }), 1_000_000)
    expect(await waitForRows('refused-grading', 2)).toEqual({ final: 2, uids: 2 })
    expect(await rowsOnceThere("SELECT task_id FROM traces FINAL WHERE run_id = 'refused-grading' ORDER BY task_id", 1)).toEqual([{ task_id: 'b' }])
    const rejected = await rejectedSoFar()
    expect(rejected - rejectedBefore).toBe(1)
  })

  it("stores an agent's half UTF-16 pairs as U+FFFD everywhere: output, self-report, tool arguments and results, trace", async () => {
    const activities = createActivities({ nc, js: jetstream(nc), workerId: 'half-pair-agent', logger: createLogger('test') })
    const summary = await activities.runAttempt(echoInput('half-pair-agent', { adapter: 'subprocess', adapter_config: { command: ['node', join(packageRoot(), 'test', 'adapters', 'agents', 'lone-surrogate.mjs')] } }))
    expect(summary.outcome).toBe('fail')
    expect(await waitForRows('half-pair-agent', 1)).toEqual({ final: 1, uids: 1 })
    const reader = await openReader(stack.config)
    try {
      const [row] = await reader.query<{ output: string; self_report: string }>("SELECT output, self_report FROM attempts FINAL WHERE run_id = 'half-pair-agent'")
      expect(row).toEqual({ output: 'echo: half \ufffd pair', self_report: 'low \ufffd half' })
      const calls = await reader.query<{ args: string; result: string }>("SELECT args, result FROM tool_calls FINAL WHERE run_id = 'half-pair-agent'")
      expect(calls).toEqual([{ args: JSON.stringify({ message: 'half \ufffd pair' }), result: JSON.stringify('echo: half \ufffd pair') }])
      const stored = await rowsOnceThere<{ stored: string }>("SELECT stored FROM traces FINAL WHERE run_id = 'half-pair-agent'", 1)
      expect(stored).toHaveLength(1)
      expect(stored[0]!.stored).toContain('half \ufffd pair')
      // no string of the stored trace holds half a pair (a grader's detail may quote the agent's text as JSON: that is text)
      const parsed: unknown = JSON.parse(stored[0]!.stored)
      expect(wellFormed(parsed)).toBe(parsed)
    } finally {
      await reader.close()
    }
  })

  it('stores one row when an attempt activity executes twice (at-least-once delivery)', async () => {
    const activities = createActivities({ nc, js: jetstream(nc), workerId: 'twice', logger: createLogger('test') })
    const input = echoInput('twice')
    const first = await activities.runAttempt(input)
    const second = await activities.runAttempt(input)
    expect(second).toEqual(first)
    expect(await waitForRows('twice', 1)).toEqual({ final: 1, uids: 1 })
  })

  it('answers a store query larger than one bus message in parts, and keeps ingesting after it', async () => {
    const reader = await openReader(stack.config)
    try {
      // ~12 MB of rows: over the embedded bus's 8 MB max_payload (a 100,000-attempt run's audit heads are ~18 MB)
      const rows = await reader.query<{ n: number; s: string }>("SELECT number AS n, repeat('x', 1000) AS s FROM numbers(12000) ORDER BY n")
      expect(rows.length).toBe(12_000)
      expect(rows.at(-1)).toEqual({ n: 11_999, s: 'x'.repeat(1000) })
    } finally {
      await reader.close()
    }
    await publishAttemptResult(jetstream(nc), attempt('after-big-query', 'a', 0))
    expect(await waitForRows('after-big-query', 1)).toEqual({ final: 1, uids: 1 })
  })
})

describe('a batch activity with attempt lanes (issue 15)', () => {
  const batch = (runId: string, count: number, lanes: number): AttemptBatchInput => ({
    base: granted({ run_id: runId, config_id: 'c0', suite: 'smoke', suite_path: join(packageRoot(), 'suites', 'smoke'), adapter: 'mock', adapter_config: { delay_ms: 300 }, seed: 'x' }),
    items: Array.from({ length: count }, (_, attempt) => ({ task_id: 'echo_greeting', attempt })),
    lanes,
  })

  /** the most attempts of a run whose [started_at, finished_at] overlap at one instant */
  async function mostAtOnce(runId: string): Promise<number> {
    const reader = await openReader(stack.config)
    try {
      const rows = await reader.query<{ s: string; f: string }>(
        'SELECT toUnixTimestamp64Milli(started_at) AS s, toUnixTimestamp64Milli(finished_at) AS f FROM attempts FINAL WHERE run_id = {run:String}',
        { run: runId },
      )
      const edges = rows.flatMap((r) => [[Number(r.s), 1], [Number(r.f), -1]] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1])
      let open = 0
      let most = 0
      for (const [, step] of edges) most = Math.max(most, (open += step))
      return most
    } finally {
      await reader.close()
    }
  }

  it('runs lanes attempts at once, never more than the worker\'s attempt slots, and returns the summaries in item order', async () => {
    const wide = createActivities({ nc, js: jetstream(nc), workerId: 'lanes', logger: createLogger('test') })
    const summaries: AttemptSummary[] = await new MockActivityEnvironment().run(wide.runAttempts, batch('lanes-3', 6, 3))
    expect(summaries.map((s) => s.attempt_uid)).toEqual(Array.from({ length: 6 }, (_, i) => `lanes-3/c0/echo_greeting/${i}`))
    expect(await waitForRows('lanes-3', 6)).toEqual({ final: 6, uids: 6 })
    expect(await mostAtOnce('lanes-3')).toBe(3)

    // two slots for the worker: a batch of 3 lanes runs 2 at once (the third waits for a slot)
    const narrow = createActivities({ nc, js: jetstream(nc), workerId: 'lanes', logger: createLogger('test'), attemptSlots: 2 })
    await new MockActivityEnvironment().run(narrow.runAttempts, batch('lanes-slots', 6, 3))
    expect(await waitForRows('lanes-slots', 6)).toEqual({ final: 6, uids: 6 })
    expect(await mostAtOnce('lanes-slots')).toBe(2)
  })

  it("sends a batch's progress events before the activity returns, in one message (issue 15)", async () => {
    const bodies: unknown[] = []
    // forge run's side (a worker may publish progress, not read it)
    const cli = await connectBus(stack.endpoints.natsUrl, 'progress-reader', 'cli')
    const sub = cli.subscribe(subjects.progress('lanes-progress'), { callback: (error, msg) => void (error ? undefined : bodies.push(msg.json())) })
    await cli.flush()
    // a window no test waits out: only the activity's own end can send them
    const activities = createActivities({ nc, js: jetstream(nc), workerId: 'lanes', logger: createLogger('test'), progressWindowMs: 600_000 })
    await new MockActivityEnvironment().run(activities.runAttempts, batch('lanes-progress', 4, 2))
    // once the server answered the worker's ping it has queued what the worker published before it for
    // the reader, and it answers the reader's ping after that
    await nc.flush()
    await cli.flush()
    sub.unsubscribe()
    await cli.drain()
    expect(bodies).toHaveLength(1)
    expect(progressEventsOf(bodies[0]).map((e) => e.attempt_uid).sort()).toEqual(Array.from({ length: 4 }, (_, i) => `lanes-progress/c0/echo_greeting/${i}`))
  })

  it('a retry runs only the attempts its last heartbeat did not name as done, whichever lane finished them', async () => {
    const activities = createActivities({ nc, js: jetstream(nc), workerId: 'lanes', logger: createLogger('test') })
    // the earlier try finished items 0 and 2 (published then; here a marker stands for their summaries)
    const earlier = (attempt: number): AttemptSummary => ({ attempt_uid: `lanes-resume/c0/echo_greeting/${attempt}`, outcome: 'earlier-try', failure_bucket: null })
    const env = new MockActivityEnvironment({ attempt: 2, heartbeatTimeoutMs: 30_000, heartbeatDetails: [earlier(0), null, earlier(2), null] })
    const beats: unknown[] = []
    env.on('heartbeat', (details: unknown) => beats.push(structuredClone(details)))
    const summaries: AttemptSummary[] = await env.run(activities.runAttempts, batch('lanes-resume', 4, 2))
    expect(summaries.map((s) => s.attempt_uid)).toEqual(Array.from({ length: 4 }, (_, i) => `lanes-resume/c0/echo_greeting/${i}`))
    expect(summaries.map((s) => s.outcome === 'earlier-try')).toEqual([true, false, true, false])
    // only items 1 and 3 ran this try: the store has their rows and no others
    expect(await waitForRows('lanes-resume', 2)).toEqual({ final: 2, uids: 2 })
    await sleep(500)
    expect(await countRows('lanes-resume')).toEqual({ final: 2, uids: 2 })
    // the first heartbeat hands the resumed summaries on (a third try would skip them too)
    expect(beats[0]).toEqual([earlier(0), null, earlier(2), null])
  })

  it('after a failure no lane starts another attempt; the activity fails once the running ones ended, heartbeating them as done', async () => {
    const activities = createActivities({ nc, js: jetstream(nc), workerId: 'lanes', logger: createLogger('test') })
    const input = batch('lanes-fail', 4, 2)
    // item 1 names a task the suite does not have: its attempt fails (non-retryable) while item 0 runs
    input.items[1] = { task_id: 'no_such_task', attempt: 1 }
    const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 30_000 })
    const beats: unknown[] = []
    env.on('heartbeat', (details: unknown) => beats.push(structuredClone(details)))
    await expect(env.run(activities.runAttempts, input)).rejects.toThrow(/no task "no_such_task"/)
    // item 0 was running when item 1 failed: it finished and is stored; items 2 and 3 never started
    expect(await waitForRows('lanes-fail', 1)).toEqual({ final: 1, uids: 1 })
    const last = beats.at(-1) as (AttemptSummary | null)[]
    expect(last.map((s) => s?.attempt_uid ?? null)).toEqual(['lanes-fail/c0/echo_greeting/0', null, null, null])
  })
})

describe("an attempt's one message: its result with its trace inside (issue 15)", () => {
  const uidOf = (runId: string) => `${runId}/c0/echo_greeting/0`

  async function storedTraces(runId: string): Promise<number> {
    const reader = await openReader(stack.config)
    try {
      const [row] = await reader.query<{ n: string }>('SELECT count() AS n FROM traces FINAL WHERE run_id = {run:String}', { run: runId })
      return Number(row!.n)
    } finally {
      await reader.close()
    }
  }

  async function waitForTraces(runId: string, expected: number): Promise<number> {
    let n = await storedTraces(runId)
    for (let i = 0; i < 100 && n < expected; i++) {
      await sleep(100)
      n = await storedTraces(runId)
    }
    return n
  }

  it('an attempt activity publishes one message, on its own subject; the ingester stores its row and its trace, and the judge reads the trace back by uid', async () => {
    const activities = createActivities({ nc, js: jetstream(nc), workerId: 'one-message', logger: createLogger('test') })
    await activities.runAttempt(echoInput('one-msg'))
    const uid = uidOf('one-msg')
    expect(await held(subjects.attemptOf(uid), subjects.trace(uid))).toEqual([1, 0])
    expect(await waitForRows('one-msg', 1)).toEqual({ final: 1, uids: 1 })
    expect(await waitForTraces('one-msg', 1)).toBe(1)
    const trace = StoredTrace.parse(await readStoredTrace(nc, uid))
    expect(trace.attempt_uid).toBe(uid)
    expect(trace.trace.tool_calls.length).toBeGreaterThan(0)
  })

  it('a result and trace too big for one message travel as two, each stored, the trace still read back by uid', async () => {
    const activities = createActivities({ nc, js: jetstream(nc), workerId: 'template', logger: createLogger('test') })
    await activities.runAttempt(echoInput('two-msg-template'))
    const template = StoredTrace.parse(await readStoredTrace(nc, uidOf('two-msg-template')))
    const result = attempt('two-msg', 'echo_greeting', 0)
    const trace = { ...template, ...attemptKeyOf(result) }
    expect(await publishAttempt(jetstream(nc), attemptMessageOf(result, trace), 2_000)).toEqual({ messages: 2 })
    expect(await held(subjects.attemptOf(result.attempt_uid), subjects.trace(result.attempt_uid))).toEqual([0, 1])
    expect(await waitForRows('two-msg', 1)).toEqual({ final: 1, uids: 1 })
    expect(await waitForTraces('two-msg', 1)).toBe(1)
    expect(StoredTrace.parse(await readStoredTrace(nc, result.attempt_uid)).attempt_uid).toBe(result.attempt_uid)
    // the same pair within the limit: one message
    const fits = attempt('two-msg', 'echo_greeting', 1)
    expect(await publishAttempt(jetstream(nc), attemptMessageOf(fits, { ...template, ...attemptKeyOf(fits) }), 1_000_000)).toEqual({ messages: 1 })
    expect(await waitForRows('two-msg', 2)).toEqual({ final: 2, uids: 2 })
  })

  it("rejects a signed message whose trace is another attempt's, or that sits under another attempt's subject, and stores the good one after them", async () => {
    const activities = createActivities({ nc, js: jetstream(nc), workerId: 'template', logger: createLogger('test') })
    await activities.runAttempt(echoInput('mixed-msg-template'))
    const template = StoredTrace.parse(await readStoredTrace(nc, uidOf('mixed-msg-template')))
    const rejectedBefore = await rejectedSoFar()
    const js = jetstream(nc)
    const a = attempt('mixed-msg', 'a', 0)
    const b = attempt('mixed-msg', 'b', 0)
    // a's result carrying b's trace, on a's subject
    await publishResult(js, subjects.attemptOf(a.attempt_uid), { ...a, stored_trace: { ...template, ...attemptKeyOf(b) } }, 'mixed-1', a.run_id)
    // a's result and trace, filed under b's subject (it would hide b's trace from the judge)
    await publishResult(js, subjects.attemptOf(b.attempt_uid), { ...a, stored_trace: { ...template, ...attemptKeyOf(a) } }, 'mixed-2', a.run_id)
    const good = attempt('mixed-msg', 'c', 0)
    await publishAttempt(js, attemptMessageOf(good, { ...template, ...attemptKeyOf(good) }), 1_000_000)
    expect(await waitForRows('mixed-msg', 1)).toEqual({ final: 1, uids: 1 })
    expect(await waitForTraces('mixed-msg', 1)).toBe(1)
    const rejected = await rejectedSoFar()
    expect(rejected - rejectedBefore).toBe(2)
  })
})

describe('an attempt too big to go whole (issue 15)', () => {
  it('cuts the stored trace to its limit (marked), keeps the result as the attempt made it, and sends the pair as one message once it fits', async () => {
    const suite = mkdtempSync(join(tmpdir(), 'forge-big-'))
    cpSync(join(packageRoot(), 'suites', 'smoke'), suite, { recursive: true })
    const task = join(suite, 'tasks', 'echo_greeting.yaml')
    // the echo tool answers with the message: a 1.2 MB answer, over the stored trace's 960 KiB
    writeFileSync(task, readFileSync(task, 'utf8').replace('message: hello forge', `message: "${'x'.repeat(1_200_000)}"`))
    const activities = createActivities({ nc, js: jetstream(nc), workerId: 'big', logger: createLogger('test') })
    await activities.runAttempt(echoInput('big-msg', { suite_path: suite, adapter_config: { skill: 1 } }))
    const uid = 'big-msg/c0/echo_greeting/0'
    expect(await held(subjects.attemptOf(uid), subjects.trace(uid))).toEqual([1, 0])
    const trace = StoredTrace.parse(await readStoredTrace(nc, uid))
    expect(trace.truncated).toContain('output')
    expect(await waitForRows('big-msg', 1)).toEqual({ final: 1, uids: 1 })
    const reader = await openReader(stack.config)
    try {
      const read = () =>
        reader.query<{ output: string; truncated: string[] }>(
          'SELECT length(a.output) AS output, t.truncated AS truncated FROM attempts AS a FINAL INNER JOIN traces AS t FINAL ON t.attempt_uid = a.attempt_uid WHERE a.run_id = {run:String}',
          { run: 'big-msg' },
        )
      let rows = await read()
      // the trace row goes in with the grading rows, up to half a second after the attempt row
      for (let i = 0; i < 100 && rows.length === 0; i++) {
        await sleep(100)
        rows = await read()
      }
      // the attempt's own output limit (16 KiB), nothing cut beyond it
      expect(rows.map((r) => ({ output: Number(r.output) >= LIMITS.outputBytes, truncated: r.truncated.includes('output') }))).toEqual([{ output: true, truncated: true }])
    } finally {
      await reader.close()
    }
  })
})
