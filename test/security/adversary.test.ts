/**
 * Issue 10, attempt by attempt: the adversarial agent (agents/adversary.mjs) runs every attack of
 * the security suite through the subprocess adapter in the sandbox. Every attempt must find
 * nothing, change nothing, leave no process behind and pass exactly as an honest agent does; no
 * canary of the suite (expected answers, goldens, tool code) may appear in anything it produced.
 * A control runs the harmless attacks without the sandbox and shows they do find things there.
 */
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { getPriority, networkInterfaces, tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { AttemptResult } from '../../core/contracts/index.js'
import type { LoadedSuite } from '../../core/plugins.js'
import { subprocessAdapter } from '../../engine/adapters/subprocess.js'
import { runAttempt } from '../../engine/attempt-runner.js'
import { loadSuite, packageRoot } from '../../engine/suite-loader.js'
import { CANARY } from './canary.js'

const here = fileURLToPath(new URL('.', import.meta.url))
const adversary = join(here, 'agents', 'adversary.mjs')

interface Report {
  attack: string
  findings: string[]
  tried: number
}

let work: string
let suiteDir: string
let suite: LoadedSuite
let forgeHome: string
let listener: Server
let port: number
/** a stand-in for a warm worker's socket: a connection to it is an escape */
let warmStandIn: Server
let warmReached = 0
/** and for the warm CLI's (stack/warm-cli.ts): whoever reaches it could run a forge command of their choosing */
let warmCliStandIn: Server
let warmCliReached = 0
const marker = `forge-escapee-${process.pid}`

/** Every file of a directory with its sha-256, to prove nothing was written. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (at: string): void => {
    for (const name of readdirSync(at)) {
      const p = join(at, name)
      if (statSync(p).isDirectory()) walk(p)
      else out[relative(dir, p)] = createHash('sha256').update(readFileSync(p)).digest('hex')
    }
  }
  walk(dir)
  return out
}

/** Host processes whose command line carries `needle`. */
function processesWith(needle: string): number[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(needle)
      } catch {
        return false
      }
    })
    .map(Number)
}

function attackEnv(): Record<string, string> {
  const addresses = Object.values(networkInterfaces())
    .flat()
    .filter((a) => a !== undefined && a.family === 'IPv4' && !a.internal)
    .map((a) => a!.address)
  return {
    ATTACK_SUITE_DIR: suiteDir,
    ATTACK_FORGE_HOME: forgeHome,
    ATTACK_HOST_TMP: tmpdir(),
    ATTACK_PORTS: String(port),
    ATTACK_HOST_ADDRS: addresses.join(','),
    ATTACK_FORGE_BIN: join(packageRoot(), 'bin', 'run.js'),
    ATTACK_MARKER: marker,
    ATTACK_PIDS_LIMIT: '128',
    ATTACK_HOG_MB: '768',
    // the sandbox runs an agent 10 nicer than its worker (this process), at most 19
    ATTACK_MIN_NICENESS: String(Math.min(19, getPriority() + 10)),
  }
}

async function attackOnce(taskId: string, config: Record<string, unknown>): Promise<{ result: AttemptResult; report: Report }> {
  const task = suite.tasks.find((t) => t.id === taskId)!
  const { result } = await runAttempt({ suite, task, adapter: subprocessAdapter, runId: 'security', configId: 'c0', attempt: 0, runSeed: 's', adapterConfig: config, workerId: 'w-security' })
  return { result, report: JSON.parse(result.self_report || '{"findings":["no self report"]}') as Report }
}

