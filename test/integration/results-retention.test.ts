/**
 * The results stream keeps only what the store does not hold yet (and, for FORGE_RESULTS_KEEP
 * seconds, what it does): on the real embedded stack with FORGE_RESULTS_KEEP=0, the ingester trims
 * every stored message off the stream, never one it has not stored (its process stopped: the
 * messages wait, whole), a late republish is still dropped as a duplicate, and the judge reads a
 * trimmed attempt's trace from the store.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { jetstreamManager } from '@nats-io/jetstream'
import { MockActivityEnvironment } from '@temporalio/testing'
import type { JudgeSettings } from '../../core/contracts/index.js'
import { attemptScopeOf, judgeScopeOf } from '../../core/run-scope.js'
import { openReader } from '../../app/store-access.js'
import { jetstream } from '@nats-io/jetstream'
import { connectBus, readStoredTrace, RESULTS_STREAM, resultsKey, subjects, type NatsConnection } from '../../store/bus.js'
import { getStoredTrace } from '../../store/grading-repositories.js'
import { grantOf } from '../../store/grants.js'
import { trimResultsStream } from '../../store/results-retention.js'
import { createLogger } from '../../engine/logger.js'
import { readStackState } from '../../stack/local-stack.js'
import { packageRoot } from '../../stack/paths.js'
import { createActivities } from '../../workers/activities.js'
import { createJudgeActivities } from '../../workers/judge/activities.js'
import { waitFor } from '../helpers/fleet.js'
import { forgeAsync, startTestStack, type TestStack } from '../helpers/stack.js'

let stack: TestStack
let nc: NatsConnection

beforeAll(async () => {
  stack = await startTestStack('retention', { FORGE_RESULTS_KEEP: '0' })
  nc = await connectBus(stack.endpoints.natsUrl, 'retention-test', 'worker')
})
afterAll(async () => {
  await nc?.drain()
  await stack?.down()
})

const logger = createLogger('retention-test', 'silent')

/** an attempt of the smoke suite's echo_greeting, granted as a planner grants it */
function attemptInput(runId: string, attempt: number) {
  const input = { run_id: runId, config_id: 'c0', suite: 'smoke', suite_path: join(packageRoot(), 'suites', 'smoke'), adapter: 'mock', adapter_config: {}, seed: 'x', task_id: 'echo_greeting', attempt }
  return { ...input, grant: grantOf(resultsKey()!, 'attempts', attemptScopeOf(input)) }
}

/** runs `count` attempts through the worker's activity (one message each on the results stream); their uids */
async function runAttempts(runId: string, count: number): Promise<string[]> {
  const activities = createActivities({ nc, js: jetstream(nc), workerId: 'retention', logger })
  const uids: string[] = []
  for (let n = 0; n < count; n++) uids.push((await activities.runAttempt(attemptInput(runId, n))).attempt_uid)
  return uids
}

async function storedAttempts(runId: string): Promise<number> {
  const reader = await openReader(stack.config)
  try {
    const [row] = await reader.query<{ n: string }>('SELECT count() AS n FROM attempts FINAL WHERE run_id = {run:String}', { run: runId })
    return Number(row!.n)
  } finally {
    await reader.close()
  }
}

async function streamState(): Promise<{ messages: number; first_seq: number; last_seq: number }> {
  return (await (await jetstreamManager(nc)).streams.info(RESULTS_STREAM)).state
}

/** polls `check` until it holds (test/helpers/fleet.ts waitFor); the deadline only stops a broken build from hanging */
const until = (what: string, check: () => Promise<boolean>): Promise<true> => waitFor(what, async () => ((await check()) ? true : undefined), 60_000)

