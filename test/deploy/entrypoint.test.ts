/**
 * The container entrypoint outside a container (CI has no Docker engine everywhere): the same script
 * and environment the Helm chart gives its pods, against a real Temporal dev server and nats-server
 * started as independent servers, the ingester on chDB.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client, Connection } from '@temporalio/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { planRun } from '../../app/plan-run.js'
import { resolveConfig } from '../../config/index.js'
import { connectBus, type NatsConnection } from '../../store/bus.js'
import { busReader } from '../../store/bus-reader.js'
import { freePorts } from '../../stack/local-stack.js'
import { NODE_FLAGS } from '../../stack/node-flags.js'
import type { RunWorkflow } from '../../workflows/run.js'
import {
  ENTRYPOINT,
  httpGet,
  metricValue,
  startNats,
  startRole,
  startTemporal,
  stopProc,
  tailLog,
  waitFor,
  type NatsCluster,
  type Proc,
  type TemporalServer,
} from '../helpers/fleet.js'
import { PENDING_ACTIVITY_STARTED } from '../helpers/stack.js'

let dir: string
let temporal: TemporalServer
let nats: NatsCluster
let ingester: Proc
let ingesterPort: number
let nc: NatsConnection
const procs: Proc[] = []

/** the environment the chart gives every Forge container */
const chartEnv = (home: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    FORGE_TEMPORAL_ADDRESS: temporal.address,
    FORGE_TEMPORAL_NAMESPACE: 'default',
    FORGE_TASK_QUEUE: 'forge-attempts',
    FORGE_NATS_URL: nats.url,
    FORGE_HOME: join(dir, home),
    FORGE_LOG_LEVEL: 'warn',
    ...extra,
  }
  delete env['FORGE_CLICKHOUSE_URL']
  return env
}