beforeAll(async () => {
  // a copy, so that a sandbox that failed to hold could not damage the repository's suite
  work = mkdtempSync(join(tmpdir(), 'forge-security-'))
  suiteDir = join(work, 'suite')
  cpSync(join(here, 'suite'), suiteDir, { recursive: true })
  forgeHome = join(work, 'forge-home')
  cpSync(join(here, 'suite', 'goldens'), join(forgeHome, 'goldens'), { recursive: true })
  writeFileSync(join(forgeHome, 'stack.json'), JSON.stringify({ nats: 'nats://127.0.0.1:4222', note: 'CANARY-FORGEHOME-19ac' }))
  suite = await loadSuite(suiteDir)
  // a stand-in for NATS / Temporal on the worker's ports: anything that reaches it is an escape
  listener = createServer((socket) => socket.on('data', () => socket.end('+OK\r\n')))
  await new Promise<void>((resolve) => listener.listen(0, '0.0.0.0', () => resolve()))
  port = (listener.address() as { port: number }).port
  // and for a warm worker waiting on its socket in FORGE_HOME/warm (stack/warm-workers.ts)
  mkdirSync(join(forgeHome, 'warm'), { mode: 0o700 })
  warmStandIn = createServer((socket) => {
    warmReached++
    socket.on('error', () => undefined)
    socket.destroy()
  })
  await new Promise<void>((resolve) => warmStandIn.listen(join(forgeHome, 'warm', 'worker-1.sock'), () => resolve()))
  warmCliStandIn = createServer((socket) => {
    warmCliReached++
    socket.on('error', () => undefined)
    socket.destroy()
  })
  await new Promise<void>((resolve) => warmCliStandIn.listen(join(forgeHome, 'warm', 'cli.sock'), () => resolve()))
  process.env['FORGE_HOME'] = forgeHome
})

afterAll(async () => {
  for (const pid of processesWith(marker)) process.kill(pid, 'SIGKILL')
  await new Promise<void>((resolve) => listener.close(() => resolve()))
  await new Promise<void>((resolve) => warmStandIn.close(() => resolve()))
  await new Promise<void>((resolve) => warmCliStandIn.close(() => resolve()))
  rmSync(work, { recursive: true, force: true })
  delete process.env['FORGE_HOME']
})

const sandboxed = { sandbox: { memory_mb: 256, max_pids: 128 } }

describe('the adversarial agent in the sandbox', () => {
  it('finds nothing, changes nothing and passes every task as an honest agent does; no process outlives its attempt', async () => {
    const before = snapshot(suiteDir)
    const honest = await Promise.all(suite.tasks.map((t) => attackOnce(t.id, { command: ['node', adversary], env: { ...attackEnv(), ATTACK_OFF: '1' }, ...sandboxed })))
    const attacks: Array<{ result: AttemptResult; report: Report }> = []
    // one at a time: the fork bomb and the memory hog must not starve their neighbours' measurements
    for (const task of suite.tasks) attacks.push(await attackOnce(task.id, { command: ['node', adversary], env: attackEnv(), ...sandboxed }))

    const verdicts = (runs: typeof attacks) => Object.fromEntries(runs.map(({ result }) => [result.task_id, [result.outcome, result.validity, result.output]]))
    expect(verdicts(attacks)).toEqual(verdicts(honest))
    expect(Object.values(verdicts(attacks)).every(([outcome, validity]) => outcome === 'pass' && validity === 'valid')).toBe(true)
    expect(Object.fromEntries(attacks.map(({ report }) => [report.attack, report.findings]))).toEqual(Object.fromEntries(suite.tasks.map((t) => [t.id, []])))
    // every attack really ran (it tried things), and nothing it produced or received holds a canary
    expect(attacks.filter(({ report }) => report.tried === 0).map(({ report }) => report.attack)).toEqual([])
    const produced = JSON.stringify(attacks.map(({ result }) => [result.output, result.self_report, result.error, result.tool_calls, result.instruction]))
    expect(produced.match(CANARY)).toBeNull()
    expect(snapshot(suiteDir)).toEqual(before)
    expect(readdirSync(forgeHome).sort()).toEqual(['goldens', 'stack.json', 'warm'])
    expect(warmReached).toBe(0)
    expect(warmCliReached).toBe(0)
    // setsid and double-fork escapees died with their attempt's namespace
    expect(processesWith(marker)).toEqual([])
    console.info(`security: ${attacks.length}/${attacks.length} attacks found nothing (${attacks.map(({ report }) => `${report.attack}: ${report.tried} tries`).join(', ')})`)
  }, 240_000)
})

