/**
 * The SQL aggregation (store/repositories.ts, in chDB) and the pure core functions
 * (core/report.ts) give the same numbers on the same attempts: counts, latency percentiles,
 * tool-call, token and cost sums, and every figure computed from them.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { getRunStats } from '../../app/stats.js'
import type { ToolSequenceCount } from '../../core/compare.js'
import type { AttemptResult } from '../../core/contracts/index.js'
import { createRng, pick } from '../../core/random.js'
import { aggregateAttempts, suiteFigures, type AttemptMeasurement } from '../../core/report.js'
import { directReader, openClickHouse, queryRows, type ClickHouseClient, type StoreReader } from '../../store/clickhouse.js'
import { migrate } from '../../store/migrations.js'
import { attemptMeasurements, insertAttempts, insertRuns, runAggregates, runFigures, toolSequences } from '../../store/repositories.js'

let dir: string
let client: ClickHouseClient
let reader: StoreReader

const RUN = 'agree'
const TOOLS = ['kv_get', 'echo', 'add', 'search']

/** Seeded synthetic attempts over two suites: varied outcomes, latencies, tools, tokens, and some unpriced. */
function syntheticAttempts(): AttemptResult[] {
  const rng = createRng(20261130)
  const attempts: AttemptResult[] = []
  const tasks = [
    ...['alpha', 'beta', 'gamma', 'delta'].map((t) => ({ suite: 'smoke', task: t })),
    ...['one', 'two', 'three'].map((t) => ({ suite: 'toy_math', task: t })),
  ]
  for (const [t, { suite, task }] of tasks.entries()) {
    const n = 5 + t * 7
    const skill = 0.15 + 0.12 * t
    for (let i = 0; i < n; i++) {
      const calls = Math.floor(rng() * 4)
      const sequence = Array.from({ length: calls }, () => pick(rng, TOOLS))
      const unpriced = task === 'gamma' && i % 3 === 0
      attempts.push({
        attempt_uid: `${RUN}/c0/${task}/${i}`,
        run_id: RUN,
        config_id: 'c0',
        suite,
        task_id: task,
        attempt: i,
        adapter: 'mock',
        outcome: rng() < skill ? 'pass' : pick(rng, ['fail', 'partial', 'violation']),
        // a few of each validity and bucket: the outcome counts group by them
        validity: i % 11 === 0 ? 'degraded' : 'valid',
        failure_bucket: i % 5 === 1 ? 'tool_error' : null,
        budget_limit: null,
        grades: [],
        invariants: [],
        instruction: 'x',
        output: 'y',
        self_report: '',
        error: '',
        cost_usd: unpriced ? null : Math.round(rng() * 1e6) / 1e9,
        latency_ms: Math.round(rng() * 5000) / 10,
        tool_call_count: calls,
        input_tokens: Math.floor(rng() * 2000),
        output_tokens: Math.floor(rng() * 300),
        model: 'm',
        decoding: {},
        price_table_version: 'v1 (2026-11-30)',
        seed: String(i),
        worker_id: 'w',
        started_at: 1_764_470_000_000 + i,
        finished_at: 1_764_470_000_100 + i,
        tool_calls: sequence.map((name, index) => ({ index, name, args: {}, retry_index: 0, started_ms: index, duration_ms: 1 })),
      })
    }
  }
  return attempts
}

const attempts = syntheticAttempts()

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'forge-stats-sql-'))
  client = await openClickHouse({ kind: 'embedded', path: dir })
  await migrate(client)
  await insertAttempts(client, attempts, 1_764_470_001_000)
  // a redelivered batch: ReplacingMergeTree + FINAL must count every attempt once
  await insertAttempts(client, attempts.slice(0, 9), 1_764_470_002_000)
  await insertRuns(client, [
    {
      run_id: RUN, suite: 'smoke', suite_path: '/s', adapter: 'mock', config_id: 'c0', attempts: 5, task_count: 7, seed: 's',
      status: 'completed', started_at: 1_764_470_000_000, finished_at: 1_764_470_001_000, updated_at: 1_764_470_001_000,
      price_table_version: 'v1', price_table_date: '2026-11-30', suite_hash: 'h', judge_model: '', judge_prompt_version: '',
      stop_width: 0, stopped_tasks: [],
    },
  ])
  reader = directReader(client)
})
afterAll(async () => {
  await client?.close()
  rmSync(dir, { recursive: true, force: true })
})

/** Deep equality with numbers compared to 1e-9 relative (summation order differs between SQL and JS). */
function expectClose(actual: unknown, expected: unknown, path = '$'): void {
  if (typeof expected === 'number' && typeof actual === 'number') {
    const tolerance = Math.max(Math.abs(expected), 1) * 1e-9
    if (Math.abs(actual - expected) > tolerance) expect.fail(`${path}: ${actual} ≠ ${expected}`)
    return
  }
  if (Array.isArray(expected)) {
    expect(Array.isArray(actual), path).toBe(true)
    expect((actual as unknown[]).length, `${path}.length`).toBe(expected.length)
    expected.forEach((e, i) => expectClose((actual as unknown[])[i], e, `${path}[${i}]`))
    return
  }
  if (expected !== null && typeof expected === 'object') {
    expect(Object.keys(actual as object).sort(), `${path} keys`).toEqual(Object.keys(expected).sort())
    for (const [key, e] of Object.entries(expected)) expectClose((actual as Record<string, unknown>)[key], e, `${path}.${key}`)
    return
  }
  expect(actual, path).toEqual(expected)
}

