/**
 * `forge report` and `forge trace` as a user runs them, over an embedded store no stack owns (the
 * CLI opens chDB itself): what they write and print, and the clear errors with exit code 2.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { WrittenReport } from '../../app/report.js'
import type { TraceView } from '../../core/span-tree.js'
import { resolveConfig } from '../../stack/config.js'
import { openClickHouse } from '../../store/clickhouse.js'
import { migrate } from '../../store/migrations.js'
import { forge } from '../helpers/stack.js'
import { storeSyntheticRun } from './report-fixture.js'

let home: string
let env: NodeJS.ProcessEnv

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'forge-report-cli-'))
  env = { ...process.env, FORGE_HOME: home, FORGE_LOG_LEVEL: 'warn' }
  for (const key of ['FORGE_TEMPORAL_ADDRESS', 'FORGE_NATS_URL', 'FORGE_CLICKHOUSE_URL']) delete env[key]
  const client = await openClickHouse({ kind: 'embedded', path: resolveConfig(env).storePath })
  await migrate(client)
  await storeSyntheticRun(client, 'cli1', ['alpha', 'beta'], 12)
  // the CLI opens the store itself: chDB allows one owner
  await client.close()
})

afterAll(() => {
  rmSync(home, { recursive: true, force: true })
})

describe('forge report', () => {
  it('writes the report and the trace pages and says where', () => {
    const out = join(home, 'reports', 'cli1.html')
    const r = forge(['report', '--run-id', 'cli1', '--out', out, '--max-traces', '3'], env)
    expect(r.status, r.stderr).toBe(0)
    expect(r.stdout).toMatch(new RegExp(`^report of run cli1 \\(24 attempts\\): ${out.replace(/[.]/g, '\\.')} \\(\\d+\\.\\d KiB\\)$`, 'm'))
    expect(r.stdout).toContain(`3 trace pages of failed attempts in ${join(home, 'reports', 'cli1-traces')}`)
    expect(r.stderr).toContain('harness errors exceed 2% of attempts')
    expect(readFileSync(out, 'utf8')).toContain('<div class="banner" id="harness-banner" role="alert">')
  })

  it('answers --json with what it wrote', () => {
    const out = join(home, 'json.html')
    const r = forge(['report', '--run-id', 'cli1', '--out', out, '--max-traces', '0', '--json'], env)
    expect(r.status, r.stderr).toBe(0)
    const written = JSON.parse(r.stdout) as WrittenReport
    expect(written).toMatchObject({ run_id: 'cli1', out, traces_dir: null, traces_written: 0, attempts: 24, harness_banner: true })
    expect(existsSync(out)).toBe(true)
  })

  it('refuses bad input with a clear message and exit code 2', () => {
    const cases: [string[], string][] = [
      [['report', '--run-id', 'cli1', '--out', join(home, 'r.txt')], `--out must name an .html file, got "${join(home, 'r.txt')}"`],
      [['report', '--run-id', 'nope', '--out', join(home, 'r.html')], 'no run "nope" is stored (see forge runs list)'],
      [['report', '--run-id', 'cli1', '--out', join(home, 'r.html'), '--compare', 'a', '--baseline', 'b'], 'give either --compare <run> or --baseline <ref>, not both'],
      [['report', '--run-id', 'cli1', '--out', join(home, 'r.html'), '--compare', 'ghost'], 'no run "ghost" is stored'],
    ]
    for (const [args, message] of cases) {
      const r = forge(args, env)
      expect({ args, status: r.status, stderr: r.stderr.includes(message) }).toEqual({ args, status: 2, stderr: true })
    }
  })
})

describe('the harness-error banner in the terminal', () => {
  it('leads forge stats when harness errors exceed 2% of attempts', () => {
    const r = forge(['stats', '--run-id', 'cli1'], env)
    expect(r.status, r.stderr).toBe(0)
    // attempts 5 of each task (i % 13 = 5) are harness errors: 2 of 24
    expect(r.stdout).toContain(
      '!! HARNESS ERRORS: 2 of 24 attempts (8.3%) were harness errors — above the 2% the figures tolerate: they count as failures below, so rates understate the agent.',
    )
  })
})

describe('forge trace', () => {
  it('prints the span tree indented by depth, faults marked', () => {
    const r = forge(['trace', '--run-id', 'cli1', '--task', 'alpha', '--attempt', '3'], env)
    expect(r.status, r.stderr).toBe(0)
    const lines = r.stdout.split('\n')
    expect(lines[0]).toBe('attempt cli1/cfg/alpha/3')
    expect(lines).toContain('▾ attempt alpha #3  @0 ms +60 ms  FAIL')
    expect(lines).toContain('  ▾ mock  @0 ms +50 ms')
    // attempt 3 met 1 + (3 % 4) = 4 injected faults: its first four calls
    expect(lines.filter((l) => /^ {4}• tool kv_(get|put) .*\[injected fault: (timeout|http_500)\]$/.test(l))).toHaveLength(4)
    expect(lines).toContain('  ▾ grade  @55 ms +1 ms')
  })

  it('answers --json with the tree, and finds the attempt by uid', () => {
    const r = forge(['trace', '--attempt-uid', 'cli1/cfg/beta/0', '--json'], env)
    expect(r.status, r.stderr).toBe(0)
    const view = JSON.parse(r.stdout) as TraceView
    expect(view).toMatchObject({ attempt_uid: 'cli1/cfg/beta/0', task_id: 'beta', attempt: 0, model: 'm1' })
    expect(view.roots[0]!.children.map((c) => c.id)).toEqual(['agent', 'grading'])
  })

  it('refuses bad input with a clear message and exit code 2', () => {
    const cases: [string[], string][] = [
      [['trace', '--run-id', 'cli1'], 'name the attempt: --attempt-uid, or --run-id, --task and --attempt (missing --task, --attempt)'],
      [['trace', '--attempt-uid', 'cli1/cfg/beta/0', '--task', 'beta'], '--attempt-uid names the attempt already: drop --task'],
      [['trace', '--run-id', 'cli1', '--task', 'omega', '--attempt', '0'], '--task: run cli1 has no task "omega" (it has: alpha, beta)'],
      [['trace', '--run-id', 'cli1', '--task', 'alpha', '--attempt', '40'], '--attempt: run cli1 has no stored attempt 40 of task alpha'],
      [['trace', '--attempt-uid', 'cli1/cfg/beta/0', '--out', join(home, 't.png')], `--out must name an .html file`],
    ]
    for (const [args, message] of cases) {
      const r = forge(args, env)
      expect({ args, status: r.status, stderr: r.stderr.includes(message) }).toEqual({ args, status: 2, stderr: true })
    }
  })
})