describe('the results stream is trimmed of what the store holds (FORGE_RESULTS_KEEP=0)', () => {
  it('trims every stored message; the store keeps them all, and a late republish is still a duplicate', async () => {
    const uids = await runAttempts('trimmed', 5)
    const last = (await streamState()).last_seq
    await until('5 attempts stored', async () => (await storedAttempts('trimmed')) === 5)
    await until('the stream trimmed past them', async () => (await streamState()).first_seq > last)
    expect(await storedAttempts('trimmed')).toBe(5)
    for (const uid of uids) expect(await readStoredTrace(nc, uid)).toBeUndefined()
    // forge stack status shows what the stream holds on the bus's disk: nothing left
    const status = await forgeAsync(['stack', 'status', '--json'], stack.env)
    expect(status.status).toBe(0)
    expect((JSON.parse(status.stdout) as { name: string; detail: string }[]).find((s) => s.name === 'nats')?.detail).toMatch(
      /^pid \d+ nats:\/\/127\.0\.0\.1:\d+; results stream 0 message\(s\), 0\.0 MiB \(stored results leave it after FORGE_RESULTS_KEEP=0 s\)$/,
    )
    // the ingester counts what it trimmed (its ping; /metrics exports the same count)
    const ping = (await nc.request(subjects.ingesterPing, new Uint8Array(), { timeout: 2_000 })).json<{ stats: { trimmed_messages: number } }>()
    expect(ping.stats.trimmed_messages).toBeGreaterThanOrEqual(5)
    // JetStream's duplicate window outlives the purge: a retried activity's republish is dropped, not stored again
    const again = await runAttempts('trimmed', 1)
    expect(again).toEqual([uids[0]])
    expect((await streamState()).last_seq).toBe(last)
    expect(await storedAttempts('trimmed')).toBe(5)
  })

  it('never trims what the store does not hold yet: with the ingester stopped, its messages wait whole, then are stored', async () => {
    const pid = readStackState(stack.home).ingester!.pid
    process.kill(pid, 'SIGSTOP')
    try {
      const before = await streamState()
      await runAttempts('waiting', 3)
      const after = await streamState()
      expect(after.last_seq).toBe(before.last_seq + 3)
      // a trim now (as the ingester's would, with its credentials) may take only what is stored
      const ingesterBus = await connectBus(stack.endpoints.natsUrl, 'retention-trim', 'ingester')
      try {
        await trimResultsStream(ingesterBus, 0)
      } finally {
        await ingesterBus.close()
      }
      const trimmed = await streamState()
      expect(trimmed.first_seq).toBeLessThanOrEqual(before.last_seq + 1)
      expect(trimmed.last_seq).toBe(after.last_seq)
      expect(trimmed.messages).toBeGreaterThanOrEqual(3)
    } finally {
      process.kill(pid, 'SIGCONT')
    }
    await until('the 3 waiting attempts stored', async () => (await storedAttempts('waiting')) === 3)
    const last = (await streamState()).last_seq
    await until('then trimmed too', async () => (await streamState()).first_seq > last)
  })

  it('the judge reads a trimmed attempt\'s trace from the store (and without a store, says it found none)', async () => {
    const [uid] = await runAttempts('judged-late', 1)
    const last = (await streamState()).last_seq
    await until('stored and trimmed', async () => (await storedAttempts('judged-late')) === 1 && (await streamState()).first_seq > last)
    expect(await readStoredTrace(nc, uid!)).toBeUndefined()
    const judge: JudgeSettings = { model: 'local', task_queue: 'forge-judge', gate: 'none', golden_divergence: true, temperature: 0, seed: 0, max_tokens: 64, response_format: 'none', max_prompt_chars: 2000, min_confidence: 0.5, timeout_ms: 10_000 }
    const scope = { run_id: 'judged-late', config_id: 'c0', suite: 'smoke', suite_path: join(packageRoot(), 'suites', 'smoke'), judge }
    const input = { ...scope, attempt_uid: uid!, task_id: 'echo_greeting', attempt: 0, golden_divergence: true, metrics: false, grant: grantOf(resultsKey()!, 'judge', judgeScopeOf(scope)) }
    const env = new MockActivityEnvironment()
    const streamOnly = createJudgeActivities({ nc, js: jetstream(nc), logger, env: {} })
    await expect(env.run(streamOnly.judgeAttempt, input)).rejects.toThrow(`no stored trace for attempt ${uid} in the results stream`)
    const reader = await openReader(stack.config)
    try {
      const judging = createJudgeActivities({ nc, js: jetstream(nc), logger, env: {}, reader })
      // no judge endpoint here: tier 2 is `errored` — it ran, on the trace the store gave back
      expect(await env.run(judging.judgeAttempt, input)).toMatchObject({ attempt_uid: uid, tier2: 'errored' })
      expect((await getStoredTrace(reader, uid!))?.attempt_uid).toBe(uid)
    } finally {
      await reader.close()
    }
  })
})
