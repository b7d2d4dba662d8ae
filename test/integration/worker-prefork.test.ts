/**
 * Workers forked before their run is planned (app/worker-prefork.ts) on a real stack: the run's
 * pool takes them, a run that fails first leaves none behind, and neither does a forge run that dies.
 */
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runSuite } from '../../app/run.js'
import { discardPreforked, preforkWorkers } from '../../app/worker-prefork.js'
import { readStackState } from '../../stack/local-stack.js'
import { NODE_FLAGS } from '../../stack/node-flags.js'
import { packageRoot } from '../../stack/paths.js'
import { forge, startTestStack, type TestStack } from '../helpers/stack.js'
import { alive, gone } from '../helpers/processes.js'

let stack: TestStack

beforeAll(async () => {
  stack = await startTestStack('prefork')
  // as after an earlier one-worker run of this home: slot 0 has its log
  mkdirSync(join(stack.home, 'logs'), { recursive: true })
  writeFileSync(join(stack.home, 'logs', 'worker-0.log'), '', { flag: 'a' })
})
afterAll(async () => {
  await stack?.down()
})

const argvOf = (pid: number): string[] => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')

/** worker processes waiting for their settings whose environment names this FORGE_HOME */
function waitingWorkersOf(home: string): number[] {
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8')
      if (!cmdline.includes('worker-process.js') || !cmdline.includes('--await-settings')) continue
      if (readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0').includes(`FORGE_HOME=${home}`)) pids.push(Number(entry))
    } catch {
      // gone meanwhile
    }
  }
  return pids
}

