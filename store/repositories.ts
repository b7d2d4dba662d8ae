/** One place per table for writes and the read queries the product needs; all reads use FINAL. */
import type { ClickHouseClient } from '@clickhouse/client'
import type { Measure, MeasureRanks, ToolSequenceCount } from '../core/compare.js'
import { RunRecord, type AttemptResult, type BaselineRecord, type RunRecordInput } from '../core/contracts/index.js'
import { LATENCY_QUANTILES, type AttemptMeasurement, type SuiteAggregate, type TaskAggregate } from '../core/report.js'
import type { StoreReader } from './clickhouse.js'
import { attemptToRow, baselineToRow, rowToBaseline, rowToRun, runToRow, toolCallsToRows, type BaselineRow, type RunRow } from './converters.js'

/** Inserts a batch of attempts and their tool calls; re-inserting an attempt replaces it (ReplacingMergeTree). */
export async function insertAttempts(client: ClickHouseClient, attempts: AttemptResult[], ingestedAt: number): Promise<void> {
  if (attempts.length === 0) return
  await client.insert({ table: 'attempts', values: attempts.map((a) => attemptToRow(a, ingestedAt)), format: 'JSONEachRow' })
  const calls = attempts.flatMap((a) => toolCallsToRows(a, ingestedAt))
  if (calls.length > 0) await client.insert({ table: 'tool_calls', values: calls, format: 'JSONEachRow' })
}

export async function insertRuns(client: ClickHouseClient, runs: RunRecordInput[]): Promise<void> {
  if (runs.length === 0) return
  // parsed: fields a record was written without get their defaults
  await client.insert({ table: 'runs', values: runs.map((run) => runToRow(RunRecord.parse(run))), format: 'JSONEachRow' })
}

export interface RunListEntry extends RunRecord {
  stored_attempts: number
  passed: number
}

export async function listRuns(reader: StoreReader, limit: number): Promise<RunListEntry[]> {
  const rows = await reader.query<RunRow & { stored_attempts: string | number; passed: string | number }>(
    `SELECT r.*, ifNull(a.n, 0) AS stored_attempts, ifNull(a.k, 0) AS passed
     FROM (SELECT * FROM runs FINAL) AS r
     LEFT JOIN (SELECT run_id, count() AS n, countIf(outcome = 'pass') AS k FROM attempts FINAL GROUP BY run_id) AS a
       ON a.run_id = r.run_id
     ORDER BY r.started_at DESC
     LIMIT {limit:UInt32}`,
    { limit },
  )
  return rows.map((row) => ({ ...rowToRun(row), stored_attempts: Number(row.stored_attempts), passed: Number(row.passed) }))
}

export async function getRun(reader: StoreReader, runId: string): Promise<RunRecord | undefined> {
  const rows = await reader.query<RunRow>('SELECT * FROM runs FINAL WHERE run_id = {run:String}', { run: runId })
  return rows[0] ? rowToRun(rows[0]) : undefined
}

export async function countAttempts(reader: StoreReader, runId: string): Promise<number> {
  const rows = await reader.query<{ n: string | number }>('SELECT count() AS n FROM attempts FINAL WHERE run_id = {run:String}', { run: runId })
  return Number(rows[0]?.n ?? 0)
}

/** One row per (task, outcome, bucket, validity) with its count: everything run statistics need. */
export interface OutcomeCountRow {
  task_id: string
  outcome: string
  failure_bucket: string
  validity: string
  n: number
}

export async function insertBaselines(client: ClickHouseClient, baselines: BaselineRecord[]): Promise<void> {
  if (baselines.length === 0) return
  await client.insert({ table: 'baselines', values: baselines.map(baselineToRow), format: 'JSONEachRow' })
}

const num = (value: string | number): number => Number(value)

interface AggregateRow {
  suite: string
  task_id: string
  n: string | number
  k: string | number
  latency: number[]
  sum_tool_calls: string | number
  sum_input_tokens: string | number
  sum_output_tokens: string | number
  priced: string | number
  sum_cost_usd: number
}

