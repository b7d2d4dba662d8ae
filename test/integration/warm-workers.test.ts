/**
 * Warm workers (stack/warm-workers.ts) on a real stack: a run leaves one, the next run's worker is
 * that process, and it serves run after run (its workflow worker polling between them) up to
 * FORGE_WARM_WORKER_RUNS, loading an edited suite again; a new build ends it; a refused run leaves it
 * waiting, an impostor, a silent socket or a stale socket file is not used, the claimer's death, the
 * idle timeout and `stack down` end it, two runs that end together leave one, a run whose agent ran
 * inside it (unsandboxed module) is its last, a SIGKILL mid-run loses no attempt and its replacement
 * stays, and `forge run`'s init hook claims it as the use case does.
 */
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { createServer, type Server, type Socket } from 'node:net'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client, Connection } from '@temporalio/client'
import { jetstreamManager } from '@nats-io/jetstream'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runSuite } from '../../app/run.js'
import { warmUpWorkflowWorker } from '../../app/workflow-warmup.js'
import { settingsEnv } from '../../config/index.js'
import { busAccessEnv } from '../../store/bus-auth.js'
import { connectBus, WARMUP_STREAM } from '../../store/bus.js'
import { claimWarmWorker, claimWarmWorkers, jsonLine, leaveWarmWorkers, onJsonLines, stopWarmWorkers, warmDir, warmPidPath, warmSocketPath, WARM_SLOT_ARG, WARM_SOCKET_ARG } from '../../stack/warm-workers.js'
import { stackDown, stackStatus, stackUp } from '../../stack/local-stack.js'
import { packageRoot } from '../../engine/suite-loader.js'
import { distEntry } from '../../stack/paths.js'
import { forge, forgeAsync, startTestStack, type TestStack } from '../helpers/stack.js'
import { patientSmoke } from '../helpers/suites.js'
import { startService } from '../adapters/service.js'
import { alive, until } from '../helpers/processes.js'

let stack: TestStack
const before = { warm: process.env['FORGE_WARM_WORKERS'], idle: process.env['FORGE_WARM_WORKER_IDLE'], runs: process.env['FORGE_WARM_WORKER_RUNS'] }

beforeAll(async () => {
  stack = await startTestStack('warm')
  process.env['FORGE_WARM_WORKERS'] = '1'
})
afterAll(async () => {
  for (const [name, value] of [['FORGE_WARM_WORKERS', before.warm], ['FORGE_WARM_WORKER_IDLE', before.idle], ['FORGE_WARM_WORKER_RUNS', before.runs]] as const) {
    if (value === undefined) delete process.env[name]
    else process.env[name] = value
  }
  await stack?.down()
})

/** the warm worker processes listening (or about to) on `path` */
function warmWorkersAt(path: string): number[] {
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0')
      // started as one, or forked for a run that it stayed after
      const named = [WARM_SOCKET_ARG, WARM_SLOT_ARG].some((arg) => args.includes(arg) && args[args.indexOf(arg) + 1] === path)
      if (named && alive(Number(entry))) pids.push(Number(entry))
    } catch {
      // gone meanwhile
    }
  }
  return pids
}

/** what a failed wait on slot 0's log shows: its workers' own lines (not the SDK's), the last of them */
const workerLines = (): string => `worker log (its workers' lines, the last):\n${readFileSync(`${stack.home}/logs/worker-0.log`, 'utf8').split('\n').filter((line) => /\bworker \d+/.test(line)).join('\n').slice(-8000)}`

/** the one warm worker of slot 0 once it listens (a run leaves one when there is none) */
async function warmWorker(): Promise<number> {
  if (!existsSync(warmSocketPath(stack.home, 0)) && warmWorkersAt(warmSocketPath(stack.home, 0)).length === 0) expect((await runOn('warm-leave')).status).toBe('completed')
  const path = warmSocketPath(stack.home, 0)
  expect(await until(() => existsSync(path) && warmWorkersAt(path).length === 1)).toBe(true)
  return warmWorkersAt(path)[0]!
}

const smoke = (seed: string) => ({ suite: 'smoke', adapter: 'mock', attempts: 2, workers: 1, concurrency: 5, seed })

async function runOn(seed: string): Promise<{ pids: number[]; attempts: number; status: string; runId: string }> {
  let pids: number[] = []
  const report = await runSuite(stack.config, smoke(seed), (event) => {
    if (event.kind === 'workers') pids = event.pids
  })
  return { pids, attempts: report.attempts, status: report.status, runId: report.run_id }
}

/** who took the workflow tasks of a run's workflows (RunWorkflow and the shard children it started, if any) */
async function workflowTaskTakers(runId: string): Promise<Set<string>> {
  const connection = await Connection.connect({ address: stack.endpoints.temporalAddress })
  try {
    const client = new Client({ connection, namespace: stack.config.temporal.namespace })
    const takers = new Set<string>()
    const workflowIds = [`forge-run-${runId}`]
    for (let i = 0; i < workflowIds.length; i++) {
      const history = await client.workflow.getHandle(workflowIds[i]!).fetchHistory()
      for (const event of history.events ?? []) {
        const identity = event.workflowTaskStartedEventAttributes?.identity
        if (identity) takers.add(identity)
        const child = event.childWorkflowExecutionStartedEventAttributes?.workflowExecution?.workflowId
        if (child) workflowIds.push(child)
      }
    }
    return takers
  } finally {
    await connection.close()
  }
}

