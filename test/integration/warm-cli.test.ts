/**
 * The warm CLI (stack/warm-cli.ts) on a real stack, through the real `forge` binary: a `forge run`
 * that leaves warm workers leaves one (only this user can reach it), and the next `forge run` is run
 * by it — its output, exit code and environment as that process's own — which then leaves the next;
 * a refused run exits as it would have in its own process; Ctrl-C reaches the run through it and
 * cancels it; a client killed mid-run takes it down, and a warm CLI killed mid-run leaves its client
 * exiting 1 with a message (`forge runs resume` finishes either run); a
 * client on another Node flag set or other CA certificates, FORGE_WARM_CLI=0, a stale socket file or a silent impostor leave
 * the run to the process itself; `stack down` stops it.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { rootCertificates } from 'node:tls'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { stackDown, stackStatus } from '../../stack/local-stack.js'
import { packageRoot } from '../../stack/paths.js'
import { stopWarmCli, warmCliPid, warmCliSocketPath } from '../../stack/warm-cli.js'
import { warmDir } from '../../stack/warm-workers.js'
import { openReader } from '../../app/store-access.js'
import { forge, startTestStack, type TestStack } from '../helpers/stack.js'
import { alive, until } from '../helpers/processes.js'

let stack: TestStack
/** the CLI's environment with warm workers (and so a warm CLI) on */
let env: NodeJS.ProcessEnv
let gate: string

beforeAll(async () => {
  stack = await startTestStack('warm-cli')
  env = { ...stack.env, FORGE_WARM_WORKERS: '1' }
  delete env['FORGE_WARM_CLI']
  gate = join(stack.home, 'warm-cli.gate')
})
afterAll(async () => {
  await stack?.down()
})

const log = (): string => readFileSync(join(stack.home, 'logs', 'cli-warm.log'), 'utf8')
const runArgs = (seed: string, attempts = 2): string[] => ['run', '--suite', 'smoke', '--adapter', 'mock', '--attempts', String(attempts), '--seed', seed, '--json']

/** the warm CLI once it listens (a run leaves one when there is none) */
async function warmCli(): Promise<number> {
  if (warmCliPid(stack.home) === undefined) expect(forge(runArgs('leave'), env).status).toBe(0)
  expect(await until(() => existsSync(warmCliSocketPath(stack.home)) && warmCliPid(stack.home) !== undefined)).toBe(true)
  return warmCliPid(stack.home)!
}

/** `forge …` as a terminal job: its own process group, output captured */
function startCli(args: string[], cliEnv: NodeJS.ProcessEnv): { child: ChildProcess; printed: () => string; exited: Promise<{ code: number | null; stdout: string; stderr: string }> } {
  const child = spawn(process.execPath, [join(packageRoot(), 'bin', 'run.js'), ...args], { env: cliEnv, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })))
  return { child, printed: () => stdout + stderr, exited }
}

/** Waits (polling) until `check` holds; false when it does not within `ms`. */
async function untilStored(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (await check()) return true
    await sleep(100)
  }
  return false
}

async function storedAttempts(runId: string): Promise<number> {
  const reader = await openReader(stack.config)
  try {
    const [row] = await reader.query<{ n: number | string }>('SELECT count() AS n FROM attempts FINAL WHERE run_id = {run:String}', { run: runId })
    return Number(row?.n)
  } finally {
    await reader.close()
  }
}

/** `forge run` of 5 tasks × 4 attempts held at the gate (the mock agent waits while the gate file is there) once the 10 in front of it are stored */
async function startHeldRun(runId: string): Promise<ReturnType<typeof startCli>> {
  writeFileSync(gate, '')
  const cli = startCli(['run', '--suite', 'smoke', '--adapter', 'mock', '--attempts', '4', '--seed', runId, '--run-id', runId, '--adapter-config', JSON.stringify({ hold_file: gate, hold_from: 2 })], env)
  expect(await untilStored(async () => (await storedAttempts(runId)) >= 10, 60_000)).toBe(true)
  return cli
}

