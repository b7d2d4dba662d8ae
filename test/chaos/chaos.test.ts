/**
 * Chaos tests (issue 12), on the real binaries: a run of 200 attempts (smoke × 40, the mock agent) is
 * held at a known point by a gate file (the mock's `hold_file`: attempts 8 and up wait while it
 * exists), one process is SIGKILLed, the gate is released, and the run must finish by itself with
 * every attempt stored exactly once and the same statistics as an undisturbed run with the same seed
 * and config. No test waits on a sleep to be in the right place: the gate decides where the fault hits.
 *
 * Recovery time = from the kill until the run has finished (its CLI exited), printed as a table.
 */
import { Client, Connection } from '@temporalio/client'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openReader } from '../../app/store-access.js'
import { readStackState } from '../../stack/local-stack.js'
import { packageRoot } from '../../stack/paths.js'
import { PENDING_ACTIVITY_STARTED, startTestStack, type TestStack } from '../helpers/stack.js'

const ATTEMPTS = 40
const TASKS = 5
const PLANNED = ATTEMPTS * TASKS
/**
 * Attempts numbered below this run at once; the rest wait at the gate. The workers' slots add up to
 * every attempt (--concurrency: PLANNED / workers, rounded up to whole batches of 10 lanes), so held
 * attempts never keep the others from running — as long as no worker takes more batch activities than
 * its slots can run. Before workers reserved a batch's lanes per poll (workers/lane-slots.ts), one
 * could, and the run then never reached the gate (2 runs in 5).
 */
const HOLD_FROM = 8

let stack: TestStack
let suite: string
let gate: string
let adapterConfig: string
const table: { fault: string; recovery_s: string; lost: number; doubled: number }[] = []

beforeAll(async () => {
  stack = await startTestStack('chaos')
  // smoke with a deadline no gate wait can reach: held attempts must not turn into budget overruns
  const dir = mkdtempSync(join(tmpdir(), 'forge-chaos-suite-'))
  suite = join(dir, 'smoke')
  cpSync(join(packageRoot(), 'suites', 'smoke'), suite, { recursive: true })
  for (const file of readdirSync(join(suite, 'tasks'))) {
    const path = join(suite, 'tasks', file)
    writeFileSync(path, readFileSync(path, 'utf8').replace(/max_duration_ms: \d+/, 'max_duration_ms: 120000'))
  }
  gate = join(stack.home, 'chaos.gate')
  // one config (and so one config id and the same seeds) for the undisturbed run and every fault
  adapterConfig = JSON.stringify({ delay_ms: 50, hold_file: gate, hold_from: HOLD_FROM })
})

afterAll(async () => {
  console.log(
    ['', '| fault | recovery (kill → run complete) | lost | doubled |', '| --- | --- | --- | --- |', ...table.map((r) => `| ${r.fault} | ${r.recovery_s} s | ${r.lost} | ${r.doubled} |`)].join('\n'),
  )
  await stack?.down()
  if (suite !== undefined) rmSync(join(suite, '..'), { recursive: true, force: true })
})

interface Cli {
  child: ChildProcess
  exited: Promise<{ code: number | null; stdout: string; stderr: string }>
  /** what it printed so far, stdout then stderr */
  printed: () => string
}

/** `forge …` as a terminal job: its own process group, output captured. */
function startCli(args: string[]): Cli {
  const child = spawn(process.execPath, [join(packageRoot(), 'bin', 'run.js'), ...args], { env: stack.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })))
  return { child, exited, printed: () => stdout + stderr }
}

/**
 * Waits until forge run said all its workers are ready. Until then a worker that exits fails the run
 * as one that could not start (app/worker-pool.ts), even when the others already run attempts: on a
 * loaded machine the gate can be reached by the first workers alone (CI: a rolling restart killed a
 * worker still loading, and forge run ended).
 */
async function untilWorkersReady(cli: Cli): Promise<void> {
  while (!/worker process\(es\) ready/.test(cli.printed())) {
    failIfEnded(cli, 'before its workers were ready')
    await sleep(50)
  }
}

/** Fails the test with what forge run printed when it ended while the test still needs it running. */
function failIfEnded(cli: Cli, when: string): void {
  if (cli.child.exitCode !== null || cli.child.signalCode !== null) throw new Error(`forge run ended (${cli.child.exitCode ?? cli.child.signalCode}) ${when}:\n${cli.printed().slice(-3000)}`)
}

