/**
 * `forge run --workers 0` on the real binaries: the CLI starts no worker process; the run's workflow
 * goes to the configured task queue and a separate `forge worker` — started as the Helm chart's worker
 * container starts it (deploy/entrypoint.sh, the chart's arguments and environment variables) — runs
 * every attempt, which the stored rows' worker_id and that process's /metrics show. While no worker
 * polls the queue the run says so and keeps waiting; the worker is started only after that notice
 * was printed (a gate, not a sleep), and the run then completes; `forge runs resume --workers 0`
 * re-attaches to such a run the same way.
 *
 * The stack is the embedded one (Temporal dev server, nats-server, ingester + chDB): the chart's
 * FORGE_CLICKHOUSE_URL has no server to name here, so the worker reads the store through the
 * ingester, as every local worker does; its bus user and results key are the stack's worker
 * credentials in place of the chart's bus Secret.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openReader } from '../../app/store-access.js'
import { noPollerNotice } from '../../app/fleet-workers.js'
import { busAccessEnv } from '../../store/bus-auth.js'
import { directReader, openClickHouse, type StoreReader } from '../../store/clickhouse.js'
import { freePorts } from '../../stack/local-stack.js'
import { packageRoot } from '../../stack/paths.js'
import { startChdbHttpServer } from '../fakes/chdb-http.js'
import { ENTRYPOINT, httpGet, metricValue, startNats, startRole, startTemporal, stopProc, tailLog, waitFor, type Proc } from '../helpers/fleet.js'
import { startTestStack, type TestStack } from '../helpers/stack.js'

let stack: TestStack
const procs: Proc[] = []
const clis: ChildProcess[] = []
/** what else a test started, stopped at the end */
const cleanups: (() => Promise<unknown>)[] = []

beforeAll(async () => {
  stack = await startTestStack('fleet-workers')
})

afterAll(async () => {
  for (const cli of clis) if (cli.exitCode === null && cli.signalCode === null) cli.kill('SIGKILL')
  for (const proc of procs) await stopProc(proc, 'SIGKILL')
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined)
  await stack?.down()
})

interface ChartWorker {
  proc: Proc
  healthPort: number
}

/** Where a pod's servers are, as the chart's values name them (forge.serverEnv, forge.busEnv). */
interface Servers {
  temporalAddress: string
  natsUrl: string
  taskQueue: string
  /** absent: the embedded store, read through the stack's ingester */
  clickhouseUrl?: string
  /** what the chart's bus Secret gives the role: NATS user, password, results key */
  bus: Record<string, string>
}

/** The embedded stack's servers, its worker credentials in place of the chart's bus Secret. */
const stackServers = (taskQueue: string): Servers => ({
  temporalAddress: stack.endpoints.temporalAddress,
  natsUrl: stack.endpoints.natsUrl,
  taskQueue,
  bus: busAccessEnv(stack.endpoints.natsUrl, 'worker', stack.env),
})

/** A pod's environment: forge.serverEnv with these servers, the role's bus variables, its own /tmp and port. */
function podEnv(pod: string, servers: Servers, healthPort: number): NodeJS.ProcessEnv {
  const privateDir = join(stack.home, 'pods', pod)
  mkdirSync(privateDir, { recursive: true })
  return {
    PATH: process.env['PATH'],
    HOME: privateDir,
    TMPDIR: privateDir,
    FORGE_TEMPORAL_ADDRESS: servers.temporalAddress,
    FORGE_TEMPORAL_NAMESPACE: stack.config.temporal.namespace,
    FORGE_TASK_QUEUE: servers.taskQueue,
    FORGE_JUDGE_TASK_QUEUE: stack.config.judge.taskQueue,
    FORGE_NATS_URL: servers.natsUrl,
    ...(servers.clickhouseUrl !== undefined ? { FORGE_CLICKHOUSE_URL: servers.clickhouseUrl } : {}),
    FORGE_HEALTH_PORT: String(healthPort),
    FORGE_LOG_LEVEL: 'warn',
    FORGE_HOME: join(privateDir, 'forge'),
    ...servers.bus,
  }
}

/**
 * A worker pod: `entrypoint.sh worker --role attempts --concurrency 5` (the chart's container args
 * with its default role) and the variables the chart sets on it (forge.serverEnv, forge.busEnv for
 * the worker role, FORGE_SHUTDOWN_GRACE_MS, FORGE_WORKER_ID from the pod's name); its own /tmp and port.
 */
