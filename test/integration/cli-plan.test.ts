/** `forge run --dry-run` and `forge plan` as a user runs them: nothing is started, no model is called. */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DryRunReport } from '../../app/run.js'
import type { SweepPlan } from '../../core/hypothesis.js'
import { forge } from '../helpers/stack.js'

let home: string
let env: NodeJS.ProcessEnv

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), 'forge-dry-'))
  env = { ...process.env, FORGE_HOME: home, FORGE_LOG_LEVEL: 'warn' }
  for (const key of ['FORGE_TEMPORAL_ADDRESS', 'FORGE_NATS_URL', 'FORGE_CLICKHOUSE_URL']) delete env[key]
  // a model the gateway would call: the dry run must not reach it
  env['OPENAI_BASE_URL'] = 'http://127.0.0.1:9/v1'
})
afterAll(() => {
  rmSync(home, { recursive: true, force: true })
})

describe('forge run --dry-run', () => {
  it('validates, resolves the configuration and estimates the cost without starting anything', () => {
    const r = forge(['run', '--suite', 'toy_math', '--attempts', '50', '--model', 'gpt-4o-mini', '--seed', 'd', '--dry-run', '--json'], env)
    expect(r.status).toBe(0)
    const plan = JSON.parse(r.stdout) as DryRunReport
    expect(plan).toMatchObject({
      dry_run: true,
      suite: 'toy_math',
      tasks: ['decimal_division', 'paren_product', 'precedence'],
      attempts_per_task: 50,
      adapter: 'mock',
      adapter_config: { model: 'gpt-4o-mini' },
      seed: 'd',
      sequential: null,
      estimate: { model: 'gpt-4o-mini', attempts: 150, source: 'heuristic', price_table: { version: '2026-11-default.2', date: '2026-11-30' } },
    })
    expect(plan.config_id).toMatch(/^mock-[0-9a-f]{8}$/)
    expect(plan.estimate.cost_usd).toBeCloseTo((plan.estimate.input_tokens * 0.15 + plan.estimate.output_tokens * 0.6) / 1e6, 12)
    expect(plan.estimate.cost_usd!).toBeGreaterThan(0)
    // nothing was started or created: no stack record, no store, no logs
    expect(existsSync(home) ? readdirSync(home) : []).toEqual([])
  })

  it('prints the estimate, and an unpriced model as unavailable', () => {
    const r = forge(['run', '--suite', 'smoke', '--attempts', '10', '--model', 'mystery-model', '--dry-run', '--stop-at-width', '0.2'], env)
    expect(r.status).toBe(0)
    expect(r.stdout).toMatch(/^dry run: nothing was started and no model was called$/m)
    expect(r.stdout).toMatch(/5 tasks × 10 attempts = 50/)
    expect(r.stdout).toMatch(/sequential stopping: a task stops once its Wilson 95% interval is ≤ 0\.2 wide/)
    expect(r.stdout).toMatch(/estimated cost: unavailable: model "mystery-model" has no price in the table \(price table 2026-11-default\.2, 2026-11-30\)/)
  })

  it('rejects bad input with exit code 2', () => {
    expect(forge(['run', '--suite', 'no-such-suite', '--dry-run'], env).status).toBe(2)
    expect(forge(['run', '--suite', 'smoke', '--stop-at-width', '2', '--dry-run'], env).status).toBe(2)
    const table = forge(['run', '--suite', 'smoke', '--price-table', join(home, 'missing.yaml'), '--dry-run'], env)
    expect({ status: table.status, named: /price table .*missing\.yaml/.test(table.stderr) }).toEqual({ status: 2, named: true })
    // --resume loads its module when it is asked for (not with every run): its checks answer as ever
    const resume = forge(['run', '--resume', 'r-none', '--workers', '300'], env)
    expect({ status: resume.status, said: resume.stderr.includes('--workers must be a whole number from 0 to 256, got 300') }).toEqual({ status: 2, said: true })
  })
})

describe('forge plan', () => {
  it('sizes a sweep for 80% power', () => {
    const r = forge(['plan', '--detect', '0.1', '--baseline-rate', '0.9', '--tasks', '8', '--json'], env)
    expect(r.status).toBe(0)
    expect(JSON.parse(r.stdout) as SweepPlan).toEqual({
      attempts: 199,
      baseline_rate: 0.9,
      detect_drop: 0.1,
      alpha: 0.05,
      power: 0.8,
      tasks: 8,
      attempts_all_tasks: 325,
      attempts_per_run: 2600,
    })
    const text = forge(['plan', '--detect', '0.1', '--baseline-rate', '0.9'], env)
    expect(text.stdout).toMatch(/to detect 90\.0% → 80\.0% with 80% power at alpha 0\.05 \(two-sided\): 199 attempts per task in each run/)
  })

  it('rejects a drop larger than the rate with exit code 2', () => {
    const r = forge(['plan', '--detect', '0.5', '--baseline-rate', '0.3'], env)
    expect({ status: r.status, message: /the drop must be in/.test(r.stderr) }).toEqual({ status: 2, message: true })
  })
})