function runArgs(runId: string, workers: number): string[] {
  return ['run', '--suite', suite, '--attempts', String(ATTEMPTS), '--workers', String(workers), '--concurrency', String(Math.ceil(PLANNED / workers / 10) * 10), '--seed', 'chaos', '--run-id', runId,
    '--adapter-config', adapterConfig, '--heartbeat-timeout', '3', '--json']
}

async function sql<T>(query: string, params: Record<string, unknown> = {}): Promise<T[]> {
  const reader = await openReader(stack.config)
  try {
    return await reader.query<T>(query, params)
  } finally {
    await reader.close()
  }
}

/** Waits until the store holds every attempt in front of the gate (the run is then held at a known point). */
async function untilHeldAtGate(runId: string): Promise<void> {
  for (;;) {
    const [row] = await sql<{ n: number | string }>('SELECT count() AS n FROM attempts FINAL WHERE run_id = {run:String}', { run: runId }).catch(() => [{ n: 0 }])
    if (Number(row?.n) >= TASKS * HOLD_FROM) return
    await sleep(100)
  }
}

/** A file of /proc/<pid>; '' once the process is gone. */
function procFile(pid: number, name: string): string {
  try {
    return readFileSync(`/proc/${pid}/${name}`, 'utf8')
  } catch {
    return ''
  }
}

/** Processes alive now (zombies excluded). */
function livePids(): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => {
      const stat = procFile(pid, 'stat')
      return stat !== '' && !stat.includes(') Z ')
    })
}

/** A process's group id; -1 once it is gone. */
function processGroupOf(pid: number): number {
  const stat = procFile(pid, 'stat')
  return stat === '' ? -1 : Number(stat.split(') ')[1]!.split(' ')[2])
}

/** The worker processes `forge run` started (its children). */
function workerPids(cli: ChildProcess): number[] {
  const children = readFileSync(`/proc/${cli.pid}/task/${cli.pid}/children`, 'utf8').trim()
  return children === '' ? [] : children.split(/\s+/).map(Number)
}

/** What the statistics are made of: per task, outcome, bucket and validity, the number of attempts. */
async function statsOf(runId: string): Promise<{ rows: unknown[]; stats: Record<string, unknown> }> {
  const rows = await sql(
    'SELECT task_id, outcome, failure_bucket, validity, count() AS n FROM attempts FINAL WHERE run_id = {run:String} GROUP BY task_id, outcome, failure_bucket, validity ORDER BY task_id, outcome, failure_bucket, validity',
    { run: runId },
  )
  const r = spawnSync(process.execPath, [join(packageRoot(), 'bin', 'run.js'), 'stats', '--run-id', runId, '--json'], { env: stack.env, encoding: 'utf8' })
  const full = JSON.parse(r.stdout) as Record<string, unknown> & { tasks: Record<string, unknown>[] }
  return {
    rows,
    stats: {
      tasks: full.tasks.map((t) => ({ task_id: t['task_id'], k: t['k'], n: t['n'], rate: t['rate'], low: t['low'], high: t['high'], failure_buckets: t['failure_buckets'] })),
      suite_rate: full['suite_rate'],
      outcomes: full['outcomes'],
      validity: full['validity'],
      notice: full['notice'],
    },
  }
}

/** Rows beyond one per attempt, and planned attempts with no row. */
async function lostAndDoubled(runId: string): Promise<{ lost: number; doubled: number; rows: number; uids: number }> {
  const [row] = await sql<{ n: number | string; uids: number | string }>('SELECT count() AS n, uniqExact(attempt_uid) AS uids FROM attempts FINAL WHERE run_id = {run:String}', { run: runId })
  const rows = Number(row?.n)
  const uids = Number(row?.uids)
  return { lost: PLANNED - uids, doubled: rows - uids, rows, uids }
}

let baseline: Awaited<ReturnType<typeof statsOf>>

/**
 * One fault: start the run held at the gate, wait until it is held, inject the fault, release the
 * gate, and wait for the run to end (`finish` may re-attach, for a killed CLI). Checks everything.
 */