describe('SQL aggregation agrees with core/report', () => {
  it('gives the same aggregates as core on the raw attempts', async () => {
    const sql = await runAggregates(reader, RUN)
    const core = aggregateAttempts(attempts as AttemptMeasurement[])
    expect(sql.tasks.map((t) => `${t.suite}/${t.task_id}`)).toEqual(core.tasks.map((t) => `${t.suite}/${t.task_id}`))
    expect(sql.tasks.reduce((total, t) => total + t.n, 0)).toBe(attempts.length)
    expectClose(sql, core)
    // the store's own rows, read back one by one, aggregate to the same
    expectClose(aggregateAttempts(await attemptMeasurements(reader, RUN)), core)
  })

  it('gives the same figures: rates, Wilson intervals, pass@k, pass^k, consistency, latency, cost', async () => {
    const sql = await runAggregates(reader, RUN)
    const core = aggregateAttempts(attempts as AttemptMeasurement[])
    const ks = [1, 2, 5, 10]
    const fromSql = suiteFigures(sql.tasks, sql.suites, ks)
    expectClose(fromSql, suiteFigures(core.tasks, core.suites, ks))
    // sanity: the two suites stay apart, unpriced attempts make gamma's cost unavailable
    expect(fromSql.map((s) => [s.suite, s.tasks.length])).toEqual([
      ['smoke', 4],
      ['toy_math', 3],
    ])
    const gamma = fromSql[0]!.tasks.find((t) => t.task_id === 'gamma')!
    expect(gamma.cost).toMatchObject({ total_usd: null, per_attempt_usd: null, per_success_usd: null })
    expect(gamma.cost.priced).toBeLessThan(gamma.n)
    expect(fromSql[0]!.cost.total_usd).toBeNull()
    expect(fromSql[1]!.cost.total_usd).not.toBeNull()
  })

  it('gives the outcome counts and the aggregates in one scan as they are counted apart', async () => {
    const figures = await runFigures(reader, RUN)
    const expected = new Map<string, number>()
    for (const a of attempts) {
      const key = JSON.stringify([a.task_id, a.outcome, a.failure_bucket ?? '', a.validity])
      expected.set(key, (expected.get(key) ?? 0) + 1)
    }
    expect(new Map(figures.outcomes.map((r) => [JSON.stringify([r.task_id, r.outcome, r.failure_bucket, r.validity]), r.n]))).toEqual(expected)
    // every grouping the data holds: several buckets and validities per task
    expect(new Set(figures.outcomes.map((r) => r.validity))).toEqual(new Set(['valid', 'degraded']))
    expect(new Set(figures.outcomes.map((r) => r.failure_bucket))).toEqual(new Set(['', 'tool_error']))
    const apart = await runAggregates(reader, RUN)
    expect({ tasks: figures.tasks, suites: figures.suites }).toEqual(apart)
    expect(figures.suites.map((s) => s.suite)).toEqual(['smoke', 'toy_math'])
  })

  it('counts the same tool sequences as the attempts hold', async () => {
    const expected = new Map<string, number>()
    for (const a of attempts) {
      if (a.tool_calls.length === 0) continue
      const key = JSON.stringify([a.task_id, a.tool_calls.map((c) => c.name)])
      expected.set(key, (expected.get(key) ?? 0) + 1)
    }
    const rows = await toolSequences(reader, RUN)
    const actual = new Map(rows.map((r: ToolSequenceCount) => [JSON.stringify([r.task_id, r.sequence]), r.n]))
    expect(actual).toEqual(expected)
  })

  it('reports each suite apart in the run statistics and no pooled headline', async () => {
    const stats = await getRunStats(reader, RUN, [1, 3])
    expect(stats.attempts).toBe(attempts.length)
    expect(stats.suites.map((s) => s.suite)).toEqual(['smoke', 'toy_math'])
    expect(stats.suite_rate).toBeNull()
    expect(stats.stamps).toEqual({ price_table_version: 'v1', price_table_date: '2026-11-30', suite_hash: 'h', judge_model: '', judge_prompt_version: '' })
  })

  it('keeps the embedded store writable after read-only queries, and refuses writes through them', async () => {
    await expect(reader.query('INSERT INTO baselines (name) VALUES (1)')).rejects.toThrow(/read-only/)
    await expect(reader.query('SELECT 1; DROP TABLE runs')).rejects.toThrow(/one statement/)
    expect(await reader.query("SELECT ';' AS semicolon -- a comment; not a statement")).toEqual([{ semicolon: ';' }])
    // chDB would keep a `readonly` setting for its whole session; the ingester must still insert after a read
    await insertAttempts(client, attempts.slice(0, 1), 1_764_470_003_000)
    const [row] = await queryRows<{ n: string | number }>(client, 'SELECT count() AS n FROM attempts FINAL')
    expect(Number(row!.n)).toBe(attempts.length)
  })
})
