/**
 * The fleet rehearsal: the Helm chart rendered against this machine's servers, and every Forge
 * process started exactly as its container would be — deploy/entrypoint.sh with the container's args
 * and environment — on a 3-node NATS JetStream cluster (R3 results stream, sync_interval always), an
 * external Temporal dev server and one ClickHouse store (chDB behind ClickHouse's HTTP interface: no
 * ClickHouse server or Docker engine here). The chart's schedule hook creates the Temporal Schedule,
 * the sweep is triggered, and while it runs one NATS node and 30% of the workers are killed
 * (SIGKILL). Every attempt is stored exactly once, every cell completes, the verdicts are stored.
 *
 * What a pod gives each container privately is given per process instead: its own /tmp (FORGE_HOME)
 * and its own port space (FORGE_HEALTH_PORT), and the sweeps ConfigMap's mount is a directory.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseAllDocuments } from 'yaml'
import { jetstreamManager } from '@nats-io/jetstream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connectBus, RESULTS_STREAM } from '../../store/bus.js'
import { directReader, openClickHouse, type StoreReader } from '../../store/clickhouse.js'
import { getSweep } from '../../store/sweep-repositories.js'
import { freePorts } from '../../stack/local-stack.js'
import { packageRoot } from '../../stack/paths.js'
import { startChdbHttpServer, type ChdbHttpServer } from '../fakes/chdb-http.js'
import { httpGet, metricValue, startNats, startRole, startTemporal, stopProc, tailLog, waitFor, type NatsCluster, type Proc, type TemporalServer } from '../helpers/fleet.js'
import { findHelm } from '../helpers/helm-tools.js'

const helm = findHelm()
if (helm.why) console.warn(`fleet-rehearsal.test: skipping: ${helm.why}`)

interface EnvVar {
  name: string
  value?: string
  valueFrom?: { fieldRef?: { fieldPath: string }; secretKeyRef?: { name: string; key: string } }
}
interface Container {
  args: string[]
  env: EnvVar[]
}
interface Rendered {
  kind: string
  metadata: { name: string }
  spec: { replicas?: number; template: { spec: { containers: Container[] } } }
  data?: Record<string, string>
}

const SWEEP = {
  name: 'rehearsal',
  suites: ['toy_math', 'smoke'],
  adapters: [{ name: 'mock', config: { skill: 0.9, delay_ms: 400 } }],
  seeds: ['a', 'b'],
  attempts: 40,
  cells_in_flight: 2,
}
// toy_math has 3 tasks, smoke 5: 2 seeds × (3 + 5) tasks × 40 attempts
const EXPECTED = { cells: 4, attempts: 2 * (3 + 5) * 40, perSuite: { toy_math: 3 * 40, smoke: 5 * 40 } as Record<string, number> }

let dir: string
let temporal: TemporalServer
let nats: NatsCluster
let clickhouse: ChdbHttpServer
let reader: StoreReader
const procs: Proc[] = []
const healthPorts = new Map<Proc, number>()
/** the Secrets the chart rendered (its bus Secret), by name: what a secretKeyRef reads */
const renderedSecrets = new Map<string, Record<string, string>>()

/** A container's environment as the kubelet gives it: values, $(VAR) expanded from earlier entries, the pod's name, keys of the rendered Secrets. */
function containerEnv(c: Container, pod: string, privateDir: string, healthPort: number): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env['PATH'], HOME: privateDir, TMPDIR: privateDir }
  for (const e of c.env) {
    if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.name') env[e.name] = pod
    else if (e.valueFrom?.secretKeyRef && renderedSecrets.get(e.valueFrom.secretKeyRef.name)?.[e.valueFrom.secretKeyRef.key] !== undefined) {
      env[e.name] = Buffer.from(renderedSecrets.get(e.valueFrom.secretKeyRef.name)![e.valueFrom.secretKeyRef.key]!, 'base64').toString('utf8')
    } else if (e.valueFrom) throw new Error(`${pod}: ${e.name} comes from ${JSON.stringify(e.valueFrom)}: the rehearsal's values use no Secrets but the chart's own`)
    else env[e.name] = (e.value ?? '').replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (_, name: string) => env[name] ?? `$(${name})`)
  }
  // private to a pod: its /tmp and its port space
  expect(env['FORGE_HOME']).toBe('/tmp/forge')
  env['FORGE_HOME'] = join(privateDir, 'forge')
  env['FORGE_HEALTH_PORT'] = String(healthPort)
  return env
}

