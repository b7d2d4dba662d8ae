/**
 * Issue 10: the bus and the store accept only Forge's own components. On the real embedded stack:
 * the nats-server refuses a client without credentials; each role may do only its part; a result
 * that is unsigned, signed for another attempt or with another key is rejected by the ingester, and
 * a forged message sent first under the genuine attempt's plain msg id cannot displace the genuine
 * result (its msg id carries a keyed tag the forger cannot compute). A fleet process (the Helm chart's
 * pods) takes its role's user and password and the results key from FORGE_NATS_USER /
 * FORGE_NATS_PASSWORD / FORGE_RESULTS_KEY alone: the real `forge` joins as that role, is refused
 * with a wrong password, and signs with the key it was given.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connect, headers, type NatsConnection } from '@nats-io/transport-node'
import { jetstream } from '@nats-io/jetstream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { setTimeout as sleep } from 'node:timers/promises'
import type { AttemptResult } from '../../core/contracts/index.js'
import { openReader } from '../../app/store-access.js'
import { readBusSecrets, secretsFile, signMessage, SIGNATURE_HEADER, type BusRole } from '../../store/bus-auth.js'
import { connectBus, encodeJson, publishAttemptResult, publishRunRecord, subjects } from '../../store/bus.js'
import { packageRoot } from '../../stack/paths.js'
import { forge, startTestStack, type TestStack } from '../helpers/stack.js'

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

  it('lets workers and the CLI ask the ingester to flush, and only the ingester listen for it', async () => {
    /** the permission errors the server sent this connection in answer to a publish (they come before the flush's PONG) */
    const publishRefusals = async (nc: NatsConnection): Promise<string[]> => {
      const seen: string[] = []
      void (async () => {
        for await (const status of nc.status()) if (status.type === 'error') seen.push(String((status as { error?: unknown }).error))
      })()
      nc.publish(subjects.ingesterFlush)
      await nc.flush()
      await sleep(50)
      return seen.filter((e) => /permission/i.test(e))
    }
    expect(await publishRefusals(await asRole('worker'))).toEqual([])
    expect(await publishRefusals(await asRole('cli'))).toEqual([])
    // the refusal path: the ingester's own user may not publish it
    expect((await publishRefusals(await asRole('ingester'))).join()).toMatch(/forge\.ingester\.flush/)
    // a worker cannot listen in on who waits for the store
    const sub = (await asRole('worker')).subscribe(subjects.ingesterFlush)
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

describe('a fleet process: its role, password and results key from the environment (the Helm chart\'s pods)', () => {
  const homes: string[] = []
  afterAll(() => {
    for (const home of homes) rmSync(home, { recursive: true, force: true })
  })

  /** A pod's environment: the servers by address, a FORGE_HOME of its own holding no secrets, and what the chart's bus Secret gives `role`. */
  function podEnv(role: BusRole, password: string, resultsKey: string): NodeJS.ProcessEnv {
    const home = mkdtempSync(join(tmpdir(), 'forge-pod-'))
    homes.push(home)
    return {
      ...stack.env,
      FORGE_HOME: home,
      FORGE_TEMPORAL_ADDRESS: stack.endpoints.temporalAddress,
      FORGE_NATS_URL: stack.endpoints.natsUrl,
      FORGE_TASK_QUEUE: 'bus-test-pod',
      FORGE_NATS_USER: readBusSecrets(stack.home)!.users[role].user,
      FORGE_NATS_PASSWORD: password,
      FORGE_RESULTS_KEY: resultsKey,
    }
  }

  const freePort = () =>
    new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number }
        server.close(() => resolve(port))
      })
    })

  it('forge worker joins as the worker user with FORGE_NATS_USER / FORGE_NATS_PASSWORD, and exits 5 naming role and user with a wrong password', async () => {
    const secrets = readBusSecrets(stack.home)!
    const refused = forge(['worker', '--concurrency', '1'], podEnv('worker', 'guessed', secrets.results_key), 60_000)
    expect(refused.status).toBe(5)
    expect(refused.stderr).toMatch(/cannot connect to NATS at .*Authorization Violation.*\(role worker, user forge-worker/s)

    const port = await freePort()
    const env = podEnv('worker', secrets.users.worker.password, secrets.results_key)
    const child = spawn(process.execPath, [join(packageRoot(), 'bin', 'run.js'), 'worker', '--concurrency', '1', '--health-port', String(port)], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (d: Buffer) => (output += d.toString()))
    child.stderr.on('data', (d: Buffer) => (output += d.toString()))
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    try {
      // ready = connected to NATS as forge-worker and polling Temporal; a refused connection exits instead
      let ready = false
      for (let i = 0; i < 300 && !ready && child.exitCode === null; i++) {
        ready = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.ok, () => false)
        if (!ready) await sleep(200)
      }
      expect(ready, output).toBe(true)
      // it holds the key it was given, so it does not warn that its results go unsigned
      expect(output).not.toMatch(/results are not signed/)
    } finally {
      child.kill('SIGTERM')
    }
    expect(await exited, output).toBe(0)
  }, 120_000)

  it('forge baseline set joins as the cli user and signs with FORGE_RESULTS_KEY: stored under the fleet\'s key, rejected under another, refused with a wrong password', async () => {
    const secrets = readBusSecrets(stack.home)!
    // a completed run to tag, from a genuine worker
    const now = 1_764_470_000_000
    await publishRunRecord(jetstream(await connectBus(stack.endpoints.natsUrl, 'run-publisher', 'worker')), {
      run_id: 'pod-run', suite: 'smoke', suite_path: 'suites/smoke', adapter: 'subprocess', config_id: 'c0', attempts: 1, task_count: 1, seed: '1',
      status: 'completed', started_at: now, finished_at: now + 1, updated_at: now + 1, price_table_version: '',
    })
    const reader = await openReader(stack.config)
    try {
      for (let i = 0; i < 100 && (await reader.query('SELECT run_id FROM runs FINAL WHERE run_id = {run:String}', { run: 'pod-run' })).length === 0; i++) await sleep(100)
    } finally {
      await reader.close()
    }
    // the pod's FORGE_HOME is the stack's here only so the CLI finds the running ingester; its credentials still come from the environment
    const cliEnv = (password: string, key: string) => ({ ...podEnv('cli', password, key), FORGE_HOME: stack.home })
    const tag = (env: NodeJS.ProcessEnv, name: string) => forge(['baseline', 'set', '--run-id', 'pod-run', '--name', name, '--commit', 'abc123', '--agent-version', '1', '--json'], env, 90_000)

    const refused = tag(cliEnv('guessed', secrets.results_key), 'pod-refused')
    expect(refused.status).toBe(5)
    // --json: the error is printed as JSON on stdout
    expect(JSON.parse(refused.stdout).error.message).toMatch(/cannot connect to NATS at .*Authorization Violation.*\(role cli, user forge-cli/s)

    const stored = tag(cliEnv(secrets.users.cli.password, secrets.results_key), 'pod-baseline')
    expect(stored.status, stored.stderr).toBe(0)
    expect(JSON.parse(stored.stdout)).toMatchObject({ name: 'pod-baseline', version: 1, run_id: 'pod-run', commit_hash: 'abc123' })

    // the right user and password but another key: the ingester rejects the baseline, so it is never stored
    const before = await rejectedSoFar()
    const forged = tag(cliEnv(secrets.users.cli.password, 'ab'.repeat(32)), 'pod-forged')
    expect(forged.status).toBe(5)
    expect(JSON.parse(forged.stdout).error.message).toContain('did not store the baseline')
    expect(await rejectedSoFar()).toBe(before + 1)
  }, 150_000)
})