/** a unix socket server at slot 0 standing in for a warm worker; records what claimers send it */
async function impostor(greet: ((socket: Socket) => void) | undefined): Promise<{ server: Server; received: Record<string, unknown>[] }> {
  const received: Record<string, unknown>[] = []
  const server = createServer((socket) => {
    socket.on('error', () => undefined)
    onJsonLines(socket, (message) => received.push(message))
    greet?.(socket)
  })
  await new Promise<void>((resolve) => server.listen(warmSocketPath(stack.home, 0), resolve))
  return { server, received }
}

describe('warm workers', () => {
  it("a run leaves one — the worker it forked, compiled hot by it —, only this user can reach it, and the next run's worker is that process", async () => {
    await stopWarmWorkers(stack.home)
    expect(await until(() => warmWorkersAt(warmSocketPath(stack.home, 0)).length === 0)).toBe(true)
    const first = await runOn('warm-1')
    expect(first.status).toBe('completed')
    const pid = await warmWorker()
    expect(first.pids).toEqual([pid])
    // with the workflow worker the run made polling on, compiled hot by the run (not a prepared, never-polled one)
    expect(readFileSync(`${stack.home}/logs/worker-0.log`, 'utf8')).toContain(`worker ${pid}: served its run; now the warm worker of ${warmSocketPath(stack.home, 0)}, its workflow worker polling on`)
    expect(readFileSync(warmPidPath(warmSocketPath(stack.home, 0)), 'utf8')).toBe(`${pid}\n`)
    expect(statSync(warmDir(stack.home)).mode & 0o777).toBe(0o700)
    expect(statSync(warmSocketPath(stack.home, 0)).mode & 0o777).toBe(0o600)
    expect(stackStatus(stack.config)).toContainEqual({ name: 'warm-worker-0', state: 'running', detail: expect.stringMatching(new RegExp(`^pid ${pid} waiting for the next run, RSS \\d+ MiB`)) as unknown })

    const second = await runOn('warm-2')
    expect(second.pids).toEqual([pid])
    expect(second.attempts).toBe(10)
    expect(second.status).toBe('completed')
    // its workflows too: forge run does not load the SDK to host them when every worker was warm, and
    // the warm worker served them from the workflow worker it made while it waited (named by its process)
    expect([...(await workflowTaskTakers(second.runId))]).toEqual([`${hostname()}-${pid}`])
    expect(readFileSync(`${stack.home}/logs/worker-0.log`, 'utf8')).not.toContain(`warm worker ${pid}: no workflow worker prepared`)
    expect(readFileSync(`${stack.home}/logs/worker-0.log`, 'utf8')).toContain(`warm worker ${pid} claimed by a run`)
    // it served that run and waits for the next, listening again before the run ended: the run left no other
    expect(existsSync(warmSocketPath(stack.home, 0))).toBe(true)
    expect(warmWorkersAt(warmSocketPath(stack.home, 0))).toEqual([pid])
    expect(readFileSync(warmPidPath(warmSocketPath(stack.home, 0)), 'utf8')).toBe(`${pid}\n`)
    // with the workflow worker that served the run's workflows still polling, compiled hot
    expect(readFileSync(`${stack.home}/logs/worker-0.log`, 'utf8')).toContain(`warm worker ${pid}: served 2 run(s); waiting again, its workflow worker polling on`)
    // and serves the next one too, from that workflow worker
    const third = await runOn('warm-3')
    expect(third.pids).toEqual([pid])
    expect(third).toMatchObject({ attempts: 10, status: 'completed' })
    expect([...(await workflowTaskTakers(third.runId))]).toEqual([`${hostname()}-${pid}`])
    expect(warmWorkersAt(warmSocketPath(stack.home, 0))).toEqual([pid])
  })

  it('serves run after run up to FORGE_WARM_WORKER_RUNS, then exits and the run leaves a fresh one', async () => {
    await stopWarmWorkers(stack.home)
    expect(await until(() => warmWorkersAt(warmSocketPath(stack.home, 0)).length === 0)).toBe(true)
    process.env['FORGE_WARM_WORKER_RUNS'] = '3'
    try {
      // the run forks it (its first run) and it stays
      const pid = await warmWorker()
      expect((await runOn('runs-2')).pids).toEqual([pid])
      expect(warmWorkersAt(warmSocketPath(stack.home, 0))).toEqual([pid])
      expect((await runOn('runs-3')).pids).toEqual([pid])
      // its third run was its last: it went, and that run left another for the slot
      expect(await until(() => !alive(pid))).toBe(true)
      expect(readFileSync(`${stack.home}/logs/worker-0.log`, 'utf8')).toMatch(new RegExp(`warm worker ${pid}: served 3 run\\(s\\), RSS \\d+ MiB; exiting for a fresh one`))
      const fresh = await warmWorker()
      expect(fresh).not.toBe(pid)
      expect((await runOn('runs-4')).pids).toEqual([fresh])
    } finally {
      delete process.env['FORGE_WARM_WORKER_RUNS']
    }
    // with FORGE_WARM_WORKER_RUNS=1 a run's forked worker does not stay: the run starts a fresh one
    await stopWarmWorkers(stack.home)
    expect(await until(() => warmWorkersAt(warmSocketPath(stack.home, 0)).length === 0)).toBe(true)
    process.env['FORGE_WARM_WORKER_RUNS'] = '1'
    try {
      const once = await runOn('runs-once')
      expect(await until(() => !alive(once.pids[0]!))).toBe(true)
      expect(await warmWorker()).not.toBe(once.pids[0])
    } finally {
      delete process.env['FORGE_WARM_WORKER_RUNS']
    }
    // a run whose home keeps no warm worker (FORGE_WARM_WORKERS=0) stops the one it claimed
    const pid = await warmWorker()
    process.env['FORGE_WARM_WORKERS'] = '0'
    try {
      expect((await runOn('runs-none')).pids).toEqual([pid])
      expect(await until(() => !alive(pid))).toBe(true)
      expect(existsSync(warmSocketPath(stack.home, 0))).toBe(false)
    } finally {
      process.env['FORGE_WARM_WORKERS'] = '1'
    }
  })

  it('serves the next run the suite as it is then: a task edited between two runs on the same warm worker', async () => {
    const suite = mkdtempSync(join(tmpdir(), 'forge-warm-suite-'))
    cpSync(join(packageRoot(), 'suites', 'smoke'), suite, { recursive: true })
    const pid = await warmWorker()
    const instructionOf = async (runId: string): Promise<string[]> => {
      const rows = JSON.parse(forge(['sql', `SELECT DISTINCT instruction FROM attempts WHERE run_id = '${runId}' AND task_id = 'echo_greeting'`, '--json'], stack.env).stdout) as { instruction: string }[]
      return rows.map((row) => row.instruction)
    }
    const run = async (seed: string) => {
      let pids: number[] = []
      const report = await runSuite(stack.config, { ...smoke(seed), suite }, (event) => {
        if (event.kind === 'workers') pids = event.pids
      })
      expect(report.status).toBe('completed')
      return { pids, runId: report.run_id }
    }
    const before = await run('edit-1')
    expect(before.pids).toEqual([pid])
    const task = join(suite, 'tasks', 'echo_greeting.yaml')
    writeFileSync(task, readFileSync(task, 'utf8').replace(/^instruction: .*$/m, 'instruction: Greet the user back, edited between two runs.'))
    const after = await run('edit-2')
    expect(after.pids).toEqual([pid])
    expect(await instructionOf(after.runId)).toEqual(['Greet the user back, edited between two runs.'])
    expect(await instructionOf(before.runId)).not.toEqual(['Greet the user back, edited between two runs.'])
  })

  it('exits when a new build is there, its workflow worker (polling between runs) stopped first', async () => {
    const pid = await warmWorker()
    // after a run it waits with that run's workflow worker still polling the queue
    expect((await runOn('build-1')).pids).toEqual([pid])
    expect(readFileSync(`${stack.home}/logs/worker-0.log`, 'utf8')).toMatch(new RegExp(`warm worker ${pid}: served \\d+ run\\(s\\); waiting again, its workflow worker polling on`))
    // npm run build rewrites the workflow bundle: that code must not serve the next run's workflows
    const bundle = distEntry('workflow-bundle.js')
    const { atime, mtime } = statSync(bundle)
    utimesSync(bundle, atime, new Date(mtime.getTime() + 1_000))
    try {
      expect(await until(() => !alive(pid)), workerLines()).toBe(true)
    } finally {
      utimesSync(bundle, atime, mtime)
    }
    expect(readFileSync(`${stack.home}/logs/worker-0.log`, 'utf8')).toContain(`warm worker ${pid}: a new build is there`)
    expect(existsSync(warmSocketPath(stack.home, 0))).toBe(false)
    // the next run forks its own and leaves a new one
    const next = await runOn('build-2')
    expect(next.status).toBe('completed')
    expect(next.pids).not.toContain(pid)
  })

  it('exits after its run when a build was written while it served it, and the worker that run leaves goes when the build changes again', async () => {
    const pid = await warmWorker()
    const bundle = distEntry('workflow-bundle.js')
    const { atime, mtime } = statSync(bundle)
    const workerLog = (): string => readFileSync(`${stack.home}/logs/worker-0.log`, 'utf8')
    const waits = (): number => workerLog().split(`warm worker ${pid} waiting on `).length - 1
    const waitedBefore = waits()
    let fresh: number | undefined
    try {
      // the build lands while the worker serves a run (claimed, it watches nothing): it must not wait for
      // the next run with the build it loaded — what it sees as it starts waiting is not its baseline
      let bumped = false
      const report = await runSuite(stack.config, smoke('build-during-run'), (event) => {
        if (event.kind !== 'workers' || bumped) return
        expect(event.pids).toEqual([pid])
        utimesSync(bundle, atime, new Date(mtime.getTime() + 2_000))
        bumped = true
      })
      expect(report.status).toBe('completed')
      expect(bumped).toBe(true)
      expect(await until(() => !alive(pid)), workerLines()).toBe(true)
      expect(workerLog()).toContain(`warm worker ${pid}: a new build is there`)
      expect(waits()).toBe(waitedBefore)
      // the run left a fresh worker for the slot, of the build as it is now; the build changes again: it goes
      fresh = await warmWorker()
      expect(fresh).not.toBe(pid)
    } finally {
      utimesSync(bundle, atime, mtime)
    }
    expect(await until(() => !alive(fresh!)), workerLines()).toBe(true)
    expect(workerLog()).toContain(`warm worker ${fresh}: a new build is there`)
  })

  it('keeps the workflow worker it makes when its run was done before it existed (a short run ends while the bundle loads): it polls and serves', async () => {
    // a worker serving a run that is over before its workflow worker is made (~150 ms of bundle load
    // after its attempt worker polls): told to stop as it says it is ready, and that it may keep it
    let stop!: () => void
    const shutdown = new Promise<void>((resolve) => (stop = resolve))
    const taskQueue = `keep-late-${process.pid}`
    // the built worker, as a worker process runs it (its workflow bundle is dist's)
    const { runWorker, retireWorkflows } = (await import(distEntry('workers/worker-main.js'))) as typeof import('../../workers/worker-main.js')
    // with a worker's bus credentials, as its process gets them
    const access = busAccessEnv(stack.endpoints.natsUrl, 'worker')
    const before = Object.fromEntries(Object.keys(access).map((name) => [name, process.env[name]]))
    Object.assign(process.env, access)
    const kept = await runWorker({
      temporalAddress: stack.endpoints.temporalAddress,
      namespace: stack.config.temporal.namespace,
      taskQueue,
      natsUrl: stack.endpoints.natsUrl,
      concurrency: 1,
      logLevel: 'silent',
      judge: false,
      shutdown,
      report: () => stop(),
      keepWorkflows: () => true,
    }).finally(() => {
      for (const [name, value] of Object.entries(before)) {
        if (value === undefined) delete process.env[name]
        else process.env[name] = value
      }
    })
    try {
      expect(kept).toBeDefined()
      expect(kept!.running).toBeDefined()
      expect(kept!.worker.getState()).toBe('RUNNING')
      // it polls: a workflow on its queue is served by it (a warm-up workflow: nothing runs its activities)
      const report = await warmUpWorkflowWorker(kept!.connection, { namespace: stack.config.temporal.namespace, taskQueue })
      expect(report.scheduled).toBeGreaterThan(0)
    } finally {
      if (kept !== undefined) await retireWorkflows(kept)
    }
  })

  it('stays waiting through a refused run and a connection that sends garbage', async () => {
    const pid = await warmWorker()
    await expect(runSuite(stack.config, { ...smoke('warm-refused'), suite: 'no-such-suite' })).rejects.toThrow(/no-such-suite/)
    // someone else's line on its socket: that connection is dropped, the worker keeps waiting
    const { connect } = await import('node:net')
    const stranger = connect(warmSocketPath(stack.home, 0))
    const hello = await new Promise<Record<string, unknown>>((resolve) => onJsonLines(stranger, resolve))
    expect(hello).toMatchObject({ warmWorker: { pid } })
    stranger.write('not json\n')
    await new Promise((resolve) => stranger.once('close', resolve))
    expect(alive(pid)).toBe(true)
    const next = await runOn('warm-after-refusal')
    expect(next.pids).toEqual([pid])
    expect(next.status).toBe('completed')
  })

  it('is not used when it runs other code, says nothing, or is gone (a stale socket file): the run forks its own', async () => {
    await warmWorker()
    expect(await stopWarmWorkers(stack.home)).toBe(1)
    expect(await until(() => !existsSync(warmSocketPath(stack.home, 0)))).toBe(true)

    // another build's worker is told to stop and gets no settings
    const other = await impostor((socket) => socket.write(jsonLine({ warmWorker: { pid: process.pid, build: 'another build' } })))
    const onOther = await runOn('warm-impostor')
    expect(onOther.status).toBe('completed')
    expect(onOther.pids).not.toContain(process.pid)
    expect(other.received).toEqual([{ forgeWorkerStop: true }])
    await new Promise((resolve) => other.server.close(resolve))

    // a socket that never says hello: the claim gives up after its timeout
    const silent = await impostor(undefined)
    const claimed = await claimWarmWorkers(stack.home, 1, 300)
    expect(claimed).toEqual([])
    expect(silent.received).toEqual([])
    await new Promise((resolve) => silent.server.close(resolve))

    // a warm worker killed outright leaves its socket file: a claim removes it and the slot gets a new one
    expect((await runOn('warm-again')).status).toBe('completed')
    const pid = await warmWorker()
    process.kill(pid, 'SIGKILL')
    expect(await until(() => !alive(pid))).toBe(true)
    expect(existsSync(warmSocketPath(stack.home, 0))).toBe(true)
    const afterKill = await runOn('warm-stale')
    expect(afterKill.status).toBe('completed')
    expect(afterKill.pids).not.toContain(pid)
    expect(await warmWorker()).not.toBe(pid)
  })

  it("ends when its claimer dies (its run gone) and when idle for FORGE_WARM_WORKER_IDLE; stack down stops it", async () => {
    // claimed for a run that does not exist, then the claimer hangs up: the worker finds the run over and exits
    const pid = await warmWorker()
    const [worker] = await claimWarmWorkers(stack.home, 1)
    expect(worker?.pid).toBe(pid)
    const ready = new Promise<unknown>((resolve) => worker!.once('message', resolve))
    worker!.send({
      forgeWorkerSettings: {
        ...process.env,
        ...settingsEnv({ temporalAddress: stack.endpoints.temporalAddress, natsUrl: stack.endpoints.natsUrl, workerConcurrency: 1, exitWithParent: true, workerRunId: 'no-such-run' }),
        ...busAccessEnv(stack.endpoints.natsUrl, 'worker'),
      },
      cwd: process.cwd(),
    })
    expect(await ready).toMatchObject({ ready: true })
    worker!.release()
    expect(await until(() => !alive(pid))).toBe(true)

    // idle: it exits by itself and frees its slot
    process.env['FORGE_WARM_WORKER_IDLE'] = '1'
    try {
      await runOn('warm-idle')
      const idle = await warmWorker()
      expect(await until(() => !alive(idle))).toBe(true)
      expect(existsSync(warmSocketPath(stack.home, 0))).toBe(false)
      expect(readFileSync(`${stack.home}/logs/worker-0.log`, 'utf8')).toContain(`warm worker ${idle}: no run came for 1 s; exiting`)
    } finally {
      delete process.env['FORGE_WARM_WORKER_IDLE']
    }

    await runOn('warm-down')
    const last = await warmWorker()
    expect(await stackDown(stack.config)).toContain('warm workers')
    expect(await until(() => !alive(last))).toBe(true)
    expect(existsSync(warmSocketPath(stack.home, 0))).toBe(false)
    stack.endpoints = await stackUp(stack.config)
  })

  it('is one per slot when two runs end at once', async () => {
    await stopWarmWorkers(stack.home)
    expect(await until(() => warmWorkersAt(warmSocketPath(stack.home, 0)).length === 0)).toBe(true)
    const [first] = leaveWarmWorkers(stack.home, 1)
    // the first still loads (no socket yet): its pid file keeps the slot
    expect(leaveWarmWorkers(stack.home, 1)).toEqual([])
    expect(await warmWorker()).toBe(first)
    expect(leaveWarmWorkers(stack.home, 1)).toEqual([])
    expect(warmWorkersAt(warmSocketPath(stack.home, 0))).toEqual([first])
  })

  it('is one per slot when two forge runs that each forked their worker end together: the other worker goes', async () => {
    await stopWarmWorkers(stack.home)
    expect(await until(() => warmWorkersAt(warmSocketPath(stack.home, 0)).length === 0)).toBe(true)
    // two http agents that hold every attempt until both runs have one in flight: both runs fork a
    // worker for slot 0 (none is warm), and neither can end before the other has its worker serving
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const invoked = [0, 0]
    const agents = await Promise.all(
      [0, 1].map((which) =>
        startService({
          'POST /reset': (_req, res) => void res.writeHead(204).end(),
          'POST /invoke': async (_req, res) => {
            invoked[which]!++
            if (invoked.every((count) => count > 0)) release()
            await gate
            res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ output: 'done' }))
          },
        }),
      ),
    )
    // a held attempt cannot time out, however slowly the other run starts
    const suite = patientSmoke()
    try {
      const logFrom = existsSync(`${stack.home}/logs/worker-0.log`) ? readFileSync(`${stack.home}/logs/worker-0.log`, 'utf8').length : 0
      const env = { ...stack.env, FORGE_WARM_WORKERS: '1' }
      const runs = await Promise.all(
        agents.map((agent, which) =>
          forgeAsync(['run', '--suite', suite, '--attempts', '1', '--adapter', 'http', '--adapter-config', JSON.stringify({ base_url: agent.url }), '--run-id', `warm-together-${which}`], env, 120_000),
        ),
      )
      for (const run of runs) expect(run.status, run.stderr).toBe(0)
      expect(invoked.every((count) => count > 0)).toBe(true)
      // the two forked workers each wanted to stay: the one that listened first is the slot's warm worker,
      // the other found the socket taken and exited; the runs left no third
      const log = () => readFileSync(`${stack.home}/logs/worker-0.log`, 'utf8').slice(logFrom)
      expect(await until(() => /is taken; exiting/.test(log()))).toBe(true)
      const stayed = [...log().matchAll(/worker (\d+): served its run; now the warm worker of/g)].map((match) => Number(match[1]))
      const went = [...log().matchAll(/warm worker (\d+): \S+ is taken; exiting/g)].map((match) => Number(match[1]))
      expect(stayed).toHaveLength(2)
      expect(went).toHaveLength(1)
      const kept = stayed.find((pid) => pid !== went[0])!
      expect(stayed).toContain(went[0])
      expect(await until(() => !alive(went[0]!))).toBe(true)
      expect(warmWorkersAt(warmSocketPath(stack.home, 0))).toEqual([kept])
      expect(readFileSync(warmPidPath(warmSocketPath(stack.home, 0)), 'utf8')).toBe(`${kept}\n`)
      // and it serves the next run
      // and it serves the next run (a forge run too: a claimer with other node flags, as this test process has, would not take it)
      expect(forge(['run', '--suite', 'smoke', '--adapter', 'mock', '--attempts', '1', '--seed', 'after-together'], env).status).toBe(0)
      expect(log()).toContain(`warm worker ${kept} claimed by a run`)
      expect(warmWorkersAt(warmSocketPath(stack.home, 0))).toEqual([kept])
      // the next tests claim from this process, whose node flags a CLI's worker does not share: they start from none
      expect(await stopWarmWorkers(stack.home)).toBe(1)
      expect(await until(() => !alive(kept))).toBe(true)
    } finally {
      release()
      await Promise.all(agents.map((agent) => agent.close()))
    }
  })

  it('does not serve again after a run whose agent ran inside it (module, sandbox: false): the next run gets a fresh process, its attempts valid', async () => {
    const pid = await warmWorker()
    const validity = (runId: string): Record<string, number> => {
      const r = forge(['sql', `SELECT validity, count() AS n FROM attempts FINAL WHERE run_id = '${runId}' GROUP BY validity`, '--json'], stack.env)
      expect(r.status, r.stderr).toBe(0)
      return Object.fromEntries((JSON.parse(r.stdout) as { validity: string; n: string }[]).map((row) => [row.validity, Number(row.n)]))
    }
    let pids: number[] = []
    const tainted = await runSuite(stack.config, { ...smoke('warm-tainted'), adapter: 'module', adapter_config: { path: join(packageRoot(), 'examples', 'agents', 'module-agent.mjs'), sandbox: false } }, (event) => {
      if (event.kind === 'workers') pids = event.pids
    })
    expect(pids).toEqual([pid])
    expect(tainted.attempts).toBe(10)
    expect(validity(tainted.run_id)).toEqual({ degraded: 10 })
    // the agent's code ran in the warm worker: it may have altered it, so it goes instead of waiting
    expect(await until(() => !alive(pid))).toBe(true)
    expect(readFileSync(`${stack.home}/logs/worker-0.log`, 'utf8')).toMatch(new RegExp(`warm worker ${pid}: served \\d+ run\\(s\\), its process is tainted \\(a module agent, file:.*module-agent\\.mjs, ran inside it unsandboxed \\(sandbox: false\\)\\); exiting for a fresh one`))
    // the run left a fresh one, whose runs are clean
    const fresh = await warmWorker()
    expect(fresh).not.toBe(pid)
    const next = await runOn('warm-after-tainted')
    expect(next.pids).toEqual([fresh])
    expect(validity(next.runId)).toEqual({ valid: 10 })
  })

  it('SIGKILLed while it serves a run: the run completes on the worker that replaces it, which is the slot\'s warm worker after', async () => {
    const pid = await warmWorker()
    const runId = 'warm-killed'
    // every attempt waits at the gate: the run is held open with its attempts in the warm worker's hands
    const gate = join(stack.home, 'hold-killed')
    writeFileSync(gate, '')
    let pids: number[] = []
    const notices: string[] = []
    // (a short heartbeat timeout: Temporal gives the dead worker's attempts to another within seconds)
    const running = runSuite(stack.config, { ...smoke('warm-killed'), suite: patientSmoke(), run_id: runId, heartbeat_timeout_ms: 3_000, adapter_config: { hold_file: gate } }, (event) => {
      if (event.kind === 'workers') pids = event.pids
      if (event.kind === 'stack') notices.push(event.message)
    })
    running.catch(() => undefined)
    // the run's attempt activities have started on the warm worker (one shard: in the run's own history)
    const connection = await Connection.connect({ address: stack.endpoints.temporalAddress })
    try {
      const run = new Client({ connection, namespace: stack.config.temporal.namespace }).workflow.getHandle(`forge-run-${runId}`)
      let started = 0
      for (let tries = 0; tries < 600 && started === 0; tries++) {
        await sleep(100)
        const pending = await run.describe().then((d) => d.raw.pendingActivities ?? [], () => [])
        const attempts = pending.filter((activity) => activity.activityType?.name === 'runAttempt' || activity.activityType?.name === 'runAttempts')
        started = attempts.filter((activity) => String(activity.state) === 'PENDING_ACTIVITY_STATE_STARTED' || activity.state === 2).length
      }
      expect(started).toBeGreaterThan(0)
    } finally {
      await connection.close()
    }
    expect(pids).toEqual([pid])
    process.kill(pid, 'SIGKILL')
    expect(await until(() => !alive(pid))).toBe(true)
    rmSync(gate)
    const report = await running
    expect(report).toMatchObject({ status: 'completed', attempts: 10 })
    // the attempts ran again, each stored once, on the worker the pool started in the slot's place (same worker id)
    const r = forge(['sql', `SELECT worker_id, count() AS n, uniqExact(attempt_uid) AS uids FROM attempts WHERE run_id = '${runId}' GROUP BY worker_id`, '--json'], stack.env)
    expect(r.status, r.stderr).toBe(0)
    expect(JSON.parse(r.stdout)).toEqual([{ worker_id: `${runId}-w0`, n: 10, uids: 10 }])
    const replaced = notices.map((notice) => /^worker 0 died \(exit status unknown\); started again as pid (\d+)$/.exec(notice)?.[1]).find((found) => found !== undefined)
    expect(replaced).toBeDefined()
    // and that one waits for the next run now
    const next = await warmWorker()
    expect(next).toBe(Number(replaced))
    expect((await runOn('warm-after-killed')).pids).toEqual([next])
  }, 240_000)

  it('is waited for by a run that starts while it still loads, not joined by a forked one', async () => {
    await stopWarmWorkers(stack.home)
    expect(await until(() => warmWorkersAt(warmSocketPath(stack.home, 0)).length === 0)).toBe(true)
    const [loading] = leaveWarmWorkers(stack.home, 1)
    expect(existsSync(warmSocketPath(stack.home, 0))).toBe(false)
    const run = await runOn('warm-loading')
    expect(run.status).toBe('completed')
    expect(run.pids).toEqual([loading])
    expect(readFileSync(`${stack.home}/logs/worker-0.log`, 'utf8')).toContain(`warm worker ${loading} claimed by a run`)
    // a claim of a slot whose warm worker died while loading gives up at once
    await stopWarmWorkers(stack.home)
    expect(await until(() => warmWorkersAt(warmSocketPath(stack.home, 0)).length === 0)).toBe(true)
    const [dying] = leaveWarmWorkers(stack.home, 1)
    process.kill(dying!, 'SIGKILL')
    const started = Date.now()
    expect(await claimWarmWorker(stack.home, 0, 30_000)).toBeUndefined()
    expect(Date.now() - started).toBeLessThan(10_000)
  })

  it('serves a run elsewhere (another task queue) from a workflow worker made for it, not the one it prepared', async () => {
    await stopWarmWorkers(stack.home)
    expect(await until(() => warmWorkersAt(warmSocketPath(stack.home, 0)).length === 0)).toBe(true)
    const [pid] = leaveWarmWorkers(stack.home, 1, { ...process.env, FORGE_TEMPORAL_ADDRESS: stack.endpoints.temporalAddress, FORGE_TASK_QUEUE: 'another-queue' })
    expect(await warmWorker()).toBe(pid)
    const run = await runOn('warm-other-queue')
    expect(run.pids).toEqual([pid])
    expect(run.status).toBe('completed')
    // from a workflow worker on this run's queue (every slot was warm: forge run hosted none), named by
    // its process as one that may outlive its run; the one it made for the other queue was let go
    expect([...(await workflowTaskTakers(run.runId))]).toEqual([`${hostname()}-${pid}`])
    expect(readFileSync(`${stack.home}/logs/worker-0.log`, 'utf8')).toContain(`warm worker ${pid}: served 1 run(s); waiting again, its workflow worker polling on`)
    // waiting again, its workflow worker polls on, and the next run's workflow tasks are served from it
    const next = await runOn('warm-same-queue')
    expect(next.pids).toEqual([pid])
    expect([...(await workflowTaskTakers(next.runId))]).toEqual([`${hostname()}-${pid}`])
  })

  it("forge run's init hook claims it, as a user runs forge run twice", async () => {
    const env = { ...stack.env, FORGE_WARM_WORKERS: '1' }
    const first = forge(['run', '--suite', 'smoke', '--adapter', 'mock', '--attempts', '1', '--seed', 'cli-1'], env)
    expect(first.status).toBe(0)
    const pid = await warmWorker()
    const second = forge(['run', '--suite', 'smoke', '--adapter', 'mock', '--attempts', '1', '--seed', 'cli-2'], env)
    expect(second.status).toBe(0)
    expect(second.stdout).toMatch(/5 attempts/)
    expect(readFileSync(`${stack.home}/logs/worker-0.log`, 'utf8')).toContain(`warm worker ${pid} claimed by a run`)
    // stack status shows the one waiting for the next run (the one that served this one); stack down stops it
    const third = warmWorkersAt(warmSocketPath(stack.home, 0))
    expect(third).toEqual([pid])
    const status = JSON.parse(forge(['stack', 'status', '--json'], env).stdout) as { name: string; detail: string }[]
    expect(status.find((row) => row.name === 'warm-worker-0')?.detail).toMatch(new RegExp(`^pid ${third[0]} (waiting for the next run|loading)`))
    expect(await stopWarmWorkers(stack.home)).toBe(1)
    expect(await until(() => !alive(third[0]!) && !existsSync(warmSocketPath(stack.home, 0)))).toBe(true)
    // FORGE_WARM_WORKERS=0: the run leaves none
    expect(forge(['run', '--suite', 'smoke', '--adapter', 'mock', '--attempts', '1', '--seed', 'cli-3'], { ...env, FORGE_WARM_WORKERS: '0' }).status).toBe(0)
    expect(warmWorkersAt(warmSocketPath(stack.home, 0))).toEqual([])
    expect(existsSync(warmSocketPath(stack.home, 0))).toBe(false)
    expect(stackStatus(stack.config).map((row) => row.name)).not.toContain('warm-worker-0')
  })
})