async function startPod(name: string, c: Container, sweepsDir: string): Promise<Proc> {
  const [port = 0] = await freePorts(1)
  const privateDir = join(dir, 'pods', name)
  mkdirSync(privateDir, { recursive: true })
  const [role, ...args] = c.args.map((a) => a.replace('/etc/forge/sweeps', sweepsDir))
  const proc = startRole(name, role!, args, containerEnv(c, name, privateDir, port), join(dir, 'logs'))
  procs.push(proc)
  healthPorts.set(proc, port)
  return proc
}

const ready = (proc: Proc) =>
  waitFor(`${proc.name} ready`, async () => {
    if (proc.child.exitCode !== null) throw new Error(`${proc.name} exited ${proc.child.exitCode}:\n${tailLog(proc)}`)
    return (await httpGet(healthPorts.get(proc)!, '/readyz'))?.status === 200 ? true : undefined
  }, 90_000)

beforeAll(async () => {
  if (helm.why) return
  dir = mkdtempSync(join(tmpdir(), 'forge-rehearsal-'))
  ;[temporal, nats, clickhouse] = await Promise.all([startTemporal(dir), startNats(dir, 3), startChdbHttpServer(join(dir, 'clickhouse'))])
  reader = directReader(await openClickHouse({ kind: 'server', url: clickhouse.url }))
})

afterAll(async () => {
  for (const proc of procs) await stopProc(proc, 'SIGKILL')
  await reader?.close()
  await clickhouse?.close()
  await nats?.stop()
  if (temporal) await stopProc(temporal.proc)
  if (dir) rmSync(dir, { recursive: true, force: true })
})