/** The aggregates of a group of attempts, as `AggregateRow` names them (runAggregates and runFigures select them). */
const AGGREGATE_COLUMNS = `count() AS n, countIf(outcome = 'pass') AS k,
       quantilesExactInclusive(${LATENCY_QUANTILES.join(', ')})(latency_ms) AS latency,
       sum(tool_call_count) AS sum_tool_calls, sum(input_tokens) AS sum_input_tokens, sum(output_tokens) AS sum_output_tokens,
       count(cost_usd) AS priced, sum(ifNull(cost_usd, 0)) AS sum_cost_usd`

/**
 * Per-task and per-suite aggregates of a run in one scan (GROUPING SETS): counts, latency
 * percentiles (quantileExactInclusive — the same type-7 interpolation as core/stats `quantile`),
 * tool-call, token and cost sums. core/report `aggregateAttempts` computes the same from raw rows.
 */
export async function runAggregates(reader: StoreReader, runId: string): Promise<{ tasks: TaskAggregate[]; suites: SuiteAggregate[] }> {
  const rows = await reader.query<AggregateRow>(
    `SELECT suite, task_id, ${AGGREGATE_COLUMNS}
     FROM attempts FINAL WHERE run_id = {run:String}
     GROUP BY GROUPING SETS ((suite, task_id), (suite))
     ORDER BY suite, task_id`,
    { run: runId },
  )
  const tasks: TaskAggregate[] = []
  const suites: SuiteAggregate[] = []
  for (const row of rows) {
    // task ids are never empty, so the suite-level grouping set is the row with task_id ''
    if (row.task_id === '') suites.push(aggregateOf(row))
    else tasks.push({ ...aggregateOf(row), task_id: row.task_id })
  }
  return { tasks, suites }
}

function aggregateOf(row: AggregateRow): SuiteAggregate {
  const n = num(row.n)
  const [p50, p90, p99] = row.latency
  return {
    suite: row.suite,
    n,
    k: num(row.k),
    latency_ms: n === 0 || p50 === undefined || p90 === undefined || p99 === undefined ? null : { p50, p90, p99 },
    tool_calls: num(row.sum_tool_calls),
    input_tokens: num(row.sum_input_tokens),
    output_tokens: num(row.sum_output_tokens),
    priced: num(row.priced),
    cost_usd: Number(row.sum_cost_usd),
  }
}

/**
 * A run's outcome counts and `runAggregates` in one scan of its attempts (a third grouping set): what
 * `forge run`'s report and `forge stats` read. chDB runs one query at a time, and each reads the run's
 * attempts with FINAL: the two queries (~18 and ~24 ms after a 1,000-attempt run) are one of ~22
 * (issue 15). The sets are told apart by `grouping(task_id, outcome)` (a bit set for each column a set
 * does not group by): 0 the outcome counts, 1 a task, 3 a suite.
 */
export async function runFigures(reader: StoreReader, runId: string): Promise<{ outcomes: OutcomeCountRow[]; tasks: TaskAggregate[]; suites: SuiteAggregate[] }> {
  const rows = await reader.query<AggregateRow & { outcome: string; failure_bucket: string; validity: string; grouping_set: string | number }>(
    `SELECT suite, task_id, outcome, failure_bucket, validity, grouping(task_id, outcome) AS grouping_set, ${AGGREGATE_COLUMNS}
     FROM attempts FINAL WHERE run_id = {run:String}
     GROUP BY GROUPING SETS ((suite, task_id), (suite), (task_id, outcome, failure_bucket, validity))
     ORDER BY grouping_set, suite, task_id, outcome, failure_bucket, validity`,
    { run: runId },
  )
  const outcomes: OutcomeCountRow[] = []
  const tasks: TaskAggregate[] = []
  const suites: SuiteAggregate[] = []
  for (const row of rows) {
    const set = num(row.grouping_set)
    if (set === 0) outcomes.push({ task_id: row.task_id, outcome: row.outcome, failure_bucket: row.failure_bucket, validity: row.validity, n: num(row.n) })
    else if (set === 1) tasks.push({ ...aggregateOf(row), task_id: row.task_id })
    else suites.push(aggregateOf(row))
  }
  return { outcomes, tasks, suites }
}