// The sandbox of a worker without root (a laptop, the chart's non-root pods) is another one: a user
// namespace, no cgroups — memory bounded by RLIMIT_DATA per process and the worker's watch of the
// sandbox's processes together (engine/sandbox/memory.ts). Every attack runs against it too, from a
// worker (test/security/worker-as-user.mjs, on dist/) started as uid 65534.
const nobody = 65534
const asUser = process.getuid?.() === 0 && spawnSync('setpriv', [`--reuid=${nobody}`, `--regid=${nobody}`, '--clear-groups', 'unshare', '--user', '--map-root-user', 'true']).status === 0

describe('the adversarial agent in the sandbox of a worker without root', () => {
  it.skipIf(!asUser)('finds nothing and passes every task there too; the memory hogs are killed by the watch', () => {
    const before = snapshot(suiteDir)
    chmodSync(work, 0o755)
    const worker = spawnSync(
      'setpriv',
      [`--reuid=${nobody}`, `--regid=${nobody}`, '--clear-groups', process.execPath, join(here, 'worker-as-user.mjs'), suiteDir, JSON.stringify({ command: ['node', adversary], env: attackEnv(), ...sandboxed }), ...suite.tasks.map((t) => t.id)],
      { cwd: tmpdir(), env: { PATH: process.env['PATH'], FORGE_HOME: forgeHome }, encoding: 'utf8', timeout: 200_000 },
    )
    expect(worker.stderr).toBe('')
    expect(worker.status).toBe(0)
    const runs = worker.stdout.trim().split('\n').map((line) => JSON.parse(line) as { result: AttemptResult; sandbox: Record<string, unknown> })
    expect(Object.fromEntries(runs.map(({ result }) => [result.task_id, [result.outcome, result.validity, (JSON.parse(result.self_report) as Report).findings]]))).toEqual(
      Object.fromEntries(suite.tasks.map((t) => [t.id, ['pass', 'valid', []]])),
    )
    expect(new Set(runs.map(({ sandbox }) => JSON.stringify([sandbox['user_namespace'], sandbox['uid'], sandbox['memory_enforcement'], sandbox['memory_cgroup']])))).toEqual(new Set([JSON.stringify([true, null, 'watch', false])]))
    // the hog past the limit on its own stopped by RLIMIT_DATA; of the four within it, past it together, the largest killed
    const hog = runs.find(({ result }) => result.task_id === 'memory_hog')!
    expect(hog.sandbox['memory_kills']).toBeGreaterThan(0)
    expect(hog.result.error).toMatch(/^memory_limit: the sandbox's processes held more than 256 MiB \(sandbox\.memory_mb\) together: killed \d, largest first: node \(pid \d+ in the sandbox, \d+ MiB\)/)
    expect(runs.filter(({ result }) => result.task_id !== 'memory_hog' && result.error !== '').map(({ result }) => [result.task_id, result.error])).toEqual([])
    expect(snapshot(suiteDir)).toEqual(before)
    expect(processesWith(marker)).toEqual([])
  }, 240_000)
})

describe('the same attacks without the sandbox (control)', () => {
  // only attacks that read, connect or renice themselves: writes, fork bombs, memory hogs and escapees are never let loose unsandboxed
  it.each(['proc_parent', 'suite_by_path', 'forge_home', 'other_scratch', 'network', 'forged_result', 'warm_worker', 'cpu_priority'])('%s finds something: the attack is real', async (taskId) => {
    const { result, report } = await attackOnce(taskId, { command: ['node', adversary], env: attackEnv(), sandbox: false })
    expect([result.outcome, result.validity]).toEqual(['pass', 'degraded'])
    expect(report.findings.length).toBeGreaterThan(0)
    // unsandboxed, the warm sockets' attack reaches the warm CLI's too
    if (taskId === 'warm_worker') expect(report.findings).toContain(`reached the warm worker socket ${join(forgeHome, 'warm', 'cli.sock')} (and told it to stop)`)
  }, 60_000)
})