async function chaos(name: string, runId: string, opts: { workers?: number; fault: (cli: Cli) => Promise<number | void> | void; finish?: (cli: Cli) => Promise<{ code: number | null; stdout: string; stderr: string }> }): Promise<void> {
  writeFileSync(gate, '')
  const cli = startCli(runArgs(runId, opts.workers ?? 2))
  try {
    await untilHeldAtGate(runId)
    await untilWorkersReady(cli)
    const faultAt = Date.now()
    // a fault that waits for its moment says when it struck
    const killedAt = (await opts.fault(cli)) ?? faultAt
    rmSync(gate, { force: true })
    const end = await (opts.finish ?? ((c) => c.exited))(cli)
    const recovery = (Date.now() - killedAt) / 1000
    // with --json, progress lines go to stderr; an error would start with "Error"
    expect({ code: end.code, errors: end.stderr.split('\n').filter((line) => /^(Error|Warning)/.test(line)) }).toEqual({ code: 0, errors: [] })
    const report = JSON.parse(end.stdout) as { status: string; completeness: Record<string, unknown>; audit: { links: number } }
    // the seal that ends the report links every attempt's audit entry: none was still on its way
    expect({ status: report.status, missing: report.completeness['missing_count'], doubled: report.completeness['doubled'], links: report.audit.links }).toEqual({
      status: 'completed',
      missing: 0,
      doubled: 0,
      links: PLANNED,
    })
    const counts = await lostAndDoubled(runId)
    table.push({ fault: name, recovery_s: recovery.toFixed(1), lost: counts.lost, doubled: counts.doubled })
    expect(counts).toEqual({ lost: 0, doubled: 0, rows: PLANNED, uids: PLANNED })
    expect(await statsOf(runId)).toEqual(baseline)
  } finally {
    rmSync(gate, { force: true })
    if (cli.child.exitCode === null && cli.child.signalCode === null) cli.child.kill('SIGKILL')
  }
}

/** The slot of a worker process forge run started: its output goes to `logs/worker-<slot>.log`. */
function workerSlotOf(pid: number): number | undefined {
  try {
    const slot = /worker-(\d+)\.log$/.exec(readlinkSync(`/proc/${pid}/fd/1`))?.[1]
    return slot === undefined ? undefined : Number(slot)
  } catch {
    return undefined
  }
}

/**
 * Waits until RunWorkflow's completeness check has started on a worker (it then waits for the stopped
 * ingester); returns that worker's slot (its identity is `<run>-w<slot>`, app/worker-pool.ts).
 */
async function untilCheckStarted(run: ReturnType<Client['workflow']['getHandle']>, cli: Cli): Promise<{ slot: number }> {
  for (;;) {
    failIfEnded(cli, 'before its completeness check started')
    const { raw } = await run.describe()
    const check = (raw.pendingActivities ?? []).find((a) => a.activityType?.name === 'checkCompleteness' && a.state === PENDING_ACTIVITY_STARTED)
    const slot = /-w(\d+)$/.exec(check?.lastWorkerIdentity ?? '')?.[1]
    if (slot !== undefined) return { slot: Number(slot) }
    await sleep(100)
  }
}

const pidOf = (name: 'temporal' | 'nats' | 'ingester'): number => {
  const pid = readStackState(stack.home)[name]?.pid
  if (pid === undefined) throw new Error(`no ${name} in stack.json`)
  return pid
}