async function startChartWorker(pod: string, servers: Servers): Promise<ChartWorker> {
  const [healthPort = 0] = await freePorts(1)
  const env = { ...podEnv(pod, servers, healthPort), FORGE_SHUTDOWN_GRACE_MS: '60000', FORGE_WORKER_ID: pod }
  const proc = startRole(pod, 'worker', ['--role', 'attempts', '--concurrency', '5'], env, join(stack.home, 'pod-logs'))
  procs.push(proc)
  await waitUntilReady(proc, healthPort)
  return { proc, healthPort }
}

async function waitUntilReady(proc: Proc, healthPort: number): Promise<void> {
  const pod = proc.name
  await waitFor(
    `${pod} ready`,
    async () => {
      if (proc.child.exitCode !== null) throw new Error(`${pod} exited ${proc.child.exitCode}:\n${tailLog(proc)}`)
      return (await httpGet(healthPort, '/readyz'))?.status === 200 ? true : undefined
    },
    90_000,
  )
}

interface Cli {
  child: ChildProcess
  /** stdout and stderr so far */
  output(): string
  exited: Promise<number>
}

/** `forge …` as a user runs it (or, `viaEntrypoint`, as a Job's container does), its output readable while it runs. */
function startCli(args: string[], env: NodeJS.ProcessEnv, viaEntrypoint = false): Cli {
  const [command, argv] = viaEntrypoint ? [ENTRYPOINT, args] : [process.execPath, [join(packageRoot(), 'bin', 'run.js'), ...args]]
  const child = spawn(command, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] })
  clis.push(child)
  let text = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (text += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (text += chunk))
  const exited = new Promise<number>((resolve) => child.once('exit', (code) => resolve(code ?? -1)))
  return { child, output: () => text, exited }
}

/** true once `cli` printed `text`; throws when it exited without printing it */
function whenPrinted(cli: Cli, text: string): true | undefined {
  if (cli.output().includes(text)) return true
  if (cli.child.exitCode !== null) throw new Error(`forge exited ${cli.child.exitCode} without printing "${text}":\n${cli.output()}`)
  return undefined
}

/** The command lines of the living children of `pid` (from /proc). */
function childrenOf(pid: number): string[] {
  const found: string[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      // "pid (comm) state ppid …": comm may hold spaces, so count from its closing parenthesis
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (ppid === pid) found.push(readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').trim())
    } catch {
      // it ended while we looked
    }
  }
  return found
}

async function storedByWorker(runId: string, open: () => Promise<StoreReader> = () => openReader(stack.config)): Promise<Record<string, number>> {
  const reader = await open()
  try {
    const rows = await reader.query<{ worker_id: string; n: string }>('SELECT worker_id, count() AS n FROM attempts FINAL WHERE run_id = {run:String} GROUP BY worker_id', { run: runId })
    return Object.fromEntries(rows.map((r) => [r.worker_id, Number(r.n)]))
  } finally {
    await reader.close()
  }
}

const workerLogs = () => readdirSync(join(stack.home, 'logs')).filter((f) => f.startsWith('worker-'))

