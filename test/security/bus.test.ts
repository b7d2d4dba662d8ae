/**
 * Issue 10: the bus and the store accept only Forge's own components. On the real embedded stack:
 * the nats-server refuses a client without credentials; each role may do only its part; a result
 * that is unsigned, signed for another attempt or with another key is rejected by the ingester, and
 * a forged message sent first under the genuine attempt's plain msg id cannot displace the genuine
 * result (its msg id carries a keyed tag the forger cannot compute).
 */
import { statSync } from 'node:fs'
import { join } from 'node:path'
import { connect, headers, type NatsConnection } from '@nats-io/transport-node'
import { jetstream } from '@nats-io/jetstream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { setTimeout as sleep } from 'node:timers/promises'
import type { AttemptResult } from '../../core/contracts/index.js'
import { openReader } from '../../app/store-access.js'
import { readBusSecrets, secretsFile, signMessage, SIGNATURE_HEADER, type BusRole } from '../../store/bus-auth.js'
import { connectBus, encodeJson, publishAttemptResult, subjects } from '../../store/bus.js'
import { startTestStack, type TestStack } from '../helpers/stack.js'

let stack: TestStack
const open: NatsConnection[] = []

beforeAll(async () => {
  stack = await startTestStack('bus')
}, 120_000)
afterAll(async () => {
  for (const nc of open) await nc.close().catch(() => undefined)
  await stack?.down()
})

/** A client with a role's credentials read straight from the secrets file, and nothing else (no results key). */
async function asRole(role: BusRole): Promise<NatsConnection> {
  const { user, password } = readBusSecrets(stack.home)!.users[role]
  const nc = await connect({ servers: stack.endpoints.natsUrl, user, pass: password })
  open.push(nc)
  return nc
}

function result(uid: string, outcome: AttemptResult['outcome']): AttemptResult {
  const [run_id, config_id, task_id, attempt] = uid.split('/') as [string, string, string, string]
  return {
    attempt_uid: uid, run_id, config_id, suite: 'smoke', task_id, attempt: Number(attempt), adapter: 'subprocess', outcome, validity: 'valid',
    failure_bucket: outcome === 'pass' ? null : 'refusal', budget_limit: null, grades: [], invariants: [], instruction: 'i', output: outcome === 'pass' ? 'the answer' : 'I give up',
    self_report: '', error: '', cost_usd: null, latency_ms: 1, tool_call_count: 0, input_tokens: 0, output_tokens: 0, model: 'm', decoding: {},
    price_table_version: '', seed: '1', worker_id: 'w', started_at: 1_764_470_000_000, finished_at: 1_764_470_000_001, tool_calls: [],
  }
}

async function storedOutcomes(runId: string, expected: number): Promise<Record<string, string>> {
  const reader = await openReader(stack.config)
  try {
    for (let i = 0; i < 100; i += 1) {
      const rows = await reader.query<{ attempt_uid: string; outcome: string }>('SELECT attempt_uid, outcome FROM attempts FINAL WHERE run_id = {run:String} ORDER BY attempt_uid', { run: runId })
      if (rows.length >= expected) return Object.fromEntries(rows.map((r) => [r.attempt_uid, r.outcome]))
      await sleep(100)
    }
    return {}
  } finally {
    await reader.close()
  }
}

async function rejectedSoFar(): Promise<number> {
  const nc = await asRole('cli')
  return (await nc.request(subjects.ingesterPing, new Uint8Array(), { timeout: 2000 })).json<{ stats: { rejected: number } }>().stats.rejected
}

describe('the embedded bus', () => {
  it('keeps its credentials and results key in FORGE_HOME, readable by its owner only', () => {
    expect((statSync(secretsFile(stack.home)).mode & 0o777).toString(8)).toBe('600')
    expect((statSync(join(stack.home, 'secrets')).mode & 0o777).toString(8)).toBe('700')
    expect((statSync(join(stack.home, 'nats.conf')).mode & 0o777).toString(8)).toBe('600')
    expect(readBusSecrets(stack.home)!.results_key).toMatch(/^[0-9a-f]{64}$/)
  })

  it('refuses a client without credentials, or with a wrong password', async () => {
    await expect(connect({ servers: stack.endpoints.natsUrl })).rejects.toThrow(/authoriz/i)
    await expect(connect({ servers: stack.endpoints.natsUrl, user: 'forge-worker', pass: 'guessed' })).rejects.toThrow(/authoriz/i)
  })

  it('lets each role do only its part', async () => {
    const worker = await asRole('worker')
    // a worker cannot consume the results stream in the ingester's place
    await expect(worker.request('$JS.API.CONSUMER.MSG.NEXT.FORGE_RESULTS.forge-ingester', encodeJson({ batch: 1 }), { timeout: 1500 })).rejects.toThrow(/permission|timeout|no responders/i)
    const cli = await asRole('cli')
    // the CLI cannot publish attempt results
    await expect(jetstream(cli).publish(subjects.attempt, encodeJson({}), { timeout: 1500 })).rejects.toThrow(/permission|timeout/i)
    // and neither may subscribe to the store's queries and answer them in the ingester's place
    const sub = worker.subscribe(subjects.storeQuery)
    await expect(sub.closed).resolves.toBeInstanceOf(Error)
  })
})

describe('signed results', () => {
  it('a forged result sent first under the genuine msg id cannot displace the genuine one', async () => {
    const before = await rejectedSoFar()
    // an attacker with a worker's NATS credentials but not the results key
    const attacker = jetstream(await asRole('worker'))
    const uid = 'forged-run/c0/t1/0'
    await attacker.publish(subjects.attempt, encodeJson(result(uid, 'pass')), { msgID: uid })
    // the genuine worker: signed, under its keyed msg id
    const genuine = jetstream(await connectBus(stack.endpoints.natsUrl, 'genuine-worker', 'worker'))
    expect(await publishAttemptResult(genuine, result(uid, 'fail'))).toEqual({ duplicate: false })
    expect(await storedOutcomes('forged-run', 1)).toEqual({ [uid]: 'fail' })
    expect(await rejectedSoFar()).toBe(before + 1)
  })

  it('rejects a genuine signature moved to another attempt, and a signature under another key', async () => {
    const before = await rejectedSoFar()
    const js = jetstream(await asRole('worker'))
    const key = readBusSecrets(stack.home)!.results_key
    const signed = (value: AttemptResult, signingKey: string) => {
      const h = headers()
      h.set(SIGNATURE_HEADER, signMessage(signingKey, value.run_id, subjects.attempt, encodeJson(value)))
      return h
    }
    // the genuine signature of attempt 0, on a copy that claims to be attempt 1
    const original = result('replay-run/c0/t1/0', 'fail')
    const replayed = result('replay-run/c0/t1/1', 'pass')
    await js.publish(subjects.attempt, encodeJson(replayed), { msgID: 'replay-1', headers: signed(original, key) })
    await js.publish(subjects.attempt, encodeJson(result('replay-run/c0/t1/2', 'pass')), { msgID: 'replay-2', headers: signed(result('replay-run/c0/t1/2', 'pass'), 'ab'.repeat(32)) })
    // and the genuine one, which is stored
    await publishAttemptResult(jetstream(await connectBus(stack.endpoints.natsUrl, 'genuine-worker-2', 'worker')), original)
    expect(await storedOutcomes('replay-run', 1)).toEqual({ 'replay-run/c0/t1/0': 'fail' })
    expect(await rejectedSoFar()).toBe(before + 2)
  })
})