describe('chaos: SIGKILL one process during a 200-attempt run; the run finishes by itself, whole', () => {
  it('an undisturbed run (the reference: same seed, same config)', async () => {
    expect(existsSync(gate)).toBe(false)
    const end = await startCli(runArgs('chaos-baseline', 2)).exited
    expect(end.code).toBe(0)
    expect(await lostAndDoubled('chaos-baseline')).toEqual({ lost: 0, doubled: 0, rows: PLANNED, uids: PLANNED })
    baseline = await statsOf('chaos-baseline')
    expect(baseline.stats['notice']).toBeNull()
  })

  it('one of two workers', async () => {
    await chaos('SIGKILL one of 2 workers', 'chaos-one-worker', { fault: (cli) => void process.kill(workerPids(cli.child)[0]!, 'SIGKILL') })
  })

  it('the only worker', async () => {
    await chaos('SIGKILL the only worker', 'chaos-only-worker', { workers: 1, fault: (cli) => void process.kill(workerPids(cli.child)[0]!, 'SIGKILL') })
  })

  it('the ingester', async () => {
    await chaos('SIGKILL the ingester', 'chaos-ingester', { fault: () => void process.kill(pidOf('ingester'), 'SIGKILL') })
  })

  it('nats-server', async () => {
    await chaos('SIGKILL nats-server', 'chaos-nats', { fault: () => void process.kill(pidOf('nats'), 'SIGKILL') })
  })

  it('the Temporal dev server', async () => {
    await chaos('SIGKILL the Temporal dev server', 'chaos-temporal', { fault: () => void process.kill(pidOf('temporal'), 'SIGKILL') })
  })

  it('the forge run CLI (forge runs resume re-attaches)', async () => {
    await chaos('SIGKILL forge run (then forge runs resume)', 'chaos-cli', {
      fault: async (cli) => {
        const killed = cli.exited
        process.kill(cli.child.pid!, 'SIGKILL')
        await killed
      },
      finish: () => startCli(['runs', 'resume', 'chaos-cli', '--json']).exited,
    })
  })

  it('the worker running the completeness check that ends the run (before it publishes the final record)', async () => {
    const connection = await Connection.connect({ address: stack.endpoints.temporalAddress })
    const ingester = pidOf('ingester')
    try {
      await chaos('SIGKILL the worker running the completeness check', 'chaos-check', {
        fault: async (cli) => {
          // the ingester stopped: every attempt ends and is published, but the check that ends the run
          // waits for the store to hold them, in front of its final record; the gate is then where it waits
          process.kill(ingester, 'SIGSTOP')
          try {
            rmSync(gate, { force: true })
            const check = await untilCheckStarted(new Client({ connection }).workflow.getHandle('forge-run-chaos-check'), cli)
            const worker = workerPids(cli.child).find((pid) => workerSlotOf(pid) === check.slot)
            if (worker === undefined) throw new Error(`no worker of slot ${check.slot} among forge run's children`)
            process.kill(worker, 'SIGKILL')
            return Date.now()
          } finally {
            process.kill(ingester, 'SIGCONT')
          }
        },
      })
      // the check, tried again, published the run's final record with its counts
      const runs = await sql<{ status: string; final_stored: number | string; missing_count: number | string }>(
        "SELECT status, final_stored, missing_count FROM runs FINAL WHERE run_id = 'chaos-check'",
      )
      expect(runs.map((r) => ({ status: r.status, final_stored: Number(r.final_stored), missing: Number(r.missing_count) }))).toEqual([{ status: 'completed', final_stored: PLANNED, missing: 0 }])
      const history = await new Client({ connection }).workflow.getHandle('forge-run-chaos-check').fetchHistory()
      const events = history.events ?? []
      const checks = events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'checkCompleteness')
      // one check, tried again after the kill (not a new activity), and it recorded the status: no recordRunStatus after it
      expect(checks).toHaveLength(1)
      const activities = events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name !== undefined)
      expect(activities.at(-1)?.activityTaskScheduledEventAttributes?.activityType?.name).toBe('checkCompleteness')
      const start = events.find((e) => Number(e.activityTaskStartedEventAttributes?.scheduledEventId ?? -1) === Number(checks[0]!.eventId))
      expect(start?.activityTaskStartedEventAttributes?.attempt).toBeGreaterThanOrEqual(2)
    } finally {
      await connection.close()
    }
  })

  it('a rolling restart: one of three workers (30%) killed every 2 s, three times', async () => {
    await chaos('rolling restart: 1 of 3 workers every 2 s, 3 times', 'chaos-rolling', {
      workers: 3,
      fault: async (cli) => {
        for (let round = 0; round < 3; round++) {
          // the run is held at the gate: a CLI that ended meanwhile failed, and says why
          failIfEnded(cli, `before kill ${round + 1} of 3, its run held at the gate`)
          const pids = workerPids(cli.child)
          process.kill(pids[round % pids.length]!, 'SIGKILL')
          // every kill hits attempts in flight (held inside the agent); the gate opens the moment the third
          // lands, so the run goes on at full speed with its workers restarting (opened after the second,
          // a run could finish before the third kill: CI saw it end within those 2 s)
          if (round < 2) await sleep(2_000)
        }
        rmSync(gate, { force: true })
      },
    })
  })
})