const ready = (port: number) => waitFor(`readiness on ${port}`, async () => ((await httpGet(port, '/readyz'))?.status === 200 ? true : undefined), 60_000)

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'forge-entrypoint-'))
  temporal = await startTemporal(dir)
  nats = await startNats(dir, 1)
  ;[ingesterPort = 0] = await freePorts(1)
  ingester = startRole('ingester', 'ingester', [], chartEnv('ingester', { FORGE_HEALTH_PORT: String(ingesterPort), FORGE_STORE_PATH: join(dir, 'store') }), dir)
  procs.push(ingester)
  await ready(ingesterPort).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}\n${tailLog(ingester)}`)
  })
  nc = await connectBus(nats.url, 'entrypoint-test')
})

afterAll(async () => {
  await nc?.drain().catch(() => undefined)
  for (const proc of procs) await stopProc(proc)
  await nats?.stop()
  if (temporal) await stopProc(temporal.proc)
  if (dir) rmSync(dir, { recursive: true, force: true })
})

describe('deploy/entrypoint.sh', () => {
  it('runs a worker that serves health and metrics and, on SIGTERM, finishes its in-flight attempts before it exits', async () => {
    const [workerPort = 0, finisherPort = 0] = await freePorts(2)
    const worker = startRole('worker-drainer', 'worker', ['--concurrency', '6'], chartEnv('w1', { FORGE_HEALTH_PORT: String(workerPort), FORGE_WORKER_ID: 'drainer', FORGE_SHUTDOWN_GRACE_MS: '60000' }), dir)
    procs.push(worker)
    await ready(workerPort)
    const readyz = await httpGet(workerPort, '/readyz')
    expect(JSON.parse(readyz!.body)).toMatchObject({ role: 'worker', ready: true, worker_id: 'drainer', states: ['RUNNING', 'RUNNING'] })
    const idle = (await httpGet(workerPort, '/metrics'))!.body
    expect(metricValue(idle, 'forge_up', '{role="worker"}')).toBe(1)
    expect(metricValue(idle, 'forge_task_queue_backlog', '{task_queue="forge-attempts",type="activity"}')).toBe(0)

    // 3 tasks × 2 attempts held at a gate the test opens: all six are in flight at once when the worker
    // is told to stop (the run's first activity, recordRunStatus, takes a slot of the six until it is done)
    const gate = join(dir, 'drain.gate')
    writeFileSync(gate, '')
    const { plan } = await planRun(resolveConfig(), { suite: 'toy_math', adapter: 'mock', adapter_config: { skill: 1, hold_file: gate }, attempts: 2, seed: 'drain', run_id: 'drain-1', workers: 1, concurrency: 1 })
    const connection = await Connection.connect({ address: temporal.address })
    try {
      const client = new Client({ connection })
      const handle = await client.workflow.start<typeof RunWorkflow>('RunWorkflow', { taskQueue: 'forge-attempts', workflowId: 'forge-run-drain-1', args: [{ plan }] })
      await waitFor('six attempts started on the worker', async () => {
        const { raw } = await handle.describe()
        const started = (raw.pendingActivities ?? []).filter((a) => a.activityType?.name === 'runAttempt' && a.state === PENDING_ACTIVITY_STARTED && a.lastWorkerIdentity === 'drainer')
        return started.length === 6 ? true : undefined
      })
      expect(metricValue((await httpGet(workerPort, '/metrics'))!.body, 'forge_attempts_in_flight')).toBe(6)
      worker.child.kill('SIGTERM')
      // told to stop, it takes no new work but finishes what it holds once the gate opens
      await waitFor('the worker to stop being ready', async () => ((await httpGet(workerPort, '/readyz'))?.status === 503 ? true : undefined))
      rmSync(gate)
      expect(await worker.exited).toBe(0)

      // a second worker finishes the workflow's bookkeeping; the attempts were done by the first
      const finisher = startRole('worker-finisher', 'worker', [], chartEnv('w2', { FORGE_HEALTH_PORT: String(finisherPort), FORGE_WORKER_ID: 'finisher' }), dir)
      procs.push(finisher)
      const result = await handle.result()
      expect(result.tally).toEqual({ outcomes: { pass: 6 }, not_executed: 0 })
      const reader = busReader(nc)
      const rows = await waitFor('six stored attempts', async () => {
        const r = await reader.query<{ worker_id: string; n: string }>("SELECT worker_id, count() AS n FROM attempts FINAL WHERE run_id = 'drain-1' GROUP BY worker_id")
        return r.reduce((a, b) => a + Number(b.n), 0) === 6 ? r : undefined
      })
      expect(rows.map((r) => [r.worker_id, Number(r.n)])).toEqual([['drainer', 6]])
    } finally {
      await connection.close()
    }

    // the ingester reports what it stored and that it has caught up
    const metrics = await waitFor('the ingester caught up', async () => {
      const body = (await httpGet(ingesterPort, '/metrics'))?.body ?? ''
      return metricValue(body, 'forge_ingest_pending_messages') === 0 ? body : undefined
    })
    expect(metricValue(metrics, 'forge_ingested_attempts_total')).toBeGreaterThanOrEqual(6)
    expect(metricValue(metrics, 'forge_ingest_lag_seconds')).toBe(0)
    expect(metricValue(metrics, 'forge_up', '{role="ingester"}')).toBe(1)
  })

  it("starts the ingester and a worker with their V8 flags, a judge worker with none, and leaves a flag NODE_OPTIONS names to the user", async () => {
    const argvOf = (proc: Proc): string[] => readFileSync(`/proc/${proc.child.pid}/cmdline`, 'utf8').split('\0')
    const semiSpace = (proc: Proc): string[] => argvOf(proc).filter((arg) => arg.includes('semi-space'))
    expect(argvOf(ingester)).toEqual(expect.arrayContaining([...NODE_FLAGS.ingester, 'ingester']))
    const [port = 0, ownPort = 0, judgePort = 0] = await freePorts(3)
    const worker = startRole('worker-flags', 'worker', ['--concurrency', '1'], chartEnv('wf', { FORGE_HEALTH_PORT: String(port), FORGE_WORKER_ID: 'flags' }), dir)
    const own = startRole('worker-own-flags', 'worker', ['--concurrency', '1'], chartEnv('wo', { FORGE_HEALTH_PORT: String(ownPort), FORGE_WORKER_ID: 'own-flags', NODE_OPTIONS: '--max-semi-space-size=16' }), dir)
    const judge = startRole('judge-flags', 'judge', [], chartEnv('jf', { FORGE_HEALTH_PORT: String(judgePort), FORGE_WORKER_ID: 'judge-flags' }), dir)
    procs.push(worker, own, judge)
    await Promise.all([ready(port), ready(ownPort), ready(judgePort)])
    expect(argvOf(worker)).toEqual(expect.arrayContaining([...NODE_FLAGS.worker, 'worker', '--concurrency', '1']))
    expect(semiSpace(own)).toEqual([])
    expect(semiSpace(judge)).toEqual([])
    expect(argvOf(judge)).toEqual(expect.arrayContaining(['worker', '--role', 'judge']))
    await Promise.all([stopProc(worker), stopProc(own), stopProc(judge)])
  })

  it('refuses to start a role without its servers, naming the missing setting', () => {
    const env = chartEnv('refuse')
    delete env['FORGE_TEMPORAL_ADDRESS']
    const worker = spawnSync(ENTRYPOINT, ['worker'], { env, encoding: 'utf8' })
    expect(worker.status).toBe(2)
    expect(worker.stderr).toBe('entrypoint.sh worker: FORGE_TEMPORAL_ADDRESS is not set: the Temporal frontend, host:port (e.g. temporal-frontend.temporal:7233)\n')
    const noNats = { ...chartEnv('refuse'), FORGE_NATS_URL: '' }
    expect(spawnSync(ENTRYPOINT, ['ingester'], { env: noNats, encoding: 'utf8' }).stderr).toBe('entrypoint.sh ingester: FORGE_NATS_URL is not set: the NATS cluster, e.g. nats://nats.nats:4222\n')
    const none = spawnSync(ENTRYPOINT, [], { env, encoding: 'utf8' })
    expect(none.status).toBe(2)
    expect(none.stderr).toContain('usage: entrypoint.sh worker|judge|ingester|healthcheck|<forge command>')
    const flag = spawnSync(ENTRYPOINT, ['--concurrency', '5'], { env, encoding: 'utf8' })
    expect(flag.status).toBe(2)
    expect(flag.stderr).toContain('the first argument is a role or a forge command, not a flag (got "--concurrency")')
  })

  it('passes any other forge command through (one-off jobs)', () => {
    const r = spawnSync(ENTRYPOINT, ['tasks', 'validate', '--suite', 'toy_math', '--json'], { env: chartEnv('job'), encoding: 'utf8' })
    expect(r.status).toBe(0)
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, suites: [{ suite: 'toy_math', ok: true, tasks: 3 }] })
  })

  it('has a healthcheck that passes for jobs and follows the role’s /healthz otherwise', async () => {
    const home = join(dir, 'hc')
    const check = (role: string | undefined, port: number) => {
      mkdirSync(home, { recursive: true })
      if (role === undefined) rmSync(join(home, '.role'), { force: true })
      else writeFileSync(join(home, '.role'), `${role}\n`)
      return spawnSync(ENTRYPOINT, ['healthcheck'], { env: chartEnv('hc', { FORGE_HEALTH_PORT: String(port) }), encoding: 'utf8' })
    }
    const [deadPort = 0] = await freePorts(1)
    expect(check(undefined, deadPort).status).toBe(0)
    expect(check('job', deadPort).status).toBe(0)
    expect(check('ingester', ingesterPort).status).toBe(0)
    const dead = check('worker', deadPort)
    expect(dead.status).toBe(1)
    expect(dead.stderr).toContain(`healthcheck: worker on port ${deadPort}:`)
  })
})
