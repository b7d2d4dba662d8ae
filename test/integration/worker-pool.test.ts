/**
 * A worker that dies during start-up (app/worker-pool.ts): its slot starts another; one that keeps
 * dying before it is ready is given up after MAX_START_TRIES starts, and the run goes on with the
 * others — or, when none is left, fails fast naming the worker and its log. First on the pool with a
 * small stand-in worker program (real processes; each start's outcome scripted per slot, no timing),
 * then with `forge run` on a real stack whose real workers are made to exit as they load.
 */
import { fork } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAX_START_TRIES, startWorkerPool, WorkerStartError, type WorkerPool } from '../../app/worker-pool.js'
import { forge, startTestStack, type TestStack } from '../helpers/stack.js'

const dir = mkdtempSync(join(tmpdir(), 'forge-pool-'))

/**
 * Stands in for workers/worker-process.js: its slot (from FORGE_WORKER_ID, `…-w<slot>`) and how many
 * times that slot started before pick this start's outcome from FAKE_PLAN: `exit` (exit 3 before
 * saying it is ready) or `ready` (say so and stay until stopped); past the plan's end, `ready`.
 */
const program = join(dir, 'fake-worker.mjs')
writeFileSync(
  program,
  `import { appendFileSync, readFileSync } from 'node:fs'
const slot = process.env.FORGE_WORKER_ID.replace(/^.*-w/, '')
const counter = process.env.FAKE_DIR + '/starts-' + slot
appendFileSync(counter, 'x')
const start = readFileSync(counter, 'utf8').length - 1
const outcome = (JSON.parse(process.env.FAKE_PLAN)[slot] ?? [])[start] ?? 'ready'
if (outcome === 'exit') process.exit(3)
process.send({ ready: true, workerId: process.env.FORGE_WORKER_ID })
process.on('SIGTERM', () => process.exit(0))
setInterval(() => undefined, 1 << 30)
`,
)

let case_ = 0
function fakePool(plan: Record<number, Array<'exit' | 'ready'>>, count = 3): { pool: WorkerPool; notices: string[]; logDir: string } {
  const fakeDir = mkdtempSync(join(dir, `case-${++case_}-`))
  const notices: string[] = []
  const logDir = join(fakeDir, 'logs')
  const pool = startWorkerPool({
    count,
    maxProcesses: count,
    temporalAddress: '127.0.0.1:1',
    natsUrl: 'nats://127.0.0.1:1',
    namespace: 'default',
    taskQueue: 'pool-test',
    concurrency: 1,
    logDir,
    runId: 'pool-test',
    env: { FAKE_DIR: fakeDir, FAKE_PLAN: JSON.stringify(plan) },
    fork: (_logFile, env) => fork(program, [], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'], env }),
    onNotice: (message) => notices.push(message),
  })
  return { pool, notices, logDir }
}

describe('the worker pool, with a stand-in worker program', () => {
  it('starts again a worker that exited during start-up, in its slot, saying so; ready once every slot is', async () => {
    const { pool, notices, logDir } = fakePool({ 1: ['exit'] })
    try {
      await pool.ready
      expect(pool.pids()).toHaveLength(3)
      expect(notices).toHaveLength(1)
      expect(notices[0]).toMatch(new RegExp(`^worker 1 exited during start-up \\(code 3\\); started again as pid \\d+ \\(try 2 of ${MAX_START_TRIES}\\); see ${logDir}/worker-1\\.log$`))
    } finally {
      await pool.stop()
    }
  })

  it(`gives a slot up after ${MAX_START_TRIES} starts in a row that exit before ready: ready with the others`, async () => {
    const { pool, notices, logDir } = fakePool({ 2: ['exit', 'exit', 'exit'] })
    try {
      await pool.ready
      expect(pool.pids()).toHaveLength(2)
      expect(notices).toHaveLength(MAX_START_TRIES)
      expect(notices.at(-1)).toBe(`worker 2 exited during start-up ${MAX_START_TRIES} times in a row (last: code 3); see ${logDir}/worker-2.log; not started again: the run goes on with 2 of 3 worker processes`)
    } finally {
      await pool.stop()
    }
  })

  it('counts only starts in a row: a slot whose worker came up between failures is not given up', async () => {
    // the third start is ready: the first two failures are forgotten, so the two after it are tries 1 and 2 again
    const { pool, notices } = fakePool({ 0: ['exit', 'exit', 'ready'] }, 1)
    try {
      await pool.ready
      const [pid] = pool.pids()
      process.kill(pid!, 'SIGKILL')
      await until(() => notices.length === 3)
      expect(notices[2]).toMatch(/^worker 0 died \(SIGKILL\); started again as pid \d+$/)
      await until(() => pool.pids().length === 1 && pool.pids()[0] !== pid)
    } finally {
      await pool.stop()
    }
  })

  it('rejects ready when every slot was given up, naming a worker and its log; lost rejects too', async () => {
    const { pool, notices, logDir } = fakePool({ 0: ['exit', 'exit', 'exit'], 1: ['exit', 'exit', 'exit'] }, 2)
    try {
      const error = await pool.ready.then(() => undefined, (e: unknown) => e)
      expect(error).toBeInstanceOf(WorkerStartError)
      expect((error as WorkerStartError).exitCode).toBe(4)
      expect((error as Error).message).toMatch(new RegExp(`^worker [01] exited during start-up ${MAX_START_TRIES} times in a row \\(last: code 3\\); see ${logDir}/worker-[01]\\.log$`))
      await expect(pool.lost).rejects.toThrow(/^no worker process is left: worker [01] exited during start-up/)
      expect(notices.filter((n) => n.includes('not started again'))).toHaveLength(2)
      expect(pool.pids()).toEqual([])
    } finally {
      await pool.stop()
    }
  })

  it('rejects lost when the last worker dies after it was ready and its replacements keep exiting', async () => {
    const { pool, notices } = fakePool({ 0: ['ready', 'exit', 'exit', 'exit'] }, 1)
    try {
      await pool.ready
      process.kill(pool.pids()[0]!, 'SIGKILL')
      await expect(pool.lost).rejects.toThrow(`no worker process is left: worker 0 exited during start-up ${MAX_START_TRIES} times in a row (last: code 3)`)
      expect(notices[0]).toMatch(/^worker 0 died \(SIGKILL\)/)
      expect(notices).toHaveLength(1 + MAX_START_TRIES)
    } finally {
      await pool.stop()
    }
  })
})

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 10))
}