/** The per-attempt measurements of a run (what runAggregates summarizes), for checks and exports. */
export async function attemptMeasurements(reader: StoreReader, runId: string): Promise<AttemptMeasurement[]> {
  const rows = await reader.query<AttemptMeasurement & { tool_call_count: string | number; input_tokens: string | number; output_tokens: string | number }>(
    `SELECT suite, task_id, outcome, latency_ms, tool_call_count, input_tokens, output_tokens, cost_usd
     FROM attempts FINAL WHERE run_id = {run:String} ORDER BY task_id, attempt`,
    { run: runId },
  )
  return rows.map((r) => ({
    ...r,
    latency_ms: Number(r.latency_ms),
    tool_call_count: num(r.tool_call_count),
    input_tokens: num(r.input_tokens),
    output_tokens: num(r.output_tokens),
    cost_usd: r.cost_usd === null ? null : Number(r.cost_usd),
  }))
}

/** How many attempts of each task called each exact sequence of tools (attempts without calls are absent). */
export async function toolSequences(reader: StoreReader, runId: string): Promise<ToolSequenceCount[]> {
  const rows = await reader.query<{ task_id: string; sequence: string[]; n: string | number }>(
    `SELECT task_id, sequence, count() AS n FROM (
       SELECT task_id, attempt_uid, arrayMap(c -> c.2, arraySort(groupArray((call_index, toString(name))))) AS sequence
       FROM tool_calls FINAL WHERE run_id = {run:String}
       GROUP BY task_id, attempt_uid)
     GROUP BY task_id, sequence
     ORDER BY task_id, n DESC, sequence`,
    { run: runId },
  )
  return rows.map((r) => ({ task_id: r.task_id, sequence: r.sequence, n: num(r.n) }))
}

/**
 * The rank sums behind the efficiency tests of `forge compare`: per task of both runs and per
 * measure (latency, tool calls, cost of priced attempts), every attempt's value ranked over both runs
 * (tied values share their mean rank) — the size of each run's sample, run b's rank sum and the tie
 * term Σ(t³ − t). Computed in ClickHouse over every attempt of the two runs: only one row per task
 * and measure leaves the store, however many attempts there are. core/compare `measureRanks` computes
 * the same from raw attempts. The two runs may be the same run.
 */
export async function attemptRanks(reader: StoreReader, runA: string, runB: string): Promise<MeasureRanks[]> {
  const rows = await reader.query<{ suite: string; task_id: string; measure: Measure; n1: string | number; n2: string | number; rank_sum_2: number; tie_term: number }>(
    `WITH measured AS (
       SELECT suite, task_id, side, m.1 AS measure, m.2 AS value
       FROM (
         SELECT suite, task_id, 0 AS side, latency_ms, tool_call_count, cost_usd FROM attempts FINAL WHERE run_id = {a:String}
         UNION ALL
         SELECT suite, task_id, 1 AS side, latency_ms, tool_call_count, cost_usd FROM attempts FINAL WHERE run_id = {b:String}
       )
       ARRAY JOIN [('latency_ms', toNullable(latency_ms)), ('tool_calls', toNullable(toFloat64(tool_call_count))), ('cost_usd', cost_usd)] AS m
       WHERE value IS NOT NULL
     ),
     tied AS (
       SELECT suite, task_id, measure, value, countIf(side = 0) AS in_a, countIf(side = 1) AS in_b
       FROM measured GROUP BY suite, task_id, measure, value
     ),
     ranked AS (
       SELECT suite, task_id, measure, in_a, in_b, toFloat64(in_a + in_b) AS t,
         sum(in_a + in_b) OVER (PARTITION BY suite, task_id, measure ORDER BY value ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS through
       FROM tied
     )
     SELECT suite, task_id, measure, sum(in_a) AS n1, sum(in_b) AS n2,
       sum(in_b * (through - (t - 1) / 2)) AS rank_sum_2, sum(t * t * t - t) AS tie_term
     FROM ranked
     GROUP BY suite, task_id, measure
     HAVING n1 > 0 AND n2 > 0
     ORDER BY suite, task_id, measure`,
    { a: runA, b: runB },
  )
  return rows.map((r) => ({
    suite: r.suite,
    task_id: r.task_id,
    measure: r.measure,
    ranks: { n1: num(r.n1), n2: num(r.n2), rank_sum_2: Number(r.rank_sum_2), tie_term: Number(r.tie_term) },
  }))
}

