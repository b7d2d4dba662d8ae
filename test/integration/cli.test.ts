/** The `forge` CLI as a user runs it: output, --json, exit codes, and reads while the stack runs or is down. */
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { packageRoot } from '../../stack/paths.js'
import { startService } from '../adapters/service.js'
import { forge, forgeAsync, startTestStack, type TestStack } from '../helpers/stack.js'
import { patientSmoke } from '../helpers/suites.js'

let stack: TestStack

beforeAll(async () => {
  stack = await startTestStack('cli')
})
afterAll(async () => {
  await stack?.down()
})

describe('forge CLI', () => {
  it('runs a suite and prints per-task progress, the table, the suite rate and the run id', () => {
    const r = forge(['run', '--suite', 'smoke', '--attempts', '3', '--workers', '1', '--seed', '7'], stack.env)
    expect(r.stderr).not.toMatch(/Error/)
    expect(r.status).toBe(0)
    expect(r.stdout).toMatch(/\[5\/5\] \w+: \d\/3 passed/)
    expect(r.stdout).toMatch(/task\s+k\/n\s+success\s+wilson 95%/)
    expect(r.stdout).toMatch(/suite success \(unweighted mean of 5 task rates\): \d+\.\d%/)
    expect(r.stdout).toMatch(/run r\d{14}-[0-9a-f]{6}/)
  })

  it('answers runs list, stats and sql through the running ingester, with --json', () => {
    const runs = forge(['runs', 'list', '--json'], stack.env)
    expect(runs.status).toBe(0)
    const list = JSON.parse(runs.stdout) as { run_id: string; stored_attempts: number; status: string }[]
    expect(list.length).toBeGreaterThan(0)
    expect(list[0]).toMatchObject({ stored_attempts: 15, status: 'completed' })

    const stats = forge(['stats', '--run-id', list[0]!.run_id, '--json'], stack.env)
    expect(stats.status).toBe(0)
    const parsed = JSON.parse(stats.stdout) as { attempts: number; tasks: { n: number }[] }
    expect({ attempts: parsed.attempts, tasks: parsed.tasks.map((t) => t.n) }).toEqual({ attempts: 15, tasks: [3, 3, 3, 3, 3] })

    const sql = forge(['sql', `SELECT count() AS n FROM attempts FINAL WHERE run_id = '${list[0]!.run_id}'`], stack.env)
    expect(sql.status).toBe(0)
    expect(sql.stdout).toMatch(/^n\s*\n-+\s*\n15\s*\n\(1 row\)/m)
  })

  it('reports a SQL error clearly with a non-zero exit', () => {
    const r = forge(['sql', 'SELECT nope FROM attempts'], stack.env)
    expect(r.status).toBe(5)
    expect(r.stderr).toMatch(/Error: .*nope/s)
  })

  it('refuses SQL that would write, so nothing stored can be lost through forge sql', () => {
    const drop = forge(['sql', 'DROP TABLE attempts'], stack.env)
    // a refusal is bad input (exit 2), with the reason (issue 10)
    expect(drop.status).toBe(2)
    expect(drop.stderr).toMatch(/query refused: the store is read-only here/)
    const count = forge(['sql', 'SELECT count() AS n FROM attempts FINAL', '--json'], stack.env)
    expect(Number((JSON.parse(count.stdout) as { n: string }[])[0]!.n)).toBeGreaterThan(0)
  })

  it('validates every bundled suite, and names the file and field of a broken one', () => {
    const ok = forge(['tasks', 'validate'], stack.env)
    expect(ok.status).toBe(0)
    expect(ok.stdout).toMatch(/ok\s+smoke: 5 tasks/)
    expect(ok.stdout).toMatch(/ok\s+toy_math: 3 tasks/)

    const dir = mkdtempSync(join(tmpdir(), 'forge-broken-'))
    mkdirSync(join(dir, 'tasks'))
    writeFileSync(join(dir, 'suite.yaml'), 'name: broken\n')
    writeFileSync(join(dir, 'tasks', 'a.yaml'), 'id: a\ninstruction: hi\noutcome_graders:\n  - type: exact\n    expectd: 1\n')
    const bad = forge(['tasks', 'validate', '--suite', dir], stack.env)
    rmSync(dir, { recursive: true, force: true })
    expect(bad.status).toBe(2)
    expect(bad.stdout).toMatch(/FAIL\s+\S*forge-broken-\w+: 2 problem\(s\)/)
    expect(bad.stdout).toMatch(/outcome_graders\[0\]\.expected: required key missing for the exact grader/)
    expect(bad.stdout).toMatch(/a\.yaml: outcome_graders\[0\]/)
  })

  it('refuses a run with bad flags, naming the flag', () => {
    const r = forge(['run', '--suite', 'smoke', '--adapter', 'nosuch'], stack.env)
    expect(r.status).toBe(2)
    expect(r.stderr).toMatch(/unknown adapter "nosuch"/)
    const t = forge(['run', '--suite', 'smoke', '--task', 'nosuch'], stack.env)
    expect(t.status).toBe(2)
    expect(t.stderr).toMatch(/--task names tasks .* nosuch/)
  })

  it('says how to install a missing binary instead of a stack trace', () => {
    const home = mkdtempSync(join(tmpdir(), 'forge-nobin-'))
    const r = forge(['stack', 'up'], { ...stack.env, FORGE_HOME: home, FORGE_TEMPORAL_BIN: join(home, 'no-temporal') })
    rmSync(home, { recursive: true, force: true })
    expect(r.status).toBe(3)
    expect(r.stderr).toMatch(/FORGE_TEMPORAL_BIN=.*no-temporal is not an executable file/)
    expect(r.stderr).not.toMatch(/\n\s+at /)
  })

  it('warns when attempts of a run that kept its sandbox are degraded anyway, naming how many and where to see why', async () => {
    // an http agent whose reset fails: its attempts may share state, so each is degraded
    const agent = await startService({
      'POST /reset': (_req, res) => void res.writeHead(500).end('no reset here'),
      'POST /invoke': (_req, res) => void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ output: 'done' })),
    })
    try {
      const r = await forgeAsync(['run', '--suite', 'smoke', '--attempts', '1', '--adapter', 'http', '--adapter-config', JSON.stringify({ base_url: agent.url }), '--run-id', 'degraded-http'], stack.env, 120_000)
      expect(r.status, r.stderr).toBe(0)
      expect(r.stdout).toMatch(/validity: degraded 5/)
      expect(r.stderr.replace(/\s*›\s*/g, ' ').replace(/\s+/g, ' ')).toContain(
        'Warning: 5 of 5 attempts are degraded: their isolation was weakened (an http agent whose reset failed, or a worker process that unsandboxed agent code had run in); forge trace --run-id degraded-http --task <task> --attempt <n> shows why (an error of kind isolation)',
      )
      const trace = await forgeAsync(['trace', '--run-id', 'degraded-http', '--task', 'echo_greeting', '--attempt', '0', '--json'], stack.env)
      expect(trace.status, trace.stderr).toBe(0)
      expect((JSON.parse(trace.stdout) as { errors: unknown[] }).errors).toContainEqual({ kind: 'isolation', message: expect.stringMatching(/^the reset failed \(POST http:\/\/127\.0\.0\.1:\d+\/reset → 500\): attempts may share state$/) as unknown })
    } finally {
      await agent.close()
    }
  })

  it('answers stats and sql while a run is in progress', async () => {
    // an http agent that answers the first 5 attempts and holds every later one until the test
    // releases it: the run cannot end before the reads below, however fast or slow the machine is
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    let invoked = 0
    const agent = await startService({
      'POST /reset': (_req, res) => void res.writeHead(204).end(),
      'POST /invoke': async (_req, res) => {
        if (++invoked > 5) await gate
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ output: 'done' }))
      },
    })
    // smoke with a 10-minute duration budget, so a held attempt cannot time out and end the run on its own
    const suite = patientSmoke('forge-held-')
    const run = spawn(process.execPath, [join(packageRoot(), 'bin', 'run.js'), 'run', '--suite', suite, '--attempts', '6', '--adapter', 'http', '--adapter-config', JSON.stringify({ base_url: agent.url }), '--concurrency', '5', '--run-id', 'in-progress'], {
      env: stack.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    run.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    const exited = new Promise<number>((resolve) => run.once('exit', (code) => resolve(code ?? -1)))
    try {
      // wait until the first answered attempts are stored (the rest are held at the gate)
      let stored = 0
      while (stored === 0 && run.exitCode === null) {
        await sleep(250)
        const r = await forgeAsync(['sql', "SELECT count() AS n FROM attempts FINAL WHERE run_id = 'in-progress'", '--json'], stack.env)
        if (r.status === 0) stored = Number((JSON.parse(r.stdout) as { n: string }[])[0]!.n)
      }
      const stats = await forgeAsync(['stats', '--run-id', 'in-progress', '--json'], stack.env)
      expect(run.exitCode).toBeNull()
      expect(stored).toBeGreaterThan(0)
      expect(stored).toBeLessThanOrEqual(5)
      expect(stats.status).toBe(0)
      expect((JSON.parse(stats.stdout) as { attempts: number }).attempts).toBeLessThanOrEqual(5)
    } finally {
      release()
    }
    expect(await exited).toBe(0)
    await agent.close()
    rmSync(suite, { recursive: true, force: true })
    expect(invoked).toBe(30)
    expect(output).toMatch(/\[5\/5\]/)
  })

  it('detects a crashed stack process from its stale pid, and its supervisor restarts it (issue 12)', () => {
    const state = JSON.parse(readFileSync(join(stack.home, 'stack.json'), 'utf8')) as { ingester: { pid: number } }
    process.kill(state.ingester.pid, 'SIGKILL')
    // the supervisor checks every second; a restarted ingester answers within a few
    let ingester: { name: string; state: string; detail: string } | undefined
    for (let i = 0; i < 300; i++) {
      spawnSync('sleep', ['0.1'])
      const status = JSON.parse(forge(['stack', 'status', '--json'], stack.env).stdout) as { name: string; state: string; detail: string }[]
      ingester = status.find((s) => s.name === 'ingester')
      if (ingester?.state === 'running') break
      expect(ingester).toEqual({ name: 'ingester', state: 'stopped', detail: `stale pid ${state.ingester.pid}` })
    }
    expect(ingester).toEqual({ name: 'ingester', state: 'running', detail: expect.stringMatching(/^pid \d+$/) })
    expect(ingester?.detail).not.toBe(`pid ${state.ingester.pid}`)
    expect(readFileSync(join(stack.home, 'logs', 'supervisor.log'), 'utf8')).toMatch(/dead: ingester\n.*the ingester had died: restarting it…\n/)
    const up = forge(['stack', 'up', '--json'], stack.env)
    expect(up.status).toBe(0)
    expect((JSON.parse(up.stdout) as { state: string }[]).map((s) => s.state)).toEqual(['running', 'running', 'running', 'running'])
  })

  it('reads the embedded store directly once the stack is down', async () => {
    const before = forge(['runs', 'list', '--json'], stack.env)
    await import('../../stack/local-stack.js').then((m) => m.stackDown(stack.config))
    const after = forge(['runs', 'list', '--json'], stack.env)
    expect(after.status).toBe(0)
    expect(JSON.parse(after.stdout)).toEqual(JSON.parse(before.stdout))
    const status = forge(['stack', 'status', '--json'], stack.env)
    expect((JSON.parse(status.stdout) as { state: string }[]).map((s) => s.state)).toEqual(['stopped', 'stopped', 'stopped', 'stopped'])
  })
})
