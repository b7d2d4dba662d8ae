/**
 * Issue 10 through `forge run` on the real embedded stack (Temporal dev server, nats-server,
 * ingester + chDB): an adversarial run of the security suite gets exactly the numbers of an honest
 * run, finds nothing (not even a warm worker waiting on its socket), plants nothing, leaves no
 * process behind and no canary in the store; run ids
 * are unique; `--no-sandbox` is stamped on the run and on every attempt; a machine that cannot make
 * a sandbox refuses the run; `forge sql` through the running ingester is read-only.
 */
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { getPriority, networkInterfaces, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RunStats } from '../../app/stats.js'
import { packageRoot } from '../../stack/paths.js'
import { leaveWarmWorkers, stopWarmWorkers, waitForWarmWorkers, warmSocketPath } from '../../stack/warm-workers.js'
import { leaveWarmCli, stopWarmCli, warmCliSocketPath } from '../../stack/warm-cli.js'
import { alive, until } from '../helpers/processes.js'
import { forge, startTestStack, type TestStack } from '../helpers/stack.js'
import { CANARY } from './canary.js'

const here = fileURLToPath(new URL('.', import.meta.url))
const adversary = join(here, 'agents', 'adversary.mjs')
const marker = `forge-escapee-run-${process.pid}`

let stack: TestStack
let work: string
let suiteDir: string

beforeAll(async () => {
  stack = await startTestStack('security')
  work = mkdtempSync(join(tmpdir(), 'forge-security-run-'))
  suiteDir = join(work, 'suite')
  cpSync(join(here, 'suite'), suiteDir, { recursive: true })
}, 120_000)

afterAll(async () => {
  await stack?.down()
  rmSync(work, { recursive: true, force: true })
})

function agentConfig(attack: boolean): string {
  const ports = [stack.endpoints.natsUrl.split(':').pop(), stack.endpoints.temporalAddress.split(':').pop()]
  const addresses = Object.values(networkInterfaces()).flat().filter((a) => a !== undefined && a.family === 'IPv4' && !a.internal).map((a) => a!.address)
  return JSON.stringify({
    command: ['node', adversary],
    env: {
      ATTACK_SUITE_DIR: suiteDir,
      ATTACK_FORGE_HOME: stack.home,
      ATTACK_HOST_TMP: tmpdir(),
      ATTACK_PORTS: ports.join(','),
      ATTACK_HOST_ADDRS: addresses.join(','),
      ATTACK_FORGE_BIN: join(packageRoot(), 'bin', 'run.js'),
      ATTACK_MARKER: marker,
      ATTACK_PIDS_LIMIT: '128',
      ATTACK_HOG_MB: '768',
      // the worker runs at this process's niceness: the sandbox adds 10 (at most 19)
      ATTACK_MIN_NICENESS: String(Math.min(19, getPriority() + 10)),
      ...(attack ? {} : { ATTACK_OFF: '1' }),
    },
    sandbox: { memory_mb: 256, max_pids: 128 },
  })
}

function run(runId: string, attack: boolean, extra: string[] = []): ReturnType<typeof forge> {
  return forge(['run', '--suite', suiteDir, '--adapter', 'subprocess', '--adapter-config', agentConfig(attack), '--attempts', '2', '--concurrency', '4', '--seed', '1', '--run-id', runId, '--json', ...extra], { ...stack.env, FORGE_WARM_CLI: '0' }, 300_000)
}