describe('forge run whose real workers exit as they load', () => {
  let stack: TestStack
  /**
   * Loaded into every node process of the run (NODE_OPTIONS): in a worker process of a slot named by
   * FAIL_SLOTS, exits 3 before the worker loads — each time, or (FAIL_ONCE) on that slot's first start.
   */
  const hook = join(dir, 'fail-workers.mjs')
  writeFileSync(
    hook,
    `import { appendFileSync, existsSync } from 'node:fs'
if (process.argv[1]?.endsWith('worker-process.js')) {
  const slot = (process.env.FORGE_WORKER_ID ?? '').replace(/^.*-w/, '')
  if (process.env.FAIL_SLOTS.split(',').includes(slot)) {
    const marker = process.env.FAIL_DIR + '/failed-' + slot
    if (process.env.FAIL_ONCE !== '1' || !existsSync(marker)) {
      appendFileSync(marker, 'x')
      process.exit(3)
    }
  }
}
`,
  )

  beforeAll(async () => {
    stack = await startTestStack('pool')
  })
  afterAll(async () => {
    await stack?.down()
    rmSync(dir, { recursive: true, force: true })
  })

  /** forge run on two fresh worker processes (no warm or preforked one: they would load before the hook knows their slot) */
  function run(failSlots: string, once: boolean): { status: number; output: string; failDir: string } {
    const logs = join(stack.home, 'logs')
    if (existsSync(logs)) for (const f of readdirSync(logs)) if (/^worker-\d+\.log$/.test(f)) rmSync(join(logs, f))
    const failDir = mkdtempSync(join(dir, 'fail-'))
    const env = { ...stack.env, NODE_OPTIONS: `--import ${hook}`, FAIL_SLOTS: failSlots, FAIL_ONCE: once ? '1' : '0', FAIL_DIR: failDir, FORGE_WARM_WORKERS: '0', FORGE_LOCAL_WORKER_PROCESSES: '2' }
    const r = forge(['run', '--suite', 'smoke', '--adapter', 'mock', '--attempts', '2', '--workers', '2'], env)
    return { status: r.status, output: r.stdout + r.stderr, failDir }
  }

  it('a worker that exits as it loads is started again, and the run completes with every attempt', () => {
    const r = run('1', true)
    expect(r.status, r.output).toBe(0)
    expect(r.output).toMatch(/worker 1 exited during start-up \(code 3\); started again as pid \d+ \(try 2 of 3\); see .*worker-1\.log/)
    expect(r.output).toMatch(/2 worker process\(es\) ready/)
    expect(r.output).toMatch(/10 attempts in /)
    expect(readFileSync(join(r.failDir, 'failed-1'), 'utf8')).toBe('x')
  })

  it('a worker that keeps exiting is given up and the run completes on the other, saying so', () => {
    const r = run('1', false)
    expect(r.status, r.output).toBe(0)
    expect(r.output).toMatch(/worker 1 exited during start-up 3 times in a row \(last: code 3\); see .*worker-1\.log; not started again: the run goes on with 1 of 2 worker processes/)
    expect(r.output).toMatch(/1 worker process\(es\) ready/)
    expect(r.output).toMatch(/10 attempts in /)
  })

  it('when no worker can start, the run is terminated fast with exit code 4, naming a worker and its log', async () => {
    const r = run('0,1', false)
    expect(r.status, r.output).toBe(4)
    expect(r.output).toMatch(/worker [01] exited during start-up 3 times in a row \(last: code 3\); see .*worker-[01]\.log/)
    expect(readFileSync(join(r.failDir, 'failed-0'), 'utf8')).toBe('xxx')
    expect(readFileSync(join(r.failDir, 'failed-1'), 'utf8')).toBe('xxx')
    // the terminated run left no workflow open: the dev server counts none running (its visibility catches up)
    const url = `${stack.endpoints.temporalHttpUrl!}/api/v1/namespaces/${stack.config.temporal.namespace}/workflow-count?query=${encodeURIComponent('ExecutionStatus="Running"')}`
    const running = async (): Promise<number> => Number(((await (await fetch(url)).json()) as { count?: string }).count ?? 0)
    const terminated = `${stack.endpoints.temporalHttpUrl!}/api/v1/namespaces/${stack.config.temporal.namespace}/workflow-count?query=${encodeURIComponent('ExecutionStatus="Terminated"')}`
    while ((await running()) !== 0) await new Promise((resolve) => setTimeout(resolve, 100))
    expect(Number(((await (await fetch(terminated)).json()) as { count?: string }).count)).toBe(1)
  })
})