describe('the warm CLI', () => {
  it('a run leaves one (only this user can reach it); the next forge run is run by it, which exits and leaves the next', async () => {
    await stopWarmCli(stack.home)
    const first = forge(runArgs('wc-1'), env)
    expect(first.status).toBe(0)
    const pid = await warmCli()
    expect(statSync(warmDir(stack.home)).mode & 0o777).toBe(0o700)
    expect(statSync(warmCliSocketPath(stack.home)).mode & 0o777).toBe(0o600)
    expect(stackStatus(stack.config)).toContainEqual({ name: 'warm-cli', state: 'running', detail: expect.stringMatching(new RegExp(`^pid ${pid} waiting for the next forge run, RSS \\d+ MiB`)) as unknown })

    const second = forge(runArgs('wc-2'), env)
    expect(second.status).toBe(0)
    const report = JSON.parse(second.stdout) as { attempts: number; status: string; seed: string }
    expect(report).toMatchObject({ attempts: 10, status: 'completed', seed: 'wc-2' })
    expect(log()).toContain(`warm CLI ${pid}: running forge "run" "--suite" "smoke" "--adapter" "mock" "--attempts" "2" "--seed" "wc-2" "--json" in ${process.cwd()}`)
    // it served one run and went; that run left the next
    expect(await until(() => !alive(pid))).toBe(true)
    const next = await warmCli()
    expect(next).not.toBe(pid)
    // the same report as a run in its own process prints, field for field
    const cold = forge(runArgs('wc-3'), { ...env, FORGE_WARM_CLI: '0' })
    expect(cold.status).toBe(0)
    expect(Object.keys(JSON.parse(cold.stdout) as object).sort()).toEqual(Object.keys(report).sort())
    // FORGE_WARM_CLI=0 left it alone
    expect(warmCliPid(stack.home)).toBe(next)
  })

  it("runs the command in the client's working directory and environment, and a refused run exits as in its own process", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'forge-warm-cli-cwd-'))
    try {
      // a suite named relative to the client's directory, and FORGE_HOME relative to it too
      const pid = await warmCli()
      const served = spawnSyncIn(dir, ['run', '--suite', join(packageRoot(), 'suites', 'smoke'), '--adapter', 'mock', '--attempts', '1', '--seed', 'wc-cwd', '--json'], env)
      expect(served.status).toBe(0)
      expect(log()).toContain(`warm CLI ${pid}: running forge "run" "--suite" "${join(packageRoot(), 'suites', 'smoke')}"`)
      expect(log()).toContain(`" in ${dir}`)

      const refusedPid = await warmCli()
      const refused = forge(['run', '--suite', 'no-such-suite', '--adapter', 'mock', '--attempts', '1'], env)
      expect(log()).toContain(`warm CLI ${refusedPid}: running forge "run" "--suite" "no-such-suite"`)
      const own = forge(['run', '--suite', 'no-such-suite', '--adapter', 'mock', '--attempts', '1'], { ...env, FORGE_WARM_CLI: '0' })
      expect(own.status).toBe(2)
      expect({ status: refused.status, stdout: refused.stdout, stderr: refused.stderr }).toEqual({ status: own.status, stdout: own.stdout, stderr: own.stderr })
      // whatever it ran, it leaves the next one as it exits
      expect(await until(() => existsSync(warmCliSocketPath(stack.home)) && ![undefined, refusedPid].includes(warmCliPid(stack.home)))).toBe(true)
      // --help too, as oclif prints it
      const helpPid = await warmCli()
      const help = forge(['run', '--help'], env)
      expect(log()).toContain(`warm CLI ${helpPid}: running forge "run" "--help"`)
      const ownHelp = forge(['run', '--help'], { ...env, FORGE_WARM_CLI: '0' })
      expect(ownHelp.stdout).toContain('--attempts')
      expect({ status: help.status, stdout: help.stdout, stderr: help.stderr }).toEqual({ status: ownHelp.status, stdout: ownHelp.stdout, stderr: ownHelp.stderr })
      // the client's environment, not the one the warm CLI started with: a setting it refuses
      const pid2 = await warmCli()
      const badSetting = forge(runArgs('wc-env'), { ...env, FORGE_LOG_LEVEL: 'loud' })
      expect(log()).toContain(`warm CLI ${pid2}: running forge "run" "--suite" "smoke" "--adapter" "mock" "--attempts" "2" "--seed" "wc-env"`)
      const badSettingOwn = forge(runArgs('wc-env'), { ...env, FORGE_LOG_LEVEL: 'loud', FORGE_WARM_CLI: '0' })
      expect(badSettingOwn.status).toBe(2)
      expect(badSettingOwn.stdout + badSettingOwn.stderr).toContain('FORGE_LOG_LEVEL')
      expect({ status: badSetting.status, stdout: badSetting.stdout, stderr: badSetting.stderr }).toEqual({ status: badSettingOwn.status, stdout: badSettingOwn.stdout, stderr: badSettingOwn.stderr })
      // a flag oclif refuses, in JSON too
      const pid3 = await warmCli()
      const badFlag = forge(['run', '--attempts', 'many', '--json'], env)
      expect(log()).toContain(`warm CLI ${pid3}: running forge "run" "--attempts" "many" "--json"`)
      const badOwn = forge(['run', '--attempts', 'many', '--json'], { ...env, FORGE_WARM_CLI: '0' })
      expect(badOwn.status).not.toBe(0)
      // (Node's warnings name the process that printed them)
      const samePid = (text: string): string => text.replace(/\(node:\d+\)/g, '(node:PID)')
      expect({ status: badFlag.status, stdout: badFlag.stdout, stderr: samePid(badFlag.stderr) }).toEqual({ status: badOwn.status, stdout: badOwn.stdout, stderr: samePid(badOwn.stderr) })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('Ctrl-C reaches the run through it: the run is cancelled as in its own process', async () => {
    const pid = await warmCli()
    const cli = await startHeldRun('wc-ctrl-c')
    try {
      expect(log()).toContain(`warm CLI ${pid}: running forge "run" "--suite" "smoke" "--adapter" "mock" "--attempts" "4" "--seed" "wc-ctrl-c"`)
      process.kill(-cli.child.pid!, 'SIGINT')
      const end = await cli.exited
      expect({ code: end.code, stderr: end.stderr.trim().split('\n').slice(-2) }).toEqual({
        code: 1,
        stderr: ['cancelling the run… (Ctrl-C again to quit at once)', 'Error: run wc-ctrl-c was cancelled; what finished is stored (forge stats --run-id wc-ctrl-c)'],
      })
      expect(await until(() => !alive(pid))).toBe(true)
    } finally {
      rmSync(gate, { force: true })
    }
  })

  it('a client killed mid-run takes it down with it; forge runs resume finishes the run', async () => {
    const pid = await warmCli()
    const cli = await startHeldRun('wc-kill')
    try {
      cli.child.kill('SIGKILL')
      await cli.exited
      // no process is left running a command nobody waits for
      expect(await until(() => !alive(pid))).toBe(true)
    } finally {
      rmSync(gate, { force: true })
    }
    const resumed = forge(['runs', 'resume', 'wc-kill', '--json'], { ...env, FORGE_WARM_CLI: '0' })
    expect(resumed.status).toBe(0)
    expect(await storedAttempts('wc-kill')).toBe(20)
  })

  it('a warm CLI SIGKILLed mid-run: its client says so and exits 1; forge runs resume finishes the run, each attempt stored once', async () => {
    const pid = await warmCli()
    const cli = await startHeldRun('wc-kill-warm')
    let end: { code: number | null; stdout: string; stderr: string }
    try {
      process.kill(pid, 'SIGKILL')
      end = await cli.exited
    } finally {
      rmSync(gate, { force: true })
    }
    expect({ code: end.code, stderr: end.stderr.trim().split('\n').at(-1) }).toEqual({
      code: 1,
      stderr: 'forge: the warm CLI running this command ended without its exit code (FORGE_HOME/logs/cli-warm.log); FORGE_WARM_CLI=0 runs forge run in its own process',
    })
    const resumed = forge(['runs', 'resume', 'wc-kill-warm', '--json'], { ...env, FORGE_WARM_CLI: '0' })
    expect(resumed.status).toBe(0)
    expect(await storedAttempts('wc-kill-warm')).toBe(20)
    const reader = await openReader(stack.config)
    try {
      const [rows] = await reader.query<{ n: number | string }>("SELECT count() AS n FROM (SELECT attempt_uid FROM attempts FINAL WHERE run_id = 'wc-kill-warm' GROUP BY attempt_uid)")
      expect(Number(rows?.n)).toBe(20)
    } finally {
      await reader.close()
    }
  })

  it('is not used by a client that trusts other CA certificates (NODE_EXTRA_CA_CERTS, which Node reads once as it starts): it stops, and the client runs the command itself', async () => {
    const ca = join(stack.home, 'extra-ca.pem')
    writeFileSync(ca, rootCertificates[0]!)
    // the same environment is served (so what stops the next one is the certificates alone)
    const served = await warmCli()
    const same = forge(runArgs('wc-ca-same'), env)
    expect(same.status, same.stderr).toBe(0)
    expect(log()).toContain(`warm CLI ${served}: running`)
    const next = await warmCli()
    expect(next).not.toBe(served)
    const other = forge(runArgs('wc-ca-other'), { ...env, NODE_EXTRA_CA_CERTS: ca })
    expect(other.status, other.stderr).toBe(0)
    expect(JSON.parse(other.stdout)).toMatchObject({ attempts: 10, status: 'completed' })
    expect(await until(() => !alive(next))).toBe(true)
    expect(log()).not.toContain(`warm CLI ${next}: running`)
  })

  it('is not used by a client on other Node flags, with FORGE_WARM_CLI=0, through a stale socket file or a silent impostor; stack down stops it', async () => {
    // other NODE_OPTIONS: it stops, and the client runs the command itself
    const pid = await warmCli()
    const other = forge(runArgs('wc-node-options'), { ...env, NODE_OPTIONS: '--no-warnings' })
    expect(other.status).toBe(0)
    expect(JSON.parse(other.stdout)).toMatchObject({ attempts: 10, status: 'completed' })
    expect(await until(() => !alive(pid))).toBe(true)
    expect(log()).not.toContain(`warm CLI ${pid}: running`)

    // a socket file nobody listens on (a warm CLI killed): removed, and the run goes on in its own process
    const stale = await warmCli()
    process.kill(stale, 'SIGKILL')
    expect(await until(() => !alive(stale))).toBe(true)
    expect(existsSync(warmCliSocketPath(stack.home))).toBe(true)
    const afterStale = forge(runArgs('wc-stale'), env)
    expect(afterStale.status).toBe(0)
    expect(JSON.parse(afterStale.stdout)).toMatchObject({ attempts: 10, status: 'completed' })

    // an impostor that never says hello: the client waits a second, then runs the command itself
    await stopWarmCli(stack.home)
    expect(await until(() => !existsSync(warmCliSocketPath(stack.home)))).toBe(true)
    const server = createServer((socket) => socket.on('error', () => undefined))
    await new Promise<void>((resolve) => server.listen(warmCliSocketPath(stack.home), resolve))
    try {
      const afterImpostor = forge(runArgs('wc-impostor'), { ...env, FORGE_WARM_WORKERS: '0' })
      expect(afterImpostor.status).toBe(0)
      expect(JSON.parse(afterImpostor.stdout)).toMatchObject({ attempts: 10, status: 'completed' })
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
    rmSync(warmCliSocketPath(stack.home), { force: true })

    // stack down stops the warm CLI with the rest
    const last = await warmCli()
    expect(await stackDown(stack.config)).toContain('warm CLI')
    expect(await until(() => !alive(last))).toBe(true)
    expect(existsSync(warmCliSocketPath(stack.home))).toBe(false)
  })
})

function spawnSyncIn(cwd: string, args: string[], cliEnv: NodeJS.ProcessEnv): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [join(packageRoot(), 'bin', 'run.js'), ...args], { cwd, env: cliEnv, encoding: 'utf8', timeout: 180_000 })
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr }
}