/** Mean tokens per attempt of earlier attempts of a suite with a model, for cost estimates; undefined when there are none. */
export async function observedUsage(
  reader: StoreReader,
  suite: string,
  model: string,
): Promise<{ attempts: number; input_tokens: number; output_tokens: number } | undefined> {
  const rows = await reader.query<{ n: string | number; mean_input: number | null; mean_output: number | null }>(
    `SELECT count() AS n, avg(input_tokens) AS mean_input, avg(output_tokens) AS mean_output
     FROM attempts FINAL WHERE suite = {suite:String} AND model = {model:String}`,
    { suite, model },
  )
  const row = rows[0]
  if (!row || num(row.n) === 0) return undefined
  return { attempts: num(row.n), input_tokens: Number(row.mean_input), output_tokens: Number(row.mean_output) }
}

/** The next version number for a baseline name (1 for a new name). */
export async function nextBaselineVersion(reader: StoreReader, name: string): Promise<number> {
  const rows = await reader.query<{ v: string | number }>('SELECT max(version) AS v FROM baselines FINAL WHERE name = {name:String}', { name })
  return num(rows[0]?.v ?? 0) + 1
}

export async function listBaselines(reader: StoreReader, opts: { name?: string; limit: number }): Promise<BaselineRecord[]> {
  const rows = await reader.query<BaselineRow>(
    `SELECT * FROM baselines FINAL ${opts.name === undefined ? '' : 'WHERE name = {name:String}'}
     ORDER BY created_at DESC, name, version DESC LIMIT {limit:UInt32}`,
    { ...(opts.name === undefined ? {} : { name: opts.name }), limit: opts.limit },
  )
  return rows.map(rowToBaseline)
}

/**
 * Resolves a baseline reference: `latest` (the newest baseline, of `suite` when given), `name`
 * (its newest version), `name@version`, or a commit hash prefix (the newest baseline of that commit).
 */
export async function findBaseline(reader: StoreReader, ref: string, suite?: string): Promise<BaselineRecord | undefined> {
  const one = async (where: string, params: Record<string, unknown>): Promise<BaselineRecord | undefined> => {
    const rows = await reader.query<BaselineRow>(`SELECT * FROM baselines FINAL WHERE ${where} ORDER BY created_at DESC, version DESC LIMIT 1`, params)
    return rows[0] ? rowToBaseline(rows[0]) : undefined
  }
  if (ref === 'latest') return suite === undefined ? one('1', {}) : one('suite = {suite:String}', { suite })
  const at = /^(.+)@(\d+)$/.exec(ref)
  if (at) return one('name = {name:String} AND version = {version:UInt32}', { name: at[1], version: Number(at[2]) })
  return (
    (await one('name = {name:String}', { name: ref })) ??
    (/^[0-9a-f]{4,40}$/i.test(ref) ? one('startsWith(commit_hash, {commit:String})', { commit: ref.toLowerCase() }) : undefined)
  )
}