describe("a warm worker's JIT warm-up (FORGE_WARM_WORKER_WARMUP)", () => {
  const log = (): string => readFileSync(`${stack.home}/logs/worker-0.log`, 'utf8')
  const withWarmup = async (target: string, body: () => Promise<void>): Promise<void> => {
    const was = process.env['FORGE_WARM_WORKER_WARMUP']
    process.env['FORGE_WARM_WORKER_WARMUP'] = target
    try {
      // a warm worker of this target: the one waiting now was started with another
      await stopWarmWorkers(stack.home)
      expect(await until(() => warmWorkersAt(warmSocketPath(stack.home, 0)).length === 0)).toBe(true)
      await body()
    } finally {
      if (was === undefined) delete process.env['FORGE_WARM_WORKER_WARMUP']
      else process.env['FORGE_WARM_WORKER_WARMUP'] = was
      await stopWarmWorkers(stack.home)
    }
  }

  it('runs mock attempts while it waits until the process has run its target, a run\'s attempts counted; publishes them onto the warm-up stream only; serves the next run and warms up no more', async () => {
    await withWarmup('300', async () => {
      // everything published on the results' attempt subjects and on progress from here on
      const nc = await connectBus(stack.endpoints.natsUrl, 'warmup-watch')
      try {
        // by subject: an attempt published again (a retried activity) is still one attempt
        const seen = { attempts: new Set<string>(), progress: new Set<string>() }
        const attempts = nc.subscribe('forge.results.attempt.>', {
          callback: (_error, msg) => {
            seen.attempts.add(msg.subject)
          },
        })
        const progress = nc.subscribe('forge.progress.>', {
          callback: (_error, msg) => {
            seen.progress.add(msg.subject)
          },
        })
        await nc.flush()
        const first = await runOn('warmup-1')
        expect(first.status).toBe('completed')
        const pid = await warmWorker()
        expect(first.pids).toEqual([pid])
        // it ran the run's 10 attempts: 290 more make its 300
        expect(await until(() => log().includes(`warm worker ${pid}: JIT warm-up while it waits, 290 mock attempt(s) (FORGE_WARM_WORKER_WARMUP 300 in all)`))).toBe(true)
        expect(await until(() => log().includes(`warm worker ${pid}: JIT warm-up ran 290 attempt(s)`), 60_000), workerLines()).toBe(true)
        // through the bus, onto the warm-up stream the stack's ingester made and nobody reads: its probe and the 290 attempts
        expect(log()).toMatch(new RegExp(`warm worker ${pid}: JIT warm-up ran 290 attempt\\(s\\) in \\d+ ms \\(290 message\\(s\\) published to the warm-up stream FORGE_WARMUP, nothing stored\\)`))
        const admin = await connectBus(stack.endpoints.natsUrl, 'warmup-stream', 'ingester')
        try {
          expect((await (await jetstreamManager(admin)).streams.info(WARMUP_STREAM)).state.last_seq).toBe(291)
        } finally {
          await admin.close()
        }
        // then its workflow worker (polling on since the run): one warm-up workflow, taken by it, whose
        // batch activities went to a queue no worker polls and never ran (app/workflow-warmup.ts)
        const said = new RegExp(`warm worker ${pid}: workflow warm-up (forge-warmup-\\S+) scheduled (\\d+) batch activities nobody runs`)
        expect(await until(() => said.test(log()), 60_000), workerLines()).toBe(true)
        const [, warmupId, scheduled] = said.exec(log())!
        expect(Number(scheduled)).toBeGreaterThan(0)
        const connection = await Connection.connect({ address: stack.endpoints.temporalAddress })
        try {
          const client = new Client({ connection, namespace: stack.config.temporal.namespace })
          const handle = client.workflow.getHandle(warmupId!)
          expect(await handle.result()).toEqual({ scheduled: Number(scheduled) })
          const { events } = await handle.fetchHistory()
          expect(new Set(events!.flatMap((e) => e.workflowTaskStartedEventAttributes?.identity ?? []))).toEqual(new Set([`${hostname()}-${pid}`]))
          const queues = events!.flatMap((e) => e.activityTaskScheduledEventAttributes?.taskQueue?.name ?? [])
          expect(queues).toHaveLength(Number(scheduled))
          expect(new Set(queues)).toEqual(new Set([`${warmupId!}-void`]))
          // EVENT_TYPE_ACTIVITY_TASK_STARTED / _COMPLETED: none ran
          expect(events!.filter((e) => e.eventType === 11 || e.eventType === 12)).toEqual([])
        } finally {
          await connection.close()
        }
        await nc.flush()
        // the bus carried the run's 10 attempts and its progress, nothing of either warm-up's
        expect(seen.attempts.size).toBe(10)
        expect([...seen.progress]).toEqual([`forge.progress.${first.runId}`])
        attempts.unsubscribe()
        progress.unsubscribe()
        const second = await runOn('warmup-2')
        expect(second).toMatchObject({ status: 'completed', attempts: 10, pids: [pid] })
        // 310 attempts run: no second warm-up
        expect(await until(() => log().includes(`warm worker ${pid}: no JIT warm-up: it has run 310 attempt(s) (FORGE_WARM_WORKER_WARMUP 300)`))).toBe(true)
        expect(log().split(`warm worker ${pid}: JIT warm-up while it waits`).length - 1).toBe(1)
        // and its workflow worker was warmed up once: the process keeps it
        expect(log().split(`warm worker ${pid}: workflow warm-up `).length - 1).toBe(1)
      } finally {
        await nc.drain()
      }
    })
  })

  it('stops for a run that claims the worker mid-way, and the run it serves completes, its 10 attempts stored', async () => {
    await withWarmup('1000000', async () => {
      const first = await runOn('warmup-long-1')
      expect(first.status).toBe('completed')
      const pid = await warmWorker()
      // under way (a million attempts would take it many minutes)
      expect(await until(() => log().includes(`warm worker ${pid}: JIT warm-up while it waits`))).toBe(true)
      const second = await runOn('warmup-long-2')
      expect(second).toMatchObject({ status: 'completed', attempts: 10, pids: [pid] })
      // said once the attempts it had under way ended, before the run's settings were applied
      expect(log()).toMatch(new RegExp(`warm worker ${pid} claimed by a run\\n(.*\\n)*warm worker ${pid}: JIT warm-up stopped for the run after \\d+ attempt\\(s\\) in \\d+ ms`))
    })
  })
})
