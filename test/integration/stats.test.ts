/**
 * Run statistics end to end on the embedded stack: costs priced by the worker from the run's
 * versioned price table (stamped on the run and printed), unavailable for an unpriced model,
 * sequential stopping reported as such, and `forge stats` as a user reads it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RunStats } from '../../app/stats.js'
import { runSuite } from '../../app/run.js'
import { wilsonWidth } from '../../core/stats.js'
import { forge, startTestStack, type TestStack } from '../helpers/stack.js'

let stack: TestStack
let dir: string

beforeAll(async () => {
  stack = await startTestStack('stats')
  dir = mkdtempSync(join(tmpdir(), 'forge-prices-'))
})
afterAll(async () => {
  await stack?.down()
  rmSync(dir, { recursive: true, force: true })
})

describe('run statistics on the embedded stack', () => {
  it('prices mock attempts from a custom price table, stamps its version and date, and prints them', async () => {
    const table = join(dir, 'prices.yaml')
    writeFileSync(table, 'version: test-2026-12\ndate: "2026-12-01"\nmodels:\n  priced-model: { input_per_mtok: 1000, output_per_mtok: 2000 }\n')
    const report = await runSuite(stack.config, {
      suite: 'toy_math',
      adapter: 'mock',
      attempts: 6,
      workers: 1,
      concurrency: 20,
      seed: 'priced',
      price_table: table,
      adapter_config: { model: 'priced-model' },
    })
    expect(report.stamps).toMatchObject({ price_table_version: 'test-2026-12', price_table_date: '2026-12-01' })
    expect(report.stamps.suite_hash).toMatch(/^[0-9a-f]{64}$/)
    const suite = report.suites[0]!
    expect(suite.cost.priced).toBe(18)
    // the mock reports tokens: the worker priced them at $1000/$2000 per million
    const expected = ((suite.input_tokens_per_attempt! * 1000 + suite.output_tokens_per_attempt! * 2000) / 1e6) * 18
    expect(suite.cost.total_usd).toBeCloseTo(expected, 9)
    expect(suite.cost.per_success_usd).toBeCloseTo(expected / suite.k, 9)

    const text = forge(['stats', '--run-id', report.run_id], stack.env)
    expect(text.status).toBe(0)
    expect(text.stdout).toMatch(/^price table test-2026-12 \(2026-12-01\)/m)
    expect(text.stdout).toMatch(/task\s+k\/n\s+success\s+wilson 95%\s+valid k\/n\s+valid rate\s+pass@3\s+pass\^3\s+pass@5\s+pass\^5\s+consistency/)
    expect(text.stdout).toMatch(/task\s+p50 ms\s+p90 ms\s+p99 ms\s+tool calls\s+tokens in\s+tokens out\s+cost\/attempt\s+cost\/success/)
    expect(text.stdout).toMatch(/^suite success \(unweighted mean of 3 task rates\): \d+\.\d%/m)
    expect(text.stdout).toMatch(/^cost \$\d+\.\d{4} total, \$\d+\.\d{4} per attempt, \$\d+\.\d{4} per success$/m)
  })

  it('reports the cost of a model the price table does not list as unavailable, never $0', async () => {
    const report = await runSuite(stack.config, {
      suite: 'toy_math',
      adapter: 'mock',
      attempts: 3,
      workers: 1,
      concurrency: 20,
      seed: 'unpriced',
      adapter_config: { model: 'no-such-model' },
    })
    expect(report.suites[0]!.cost).toEqual({ priced: 0, total_usd: null, per_attempt_usd: null, per_success_usd: null })
    expect(report.tasks.every((t) => t.cost.per_attempt_usd === null)).toBe(true)
    const json = forge(['stats', '--run-id', report.run_id, '--json'], stack.env)
    const parsed = JSON.parse(json.stdout) as RunStats
    expect(parsed.suites[0]!.cost.total_usd).toBeNull()
    const text = forge(['stats', '--run-id', report.run_id], stack.env)
    expect(text.stdout).toMatch(/cost n\/a total, n\/a per attempt, n\/a per success \(unavailable: 9 of 9 attempts used a model the price table does not list\)/)
  })

  it('stops tasks early under --stop-at-width and says so', async () => {
    const report = await runSuite(stack.config, {
      suite: 'toy_math',
      adapter: 'mock',
      attempts: 200,
      workers: 1,
      concurrency: 50,
      seed: 'sequential',
      sequential: { width: 0.25, round_size: 10, min_attempts: 20 },
    })
    expect(report.run).toMatchObject({ stop_width: 0.25, status: 'completed' })
    const stopped = report.tasks.filter((t) => t.stopped_early)
    expect(stopped.map((t) => t.task_id)).toEqual(report.run!.stopped_tasks)
    expect(stopped.length).toBeGreaterThan(0)
    for (const t of report.tasks) {
      expect(t.n % 10).toBe(0)
      if (t.stopped_early) {
        expect({ task: t.task_id, narrow: wilsonWidth(t.k, t.n) <= 0.25, early: t.n < 200 }).toEqual({ task: t.task_id, narrow: true, early: true })
      }
    }
    expect(report.expected_attempts).toBe(report.tasks.reduce((total, t) => total + t.n, 0))
    const text = forge(['stats', '--run-id', report.run_id], stack.env)
    expect(text.stdout).toMatch(/\d+\/\d+\*/)
    expect(text.stdout).toMatch(/^\* stopped early: the Wilson interval reached the requested width \(≤ 0\.25\)/m)
  })

  it('prints one report per run for several runs, each suite apart', () => {
    const runs = JSON.parse(forge(['runs', 'list', '--json', '--limit', '2'], stack.env).stdout) as { run_id: string }[]
    const r = forge(['stats', '--run-id', runs[0]!.run_id, '--run-id', runs[1]!.run_id, '--json'], stack.env)
    expect(r.status).toBe(0)
    const parsed = JSON.parse(r.stdout) as RunStats[]
    expect(parsed.map((s) => s.run_id)).toEqual([runs[0]!.run_id, runs[1]!.run_id])
    expect(parsed.every((s) => s.suites.length === 1 && s.suite_rate === s.suites[0]!.success.rate)).toBe(true)
  })
})