describe.skipIf(helm.why !== undefined)('fleet rehearsal', () => {
  it('runs a scheduled sweep on chart-started processes through a NATS node and 30% of the workers dying: 0 lost, 0 doubled, verdicts stored', async () => {
    const values = join(dir, 'values.yaml')
    writeFileSync(
      values,
      JSON.stringify({
        logLevel: 'warn',
        temporal: { address: temporal.address },
        nats: { url: nats.url, streamReplicas: 3 },
        clickhouse: { url: clickhouse.url },
        worker: { replicas: 10, concurrency: 5, longestAttemptSeconds: 60, autoscaling: { enabled: false } },
        judge: { enabled: false },
        ingester: { replicas: 2 },
        sweeps: { files: { rehearsal: SWEEP }, schedules: [{ name: 'rehearsal', cron: '0 2 * * *', sweep: 'rehearsal' }] },
      }),
    )
    const { spawnSync } = await import('node:child_process')
    const rendered = spawnSync(helm.path!, ['template', 'forge', join(packageRoot(), 'helm', 'forge'), '-f', values], { encoding: 'utf8' })
    expect(rendered.status, rendered.stderr).toBe(0)
    const objects = parseAllDocuments(rendered.stdout).map((d) => d.toJSON() as Rendered).filter(Boolean)
    const byName = (kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name)!
    // every pod's NATS user and results key come from the generated bus Secret (the rehearsal's NATS has no users, so any user joins;
    // test/security/bus.test.ts runs a fleet process against one that has them); the shared key signs and checks every result
    for (const o of objects.filter((x) => x.kind === 'Secret')) renderedSecrets.set(o.metadata.name, o.data!)
    expect([...renderedSecrets.keys()]).toEqual(['forge-bus'])
    const sweepsDir = join(dir, 'sweeps')
    mkdirSync(sweepsDir)
    for (const [file, text] of Object.entries(byName('ConfigMap', 'forge-sweeps').data!)) writeFileSync(join(sweepsDir, file), text)

    // the Deployments, at their replica counts
    const ingesterDeployment = byName('Deployment', 'forge-ingester')
    const workerDeployment = byName('Deployment', 'forge-worker')
    const ingesters = await Promise.all(Array.from({ length: ingesterDeployment.spec.replicas! }, (_, i) => startPod(`forge-ingester-${i}`, ingesterDeployment.spec.template.spec.containers[0]!, sweepsDir)))
    for (const p of ingesters) await ready(p)
    const workers = await Promise.all(Array.from({ length: workerDeployment.spec.replicas! }, (_, i) => startPod(`forge-worker-${i}`, workerDeployment.spec.template.spec.containers[0]!, sweepsDir)))
    for (const p of workers) await ready(p)
    expect([ingesters.length, workers.length]).toEqual([2, 10])

    // the results stream the ingesters created: R3 on the three nodes
    const nc = await connectBus(nats.url, 'rehearsal')
    try {
      const info = await (await jetstreamManager(nc)).streams.info(RESULTS_STREAM)
      expect(info.config.num_replicas).toBe(3)
      expect(info.config.storage).toBe('file')
      expect([info.cluster?.leader, ...(info.cluster?.replicas ?? []).map((r) => r.name)].sort()).toEqual(['nats-0', 'nats-1', 'nats-2'])
    } finally {
      await nc.close()
    }

    // the chart's post-install hook creates the schedule; then it is triggered
    const hook = byName('Job', 'forge-schedule-rehearsal').spec.template.spec.containers[0]!
    const schedule = await startPod('forge-schedule-rehearsal', hook, sweepsDir)
    expect(await schedule.exited, tailLog(schedule)).toBe(0)
    const trigger = await startPod('forge-trigger', { ...hook, args: ['schedule', 'trigger', 'rehearsal'] }, sweepsDir)
    expect(await trigger.exited, tailLog(trigger)).toBe(0)

    const attemptsDone = async () => {
      let done = 0
      for (const w of workers) done += metricValue((await httpGet(healthPorts.get(w)!, '/metrics'))?.body ?? '', 'forge_attempts_total') ?? 0
      return done
    }
    await waitFor('a quarter of the attempts done', async () => ((await attemptsDone()) >= EXPECTED.attempts / 4 ? true : undefined), 180_000)
    const killed = workers.slice(0, 3)
    nats.nodes[0]!.proc.child.kill('SIGKILL')
    for (const w of killed) w.child.kill('SIGKILL')
    const doneAtKill = await attemptsDone()
    expect(doneAtKill).toBeLessThan(EXPECTED.attempts)

    const sweep = await waitFor(
      'the sweep completed and stored',
      async () => {
        const s = await getSweep(reader, 'latest:rehearsal').catch(() => undefined)
        return s?.status === 'completed' ? s : undefined
      },
      300_000,
    )
    expect(await Promise.all(killed.map((w) => w.exited))).toEqual(['SIGKILL', 'SIGKILL', 'SIGKILL'])

    // every cell ran all its attempts; its verdict is stored
    expect(sweep.schedule_id).toBe('rehearsal')
    expect(sweep.cells).toHaveLength(EXPECTED.cells)
    for (const cell of sweep.cells) {
      expect(cell, JSON.stringify(cell)).toMatchObject({ status: 'completed', verdict: 'no_baseline', not_executed: 0, attempts: EXPECTED.perSuite[cell.suite], error: '' })
    }
    const runs = sweep.cells.map((c) => c.run_id)
    const [stored] = await reader.query<{ n: string; unique: string; raw: string }>(
      `SELECT (SELECT count() FROM attempts FINAL WHERE run_id IN {runs:Array(String)}) AS n,
              (SELECT uniqExact(attempt_uid) FROM attempts FINAL WHERE run_id IN {runs:Array(String)}) AS unique,
              (SELECT count() FROM attempts WHERE run_id IN {runs:Array(String)}) AS raw`,
      { runs },
    )
    // 0 lost, 0 doubled (rows written twice — a redelivery after a kill — collapse under FINAL)
    expect(Number(stored!.n)).toBe(EXPECTED.attempts)
    expect(Number(stored!.unique)).toBe(EXPECTED.attempts)
    const perTask = await reader.query<{ run_id: string; task_id: string; n: string; lo: number; hi: number }>(
      'SELECT run_id, task_id, count() AS n, min(attempt) AS lo, max(attempt) AS hi FROM attempts FINAL WHERE run_id IN {runs:Array(String)} GROUP BY run_id, task_id',
      { runs },
    )
    expect(perTask).toHaveLength(2 * (3 + 5))
    for (const row of perTask) expect([Number(row.n), Number(row.lo), Number(row.hi)]).toEqual([40, 0, 39])
    const sweepRows = await reader.query<{ n: string }>('SELECT count() AS n FROM sweep_cells FINAL WHERE sweep_id = {id:String}', { id: sweep.sweep_id })
    expect(Number(sweepRows[0]!.n)).toBe(EXPECTED.cells)

    // the survivors drain and exit cleanly
    const survivors = workers.slice(3)
    expect(await Promise.all(survivors.map((w) => stopProc(w)))).toEqual(survivors.map(() => 0))
    expect(await Promise.all(ingesters.map((p) => stopProc(p)))).toEqual([0, 0])

    const wallS = (sweep.finished_at! - sweep.started_at) / 1000
    console.log(
      `fleet rehearsal: ${EXPECTED.attempts} attempts in ${EXPECTED.cells} cells on ${workers.length} workers × 5 (mock agent thinking 400 ms) in ${wallS.toFixed(1)} s ` +
        `(${(EXPECTED.attempts / wallS).toFixed(1)} attempts/s, including a 30 s heartbeat timeout for the killed workers' attempts); ` +
        `killed at ${doneAtKill} done; ${Number(stored!.raw) - EXPECTED.attempts} duplicate row(s) collapsed by FINAL`,
    )
  })
})
