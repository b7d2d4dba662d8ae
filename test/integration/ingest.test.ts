/** The results path alone: JetStream → ingester → chDB, with duplicates and malformed messages. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { setTimeout as sleep } from 'node:timers/promises'
import type { AttemptResult } from '../../core/contracts/index.js'
import { openReader } from '../../app/store-access.js'
import { connectBus, encodeJson, jetstream, publishAttemptResult, publishResult, subjects, type NatsConnection } from '../../store/bus.js'
import { createActivities } from '../../workers/activities.js'
import { createLogger } from '../../engine/logger.js'
import { packageRoot } from '../../stack/paths.js'
import { join } from 'node:path'
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

function attempt(runId: string, task: string, n: number, overrides: Partial<AttemptResult> = {}): AttemptResult {
  return {
    attempt_uid: `${runId}/c0/${task}/${n}`,
    run_id: runId,
    config_id: 'c0',
    suite: 'unit',
    task_id: task,
    attempt: n,
    adapter: 'mock',
    outcome: 'pass',
    validity: 'valid',
    failure_bucket: null,
    budget_limit: null,
    grades: [{ grader: 'exact', passed: true, score: 1, detail: 'ok' }],
    invariants: [],
    instruction: 'say hi',
    output: 'hi',
    self_report: '',
    error: '',
    cost_usd: null,
    latency_ms: 3,
    tool_call_count: 1,
    input_tokens: 10,
    output_tokens: 2,
    model: 'mock',
    decoding: {},
    price_table_version: '',
    seed: '1',
    worker_id: 'test',
    started_at: 1_764_470_000_000,
    finished_at: 1_764_470_000_003,
    tool_calls: [{ index: 0, name: 'echo', args: { text: 'hi' }, result: 'hi', retry_index: 0, started_ms: 0, duration_ms: 1 }],
    ...overrides,
  }
}

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

  it('stores one row when an attempt activity executes twice (at-least-once delivery)', async () => {
    const activities = createActivities({ nc, js: jetstream(nc), workerId: 'twice', logger: createLogger('test') })
    const input = {
      run_id: 'twice',
      config_id: 'c0',
      suite: 'smoke',
      suite_path: join(packageRoot(), 'suites', 'smoke'),
      adapter: 'mock',
      adapter_config: {},
      seed: 'x',
      task_id: 'echo_greeting',
      attempt: 0,
    }
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