describe('Ctrl-C in a terminal (SIGINT to the whole process group)', () => {
  it('while a run is active, stack down refuses; Ctrl-C cancels the run cleanly, its workers exit, and nothing of it runs later', async () => {
    writeFileSync(gate, '')
    const cli = startCli(runArgs('chaos-ctrl-c', 2).filter((arg) => arg !== '--json'))
    try {
      await untilHeldAtGate('chaos-ctrl-c')
      const workers = workerPids(cli.child)
      expect(workers).toHaveLength(2)
      // each worker leads its own process group: the terminal's SIGINT is not for them
      for (const pid of workers) expect(Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[2])).toBe(pid)

      const down = spawnSync(process.execPath, [join(packageRoot(), 'bin', 'run.js'), 'stack', 'down'], { env: stack.env, encoding: 'utf8' })
      expect({ status: down.status, stderr: down.stderr.trim() }).toEqual({
        status: 2,
        stderr: 'Error: run chaos-ctrl-c is still running: stopping the stack would stall it. Wait for it, cancel it (Ctrl-C in its forge run or forge runs resume), or pass --force',
      })

      process.kill(-cli.child.pid!, 'SIGINT')
      const end = await cli.exited
      expect({ code: end.code, stderr: end.stderr.trim() }).toEqual({
        code: 1,
        stderr: 'cancelling the run… (Ctrl-C again to quit at once)\nError: run chaos-ctrl-c was cancelled; what finished is stored (forge stats --run-id chaos-ctrl-c)',
      })
      expect(workers.filter((pid) => existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z '))).toEqual([])
      // the attempts held at the gate were cancelled, not finished: exactly those in front of it are stored
      const stored = async () => Number((await sql<{ n: string | number }>("SELECT count() AS n FROM attempts FINAL WHERE run_id = 'chaos-ctrl-c'"))[0]?.n)
      expect(await stored()).toBe(TASKS * HOLD_FROM)
      const [run] = await sql<{ status: string }>("SELECT status FROM runs FINAL WHERE run_id = 'chaos-ctrl-c'")
      expect(run?.status).toBe('cancelled')
    } finally {
      rmSync(gate, { force: true })
    }
    // nothing of it runs later: another run's workers find none of its attempts
    const next = await startCli(runArgs('chaos-after-ctrl-c', 1)).exited
    expect(next.code).toBe(0)
    expect(Number((await sql<{ n: string | number }>("SELECT count() AS n FROM attempts FINAL WHERE run_id = 'chaos-ctrl-c'"))[0]?.n)).toBe(TASKS * HOLD_FROM)
  })

  it('with subprocess agents running: Ctrl-C cancels the run, and no worker and no agent (nor what it started) is left', async () => {
    // each agent is a shell named by the marker ($0) that starts a sleep and waits: it never answers
    const marker = `forge-chaos-agent-${process.pid}`
    const agents = () => livePids().filter((pid) => procFile(pid, 'cmdline').split('\0').includes(marker))
    const cli = startCli(['run', '--suite', suite, '--attempts', '2', '--workers', '1', '--concurrency', '10', '--seed', 'chaos', '--run-id', 'chaos-ctrl-c-agents',
      '--adapter', 'subprocess', '--no-sandbox', '--adapter-config', JSON.stringify({ command: ['sh', '-c', 'sleep 600; exit 0', marker] })])
    // the process groups of the agents: each agent leads its own (spawned detached), its sleep is in it
    const groupsOfAgents = () => new Set(agents().map(processGroupOf))
    const inGroups = (groups: Set<number>) => livePids().filter((pid) => groups.has(processGroupOf(pid))).length
    // every attempt's agent is running and has started its sleep (a condition, not a sleep, decides
    // when the SIGINT comes: a shell seen before it forked its sleep failed this test under load)
    while (agents().length < TASKS * 2 || inGroups(groupsOfAgents()) < TASKS * 2 * 2) {
      if (cli.child.exitCode !== null) throw new Error(`forge run ended before its agents ran: ${(await cli.exited).stderr}`)
      await sleep(100)
    }
    const workers = workerPids(cli.child)
    const groups = groupsOfAgents()
    expect(groups.size).toBe(TASKS * 2)
    expect(inGroups(groups)).toBeGreaterThanOrEqual(TASKS * 2 * 2)

    process.kill(-cli.child.pid!, 'SIGINT')
    const end = await cli.exited
    // (after the --no-sandbox warning)
    expect({ code: end.code, stderr: end.stderr.trim().split('\n').slice(-2) }).toEqual({
      code: 1,
      stderr: ['cancelling the run… (Ctrl-C again to quit at once)', 'Error: run chaos-ctrl-c-agents was cancelled; what finished is stored (forge stats --run-id chaos-ctrl-c-agents)'],
    })
    expect(workers.filter((pid) => existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z '))).toEqual([])
    expect(livePids().filter((pid) => groups.has(processGroupOf(pid)))).toEqual([])
    const [run] = await sql<{ status: string }>("SELECT status FROM runs FINAL WHERE run_id = 'chaos-ctrl-c-agents'")
    expect(run?.status).toBe('cancelled')
    // no agent answered: nothing of the run is stored
    expect(Number((await sql<{ n: string | number }>("SELECT count() AS n FROM attempts FINAL WHERE run_id = 'chaos-ctrl-c-agents'"))[0]?.n)).toBe(0)
  })
})