describe('forge run --workers 0', () => {
  it("starts no worker process: a separate forge worker, started as the chart's container, runs every attempt", async () => {
    const worker = await startChartWorker('forge-worker-5d8f7-a1', stackServers(stack.config.temporal.taskQueue))
    const gate = join(stack.home, 'hold-a')
    writeFileSync(gate, '')
    const cli = startCli(
      ['run', '--suite', 'smoke', '--adapter', 'mock', '--attempts', '2', '--seed', '7', '--run-id', 'fleet-a', '--workers', '0', '--adapter-config', JSON.stringify({ hold_file: gate })],
      stack.env,
    )
    // the run started and every attempt is held: a worker this CLI started would be alive now
    await waitFor('the run started', () => whenPrinted(cli, "run fleet-a: 5 tasks × 2 attempts = 10 on the fleet's workers"), 90_000)
    expect(childrenOf(cli.child.pid!).filter((cmd) => /worker/.test(cmd))).toEqual([])
    rmSync(gate)
    expect(await cli.exited, cli.output()).toBe(0)

    expect(await storedByWorker('fleet-a')).toEqual({ 'forge-worker-5d8f7-a1': 10 })
    // that very process ran them (its own /metrics, served on its own port)
    expect(metricValue((await httpGet(worker.healthPort, '/metrics'))?.body ?? '', 'forge_attempts_total')).toBe(10)
    expect(cli.output()).not.toContain('no worker polls')
    expect(cli.output()).not.toContain('worker process(es) ready')
    // a worker of forge run's own pool writes logs/worker-<slot>.log in FORGE_HOME
    expect(workerLogs()).toEqual([])
  })

  it('says so while no worker polls its task queue, keeps waiting, and completes once one starts', async () => {
    const taskQueue = 'forge-fleet-b'
    const cli = startCli(['run', '--suite', 'smoke', '--adapter', 'mock', '--attempts', '1', '--seed', '7', '--run-id', 'fleet-b', '--workers', '0'], { ...stack.env, FORGE_TASK_QUEUE: taskQueue })
    const notice = noPollerNotice(taskQueue, stack.config.temporal.namespace)
    // the gate: the worker starts only once the CLI said nobody polls
    await waitFor('the no-poller notice', () => whenPrinted(cli, notice), 90_000)
    expect(childrenOf(cli.child.pid!).filter((cmd) => /worker/.test(cmd))).toEqual([])
    expect(cli.output().split(notice).length - 1).toBe(1)

    await startChartWorker('forge-worker-5d8f7-b2', stackServers(taskQueue))
    expect(await cli.exited, cli.output()).toBe(0)
    expect(cli.output()).toContain(`worker forge-worker-5d8f7-b2 now polls task queue ${taskQueue}; the run goes on`)
    expect(await storedByWorker('fleet-b')).toEqual({ 'forge-worker-5d8f7-b2': 5 })
    expect(workerLogs()).toEqual([])
  })

  it('forge runs resume --workers 0 re-attaches without starting a worker, says nobody polls, and completes once one starts', async () => {
    const taskQueue = 'forge-fleet-c'
    const env = { ...stack.env, FORGE_TASK_QUEUE: taskQueue }
    const notice = noPollerNotice(taskQueue, stack.config.temporal.namespace)
    const first = startCli(['run', '--suite', 'smoke', '--adapter', 'mock', '--attempts', '1', '--seed', '7', '--run-id', 'fleet-c', '--workers', '0'], env)
    await waitFor('the first notice', () => whenPrinted(first, notice), 90_000)
    first.child.kill('SIGKILL')
    await first.exited

    const resumed = startCli(['runs', 'resume', 'fleet-c', '--workers', '0'], env)
    await waitFor('the resumed notice', () => whenPrinted(resumed, notice), 90_000)
    expect(resumed.output()).toContain('resumed run fleet-c (still running)')
    expect(childrenOf(resumed.child.pid!).filter((cmd) => /worker/.test(cmd))).toEqual([])
    await startChartWorker('forge-worker-5d8f7-c3', stackServers(taskQueue))
    expect(await resumed.exited, resumed.output()).toBe(0)
    expect(await storedByWorker('fleet-c')).toEqual({ 'forge-worker-5d8f7-c3': 5 })
    expect(workerLogs()).toEqual([])
  })

  it('forge sweep --workers 0 says so too while no worker polls, and completes once one starts', async () => {
    const taskQueue = 'forge-fleet-d'
    const file = join(stack.home, 'fleet-d.yaml')
    writeFileSync(file, 'name: fleet-d\nsuites: [smoke]\nadapters: [mock]\nattempts: 1\n')
    const notice = noPollerNotice(taskQueue, stack.config.temporal.namespace)
    const cli = startCli(['sweep', file, '--workers', '0', '--sweep-id', 'fleet-d'], { ...stack.env, FORGE_TASK_QUEUE: taskQueue })
    await waitFor('the sweep\'s no-poller notice', () => whenPrinted(cli, notice), 90_000)
    expect(childrenOf(cli.child.pid!).filter((cmd) => /worker/.test(cmd))).toEqual([])
    await startChartWorker('forge-worker-5d8f7-d4', stackServers(taskQueue))
    expect(await cli.exited, cli.output()).toBe(0)
    expect(cli.output()).toContain(`worker forge-worker-5d8f7-d4 now polls task queue ${taskQueue}`)
    expect(cli.output().split(notice).length - 1).toBe(1)
  })

  it('a fleet worker in which a module agent ran unsandboxed drains and exits 1; the fresh one its supervisor starts serves later runs clean', async () => {
    const taskQueue = 'forge-fleet-e'
    const env = { ...stack.env, FORGE_TASK_QUEUE: taskQueue }
    const tainted = await startChartWorker('forge-worker-5d8f7-e5', stackServers(taskQueue))
    // one task, one attempt: one activity, which the first worker takes
    const suite = join(stack.home, 'one-task')
    cpSync(join(packageRoot(), 'suites', 'smoke'), suite, { recursive: true })
    for (const file of readdirSync(join(suite, 'tasks')).slice(1)) rmSync(join(suite, 'tasks', file))
    const agent = join(packageRoot(), 'examples', 'agents', 'module-agent.mjs')
    const cli = startCli(['run', '--suite', suite, '--adapter', 'module', '--no-sandbox', '--adapter-config', JSON.stringify({ path: agent }), '--attempts', '1', '--seed', '7', '--run-id', 'fleet-e', '--workers', '0'], env)
    // the agent's code ran in the worker: it stops taking work and exits non-zero, naming why
    expect(await tainted.proc.exited).toBe(1)
    const log = readFileSync(tainted.proc.log, 'utf8')
    expect(log).toContain('agent code ran inside this worker process: it drains and exits so that no later run shares it')
    // (oclif wraps and colours the error line)
    expect(log.replace(/\u001b\[\d+m/g, '').replace(/\s*\n\s*›\s*/g, ' ')).toContain(`this worker stopped: a module agent, file://${agent}, ran inside it unsandboxed (sandbox: false), so no later run may share its process`)
    // the run goes on on the fresh pod (the tainted one ran its attempt, degraded as the flag says)
    const fresh = await startChartWorker('forge-worker-5d8f7-e6', stackServers(taskQueue))
    expect(await cli.exited, cli.output()).toBe(0)
    expect(await storedByWorker('fleet-e')).toEqual({ 'forge-worker-5d8f7-e5': 1 })
    const next = startCli(['run', '--suite', 'smoke', '--adapter', 'mock', '--attempts', '1', '--seed', '7', '--run-id', 'fleet-e2', '--workers', '0'], env)
    expect(await next.exited, next.output()).toBe(0)
    expect(await storedByWorker('fleet-e2')).toEqual({ 'forge-worker-5d8f7-e6': 5 })
    const reader = await openReader(stack.config)
    try {
      const rows = await reader.query<{ run_id: string; validity: string; n: string }>("SELECT run_id, validity, count() AS n FROM attempts FINAL WHERE run_id IN ('fleet-e', 'fleet-e2') GROUP BY run_id, validity ORDER BY run_id", {})
      expect(rows.map((r) => [r.run_id, r.validity, Number(r.n)])).toEqual([
        ['fleet-e', 'degraded', 1],
        ['fleet-e2', 'valid', 5],
      ])
    } finally {
      await reader.close()
    }
    expect(fresh.proc.child.exitCode).toBeNull()
  })
})

describe('forge run --workers 0 as a fleet Job', () => {
  it('against a Temporal, NATS and ClickHouse it did not start, starts nothing on its machine: the fleet\'s worker and ingester run and store the run', async () => {
    // the fleet: servers of their own, an ingester pod and a worker pod as the chart starts them
    const dir = join(stack.home, 'fleet')
    mkdirSync(dir)
    const [temporal, nats, clickhouse] = await Promise.all([startTemporal(dir), startNats(dir, 1), startChdbHttpServer(join(dir, 'clickhouse'))])
    cleanups.push(() => stopProc(temporal.proc), () => nats.stop(), () => clickhouse.close())
    const servers: Servers = {
      temporalAddress: temporal.address,
      natsUrl: nats.url,
      taskQueue: 'forge',
      clickhouseUrl: clickhouse.url,
      // this NATS has no users (test/security/bus.test.ts runs a fleet process against one that has): the shared results key only
      bus: { FORGE_RESULTS_KEY: randomBytes(32).toString('hex') },
    }
    const [ingesterPort = 0, jobPort = 0] = await freePorts(2)
    const ingester = startRole('forge-ingester-0', 'ingester', [], podEnv('forge-ingester-0', servers, ingesterPort), join(stack.home, 'pod-logs'))
    procs.push(ingester)
    await waitUntilReady(ingester, ingesterPort)
    const worker = await startChartWorker('forge-worker-5d8f7-d4', servers)

    // the Job's container: entrypoint.sh run … --workers 0, with the chart's variables and its own FORGE_HOME
    const jobEnv = podEnv('forge-run-job', servers, jobPort)
    const gate = join(dir, 'hold-d')
    writeFileSync(gate, '')
    const job = startCli(['run', '--suite', 'smoke', '--adapter', 'mock', '--attempts', '2', '--seed', '7', '--run-id', 'fleet-d', '--workers', '0', '--adapter-config', JSON.stringify({ hold_file: gate })], jobEnv, true)
    await waitFor('the run started', () => whenPrinted(job, "run fleet-d: 5 tasks × 2 attempts = 10 on the fleet's workers"), 90_000)
    // no worker, no ingester, no dev server, no supervisor: the Job's process has no children at all
    expect(childrenOf(job.child.pid!)).toEqual([])
    rmSync(gate)
    expect(await job.exited, job.output()).toBe(0)

    expect(await storedByWorker('fleet-d', async () => directReader(await openClickHouse({ kind: 'server', url: clickhouse.url })))).toEqual({ 'forge-worker-5d8f7-d4': 10 })
    expect(metricValue((await httpGet(worker.healthPort, '/metrics'))?.body ?? '', 'forge_attempts_total')).toBe(10)
    expect(job.output()).not.toContain('starting')
    expect(existsSync(join(jobEnv['FORGE_HOME']!, 'stack.json'))).toBe(false)
  })
})