describe('workers forked before the run is planned', () => {
  it("are the run's workers: the pool hands them their settings and the run completes on them", async () => {
    const [early] = preforkWorkers(1, join(stack.home, 'logs'))
    expect(early?.pid).toBeGreaterThan(0)
    // started with the worker's V8 flags (stack/node-flags.ts), as the stack's ingester with its own
    expect(argvOf(early!.pid!)).toEqual(expect.arrayContaining([...NODE_FLAGS.worker]))
    expect(argvOf(readStackState(stack.home).ingester!.pid)).toEqual(expect.arrayContaining([...NODE_FLAGS.ingester]))
    let pids: number[] = []
    const report = await runSuite(stack.config, { suite: 'smoke', adapter: 'mock', attempts: 2, workers: 1, concurrency: 5, seed: 'prefork' }, (event) => {
      if (event.kind === 'workers') pids = event.pids
    })
    expect(pids).toEqual([early!.pid])
    expect(report.attempts).toBe(10)
    expect(report.status).toBe('completed')
    // stopped with the run, as a worker forked by the pool is
    expect(await gone(early!.pid!)).toBe(true)
  })

  it('go only into slots earlier runs of the home used (a new home stays empty when a run is refused)', () => {
    expect(preforkWorkers(1, join(stack.home, 'no-logs-here'))).toEqual([])
  })

  it('are stopped when the run fails before its workers start (an unknown suite)', async () => {
    const [early] = preforkWorkers(1, join(stack.home, 'logs'))
    expect(early?.pid).toBeGreaterThan(0)
    await expect(runSuite(stack.config, { suite: 'no-such-suite', adapter: 'mock', attempts: 1, workers: 1, concurrency: 1 })).rejects.toThrow(/no-such-suite/)
    expect(await gone(early!.pid!)).toBe(true)
  })

  it('exit when the process that forked them dies before it needs them, even while they still load', async () => {
    // a parent that forks a worker and exits at once: the worker is still importing its code
    const script = `import { preforkWorkers } from ${JSON.stringify(join(packageRoot(), 'dist', 'app', 'worker-prefork.js'))}; const [c] = preforkWorkers(1, ${JSON.stringify(join(stack.home, 'logs'))}); console.log(c.pid); process.exit(0)`
    const parent = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    parent.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
    await new Promise((resolve) => parent.once('exit', resolve))
    const pid = Number(out.trim())
    expect(pid).toBeGreaterThan(0)
    expect(await gone(pid)).toBe(true)
  })

  it("are forked by forge run's init hook, before the command loads: as many as --workers asks (capped), none for other commands or a dry run", async () => {
    const home = mkdtempSync(join(tmpdir(), 'forge-prefork-hook-'))
    const before = process.env['FORGE_HOME']
    try {
      mkdirSync(join(home, 'logs'))
      for (const slot of [0, 1, 2]) writeFileSync(join(home, 'logs', `worker-${slot}.log`), '')
      process.env['FORGE_HOME'] = home
      const hook = (await import('../../cli/hooks/init.js')).default
      const call = (id: string, argv: string[]) => hook.call({} as never, { id, argv, config: {} as never, context: {} as never })
      await call('stats', ['--run-id', 'x'])
      await call('run', ['--suite', 'smoke', '--dry-run'])
      expect(waitingWorkersOf(home)).toEqual([])
      await call('run', ['--suite', 'smoke', '--workers', '2'])
      expect(waitingWorkersOf(home)).toHaveLength(2)
    } finally {
      if (before === undefined) delete process.env['FORGE_HOME']
      else process.env['FORGE_HOME'] = before
      discardPreforked()
      const deadline = Date.now() + 20_000
      while (waitingWorkersOf(home).length > 0 && Date.now() < deadline) await sleep(50)
      expect(waitingWorkersOf(home)).toEqual([])
      rmSync(home, { recursive: true, force: true })
    }
  })

  it('leave nothing behind when forge run refuses its input', async () => {
    const home = mkdtempSync(join(tmpdir(), 'forge-prefork-cli-'))
    try {
      // a home whose runs used two worker slots before (a new one gets no early workers: it stays empty)
      mkdirSync(join(home, 'logs'))
      for (const slot of [0, 1]) writeFileSync(join(home, 'logs', `worker-${slot}.log`), '')
      const r = forge(['run', '--suite', 'no-such-suite', '--attempts', '1', '--workers', '2'], { ...stack.env, FORGE_HOME: home })
      expect(r.status).not.toBe(0)
      expect(r.stderr).toMatch(/no-such-suite/)
      const deadline = Date.now() + 20_000
      while (waitingWorkersOf(home).length > 0 && Date.now() < deadline) await sleep(50)
      expect(waitingWorkersOf(home)).toEqual([])
    } finally {
      rmSync(home, { recursive: true, force: true })
    }
  })
})

describe('a worker process given attempt lanes', () => {
  it('refuses more lanes than attempt slots, and lanes that are no whole number, naming the settings (exit 2)', () => {
    const env = { ...process.env, FORGE_TEMPORAL_ADDRESS: '127.0.0.1:1', FORGE_NATS_URL: 'nats://127.0.0.1:1', FORGE_WORKER_CONCURRENCY: '2' }
    const entry = join(packageRoot(), 'dist', 'workers', 'worker-process.js')
    const tooMany = spawnSync(process.execPath, [entry], { env: { ...env, FORGE_WORKER_ATTEMPT_LANES: '4' }, encoding: 'utf8', timeout: 30_000 })
    expect({ status: tooMany.status, stderr: tooMany.stderr.trim() }).toEqual({
      status: 2,
      stderr: 'FORGE_WORKER_ATTEMPT_LANES (4) must not exceed FORGE_WORKER_CONCURRENCY (2): a worker reserves its attempt slots a batch\'s lanes at a time',
    })
    const none = spawnSync(process.execPath, [entry], { env: { ...env, FORGE_WORKER_ATTEMPT_LANES: '0' }, encoding: 'utf8', timeout: 30_000 })
    expect(none.status).toBe(2)
    expect(none.stderr).toContain('FORGE_WORKER_ATTEMPT_LANES must be a whole number from 1 to 100, got "0"')
  })
})