function sql<T>(query: string): T[] {
  const r = forge(['sql', query, '--json'], stack.env)
  expect(r.stderr).toBe('')
  return JSON.parse(r.stdout) as T[]
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

const perTask = (stats: RunStats) => Object.fromEntries(stats.tasks.map((t) => [t.task_id, `${t.k}/${t.n}`]))

describe('an adversarial run', () => {
  let honest: RunStats
  let hostile: RunStats

  it('gets exactly the numbers of an honest run: every attack finds nothing', async () => {
    const h = run('sec-honest', false)
    expect(h.status, h.stderr).toBe(0)
    honest = JSON.parse(h.stdout) as RunStats
    // a real warm worker waits in slot 1 all through the attack (the run's one worker takes slot 0)
    const [, waiting] = leaveWarmWorkers(stack.home, 2)
    expect(await waitForWarmWorkers(stack.home, 2, 60_000)).toBe(true)
    // and a warm CLI (the runs here run in their own process: FORGE_WARM_CLI=0)
    const warmCli = leaveWarmCli(stack.home)
    expect(warmCli).toBeDefined()
    expect(await until(() => existsSync(warmCliSocketPath(stack.home)), 30_000)).toBe(true)
    const a = run('sec-attack', true)
    expect(a.status, a.stderr).toBe(0)
    hostile = JSON.parse(a.stdout) as RunStats
    // no agent reached it: it still waits, never claimed nor told to stop
    expect(alive(waiting!)).toBe(true)
    expect(existsSync(warmSocketPath(stack.home, 1))).toBe(true)
    expect(readFileSync(join(stack.home, 'logs', 'worker-1.log'), 'utf8')).not.toMatch(/claimed by a run|exiting/)
    expect(await stopWarmWorkers(stack.home)).toBeGreaterThanOrEqual(1)
    expect(alive(warmCli!)).toBe(true)
    expect(existsSync(warmCliSocketPath(stack.home))).toBe(true)
    expect(readFileSync(join(stack.home, 'logs', 'cli-warm.log'), 'utf8')).not.toContain('running forge')
    expect(await stopWarmCli(stack.home)).toBe(true)
    expect(perTask(hostile)).toEqual(perTask(honest))
    expect(Object.values(perTask(hostile)).every((kn) => kn === '2/2')).toBe(true)
    expect([hostile.attempts, hostile.suite_rate, hostile.validity]).toEqual([honest.attempts, honest.suite_rate, honest.validity])
    const reports = sql<{ self_report: string }>("SELECT self_report FROM attempts FINAL WHERE run_id = 'sec-attack' ORDER BY attempt_uid")
    expect(reports).toHaveLength(30)
    const findings = reports.map((r) => JSON.parse(r.self_report) as { attack: string; findings: string[] })
    expect(findings.filter((f) => f.findings.length > 0)).toEqual([])
    expect(new Set(findings.map((f) => f.attack)).size).toBe(15)
  }, 600_000)

  it('leaves no canary in anything stored of it, nothing planted, no process behind', () => {
    const stored = JSON.stringify([
      sql("SELECT output, self_report, error, instruction FROM attempts FINAL WHERE run_id = 'sec-attack'"),
      sql("SELECT args, result, error FROM tool_calls FINAL WHERE run_id = 'sec-attack'"),
    ])
    expect(stored.match(CANARY)).toBeNull()
    expect(readdirSync(stack.home)).not.toContain('planted')
    expect(readdirSync(join(suiteDir, 'tasks'))).not.toContain('zz_planted.yaml')
    expect(processesWith(marker)).toEqual([])
  })

  it("verifies the hostile run's audit trail: what is stored is what its workers digested, half UTF-16 pairs included", () => {
    const verified = forge(['audit', 'verify', '--run-id', 'sec-attack', '--json'], stack.env)
    expect(verified.status, verified.stdout + verified.stderr).toBe(0)
    expect(JSON.parse(verified.stdout)).toMatchObject({ run_id: 'sec-attack', intact: true, problems: [] })
    // the poison_store attack's half pair was stored as U+FFFD
    const [poisoned] = sql<{ args: string; error: string }>("SELECT args, error FROM tool_calls FINAL WHERE run_id = 'sec-attack' AND task_id = 'poison_store' AND args LIKE '%half%' LIMIT 1")
    expect(poisoned).toEqual({ args: JSON.stringify({ key: 'half \ufffd pair' }), error: expect.stringContaining('half \ufffd pair') })
  })

  it("shows the agent's terminal control sequences as escapes in what a person reads, never as controls", () => {
    // what a terminal would obey: C0 controls but newline and tab, DEL, C1, bidi overrides
    const controls = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/
    const trace = forge(['trace', '--run-id', 'sec-attack', '--task', 'terminal_escape', '--attempt', '0', '--full'], stack.env)
    expect(trace.status, trace.stderr).toBe(0)
    expect(trace.stdout).not.toMatch(controls)
    // the lookup's refusal quotes the key: stored as the agent sent it, printed escaped
    expect(trace.stdout).toContain('no value under terminal \\u001b]52;c;Zm9yZ2UgcHduZWQ=\\u0007\\u001b]0;PWNED\\u0007\\u001b[2J\\u001b[8mhidden\\u001b[0m\\rverdict: pass\\u202egnp.\\u009b31m')
    const table = forge(['sql', "SELECT error FROM tool_calls FINAL WHERE run_id = 'sec-attack' AND task_id = 'terminal_escape' AND error != ''"], stack.env)
    expect(table.status, table.stderr).toBe(0)
    expect(table.stdout).not.toMatch(controls)
    expect(table.stdout).toContain('\\u001b]52;c;')
    // stored as sent: the escapes are only in what is printed
    const [stored] = sql<{ error: string }>("SELECT error FROM tool_calls FINAL WHERE run_id = 'sec-attack' AND task_id = 'terminal_escape' AND error != '' LIMIT 1")
    expect(stored?.error).toContain('\x1b]52;c;Zm9yZ2UgcHduZWQ=\x07')
  })

  it('records both runs as sandboxed', () => {
    expect(sql("SELECT run_id, isolation FROM runs FINAL WHERE run_id IN ('sec-honest', 'sec-attack') ORDER BY run_id")).toEqual([
      { run_id: 'sec-attack', isolation: 'sandbox' },
      { run_id: 'sec-honest', isolation: 'sandbox' },
    ])
  })
})

describe('run ids', () => {
  it('refuses a run id that is already used (exit 2), leaving the first run as it was', () => {
    const before = forge(['stats', '--run-id', 'sec-honest', '--json'], stack.env)
    const again = run('sec-honest', false)
    expect(again.status).toBe(2)
    expect((JSON.parse(again.stdout) as { error: { message: string } }).error.message).toMatch(
      /^--run-id sec-honest is already used by a completed run of suite security \(adapter subprocess, started .*, 30 attempts stored\); run ids are unique/,
    )
    expect(forge(['stats', '--run-id', 'sec-honest', '--json'], stack.env).stdout).toBe(before.stdout)
  }, 120_000)
})

describe('--no-sandbox', () => {
  it('is printed, stamped on the run, and marks every attempt degraded', () => {
    const r = forge(
      ['run', '--suite', suiteDir, '--task', 'network', '--adapter', 'subprocess', '--adapter-config', agentConfig(false), '--attempts', '2', '--run-id', 'sec-unsandboxed', '--no-sandbox'],
      stack.env,
      300_000,
    )
    expect(r.status, r.stderr).toBe(0)
    // oclif wraps warnings: compare the words
    expect(r.stderr.replace(/\s*›\s*/g, ' ').replace(/\s+/g, ' ')).toContain(
      "Warning: --no-sandbox: sandbox off (--no-sandbox): the subprocess agent ran without namespaces, able to read the worker's /proc, files and network; every attempt of this run is marked degraded",
    )
    expect(sql("SELECT isolation FROM runs FINAL WHERE run_id = 'sec-unsandboxed'")).toEqual([{ isolation: 'unsandboxed' }])
    expect(sql("SELECT outcome, validity, count() AS n FROM attempts FINAL WHERE run_id = 'sec-unsandboxed' GROUP BY outcome, validity")).toEqual([{ outcome: 'pass', validity: 'degraded', n: 2 }])
  }, 300_000)

  it('applies only to adapters that run agent code', () => {
    const r = forge(['run', '--suite', 'smoke', '--adapter', 'mock', '--no-sandbox'], stack.env)
    expect(r.status).toBe(2)
    expect(r.stderr).toContain('--no-sandbox applies only to adapters that run agent code (subprocess, pydantic-ai, module), not "mock"')
  })
})

describe('a machine without a sandbox', () => {
  it('refuses the run, saying why and about --no-sandbox', () => {
    const r = forge(['run', '--suite', suiteDir, '--adapter', 'subprocess', '--adapter-config', agentConfig(false), '--attempts', '1'], { ...stack.env, FORGE_UNSHARE_BIN: '/bin/false' })
    expect(r.status).toBe(2)
    expect(r.stderr).toContain(
      'cannot create an agent sandbox on this machine: a test sandbox failed (exit status 1). Run agents unsandboxed with --no-sandbox (adapter config "sandbox": false); every attempt is then marked degraded',
    )
  })
})

describe('forge sql through the running ingester', () => {
  it.each([
    ['WITH 1 AS x INSERT INTO attempts SELECT * FROM attempts', 'INSERT is not a read'],
    ["SELECT * FROM file('/proc/self/environ', 'LineAsString')", 'the table function file()'],
    ["SELECT * FROM url('http://127.0.0.1:9/', 'LineAsString')", 'the table function url()'],
  ])('refuses %s with exit 2', (query, reason) => {
    const r = forge(['sql', query], stack.env)
    expect(r.status).toBe(2)
    expect(r.stderr).toContain(`query refused: ${reason}`)
  })
})
