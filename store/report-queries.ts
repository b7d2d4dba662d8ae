/**
 * The reads behind `forge report`, `forge trace` and `forge ui`. Everything a report shows about
 * many attempts is aggregated here, in ClickHouse (histogram bins, fault counts, agreement tables,
 * pages of attempts); nothing reads a whole run into memory. All reads use FINAL.
 */
import { StoredTrace, type Judgement } from '../core/contracts/index.js'
import type { StoreReader } from './clickhouse.js'
import { rowToJudgement, type JudgementRow } from './grading-converters.js'

const num = (value: string | number | null | undefined): number => Number(value ?? 0)

/** Models an run's attempts used, with how many attempts each ('' = not recorded). */
export async function runModels(reader: StoreReader, runId: string): Promise<{ model: string; n: number }[]> {
  const rows = await reader.query<{ model: string; n: string | number }>(
    'SELECT model, count() AS n FROM attempts FINAL WHERE run_id = {run:String} GROUP BY model ORDER BY n DESC, model',
    { run: runId },
  )
  return rows.map((r) => ({ model: r.model, n: num(r.n) }))
}

/** Attempts per log-scale bin: bin b holds values in [10^(b/steps), 10^((b+1)/steps)); `zero` counts values ≤ 0; nulls are not counted. */
export interface LogBinCount {
  bin: number
  n: number
}

export interface LogHistogramRows {
  /** bins per decade */
  steps: number
  bins: LogBinCount[]
  zero: number
  /** values that were null (e.g. an unpriced attempt's cost) */
  missing: number
}

async function logHistogram(reader: StoreReader, runId: string, column: 'latency_ms' | 'cost_usd', steps: number): Promise<LogHistogramRows> {
  const rows = await reader.query<{ bin: string | number | null; n: string | number; zero: string | number; missing: string | number }>(
    `SELECT if(isNull(${column}) OR ${column} <= 0, NULL, toInt32(floor(log10(${column}) * {steps:UInt8}))) AS bin,
       count() AS n, countIf(${column} <= 0) AS zero, countIf(isNull(${column})) AS missing
     FROM attempts FINAL WHERE run_id = {run:String}
     GROUP BY bin ORDER BY bin`,
    { run: runId, steps },
  )
  let zero = 0
  let missing = 0
  const bins: LogBinCount[] = []
  for (const row of rows) {
    if (row.bin === null) {
      zero += num(row.zero)
      missing += num(row.missing)
    } else bins.push({ bin: num(row.bin), n: num(row.n) })
  }
  return { steps, bins, zero, missing }
}

/** Latency of a run's attempts in log-scale bins (4 per decade). */
export function latencyHistogram(reader: StoreReader, runId: string): Promise<LogHistogramRows> {
  return logHistogram(reader, runId, 'latency_ms', 4)
}

/** Cost of a run's attempts in log-scale bins (4 per decade); unpriced attempts counted as missing. */
export function costHistogram(reader: StoreReader, runId: string): Promise<LogHistogramRows> {
  return logHistogram(reader, runId, 'cost_usd', 4)
}

/** Attempts by how many injected faults their tool calls met: n, passed, and the fault-free attempts as faults = 0. */
export interface FaultCountRow {
  faults: number
  n: number
  k: number
}

export async function attemptsByFaultCount(reader: StoreReader, runId: string): Promise<FaultCountRow[]> {
  const rows = await reader.query<{ faults: string | number; n: string | number; k: string | number }>(
    `SELECT ifNull(f.faults, 0) AS faults, count() AS n, countIf(a.outcome = 'pass') AS k
     FROM (SELECT attempt_uid, outcome FROM attempts FINAL WHERE run_id = {run:String}) AS a
     LEFT JOIN (
       SELECT attempt_uid, countIf(injected_fault != '') AS faults FROM tool_calls FINAL
       WHERE run_id = {run:String} GROUP BY attempt_uid
     ) AS f ON f.attempt_uid = a.attempt_uid
     GROUP BY faults ORDER BY faults
     SETTINGS join_use_nulls = 1`,
    { run: runId },
  )
  return rows.map((r) => ({ faults: num(r.faults), n: num(r.n), k: num(r.k) }))
}

/** Per injected fault kind: calls it hit, attempts it hit, and how many of those attempts passed. */
export interface FaultKindRow {
  fault: string
  calls: number
  attempts: number
  recovered: number
}

export async function faultKinds(reader: StoreReader, runId: string): Promise<FaultKindRow[]> {
  const rows = await reader.query<{ fault: string; calls: string | number; attempts: string | number; recovered: string | number }>(
    `SELECT f.fault AS fault, sum(f.calls) AS calls, count() AS attempts, countIf(a.outcome = 'pass') AS recovered
     FROM (
       SELECT attempt_uid, injected_fault AS fault, count() AS calls FROM tool_calls FINAL
       WHERE run_id = {run:String} AND injected_fault != '' GROUP BY attempt_uid, fault
     ) AS f
     INNER JOIN (SELECT attempt_uid, outcome FROM attempts FINAL WHERE run_id = {run:String}) AS a ON a.attempt_uid = f.attempt_uid
     GROUP BY fault ORDER BY attempts DESC, fault`,
    { run: runId },
  )
  return rows.map((r) => ({ fault: r.fault, calls: num(r.calls), attempts: num(r.attempts), recovered: num(r.recovered) }))
}

/**
 * Judge agreement counts of a run at a grading version, aggregated in ClickHouse: per attempt, the
 * programmatic verdict (every non-judge grade passed; -1 when it has none), the tier-0 judge graders'
 * verdict (-1 when none judged) and the `correctness` judge metric (-1 when not scored), with counts.
 * Same semantics as `agreementRows` + app/judge-agreement, without reading the attempts.
 */
export interface AgreementCountRow {
  programmatic: -1 | 0 | 1
  judge_grader: -1 | 0 | 1
  correctness: -1 | 0 | 1
  n: number
}

export async function agreementCounts(reader: StoreReader, runId: string, gradingVersion: number): Promise<AgreementCountRow[]> {
  const table = gradingVersion === 1 ? 'attempts' : 'attempt_grades'
  const rows = await reader.query<{ programmatic: string | number; judge_grader: string | number; correctness: string | number | null; n: string | number }>(
    `SELECT programmatic, judge_grader, ifNull(m.passed, -1) AS correctness, count() AS n FROM (
       SELECT attempt_uid,
         JSONExtractArrayRaw(grades) AS all_grades,
         arrayFilter(g -> NOT JSONHas(g, 'judge'), all_grades) AS plain,
         arrayFilter(g -> JSONHas(g, 'judge') AND JSONExtractString(g, 'judge', 'model') != '', all_grades) AS judged,
         if(length(plain) = 0, -1, toInt8(arrayAll(g -> JSONExtractBool(g, 'passed'), plain))) AS programmatic,
         if(length(judged) = 0, -1, toInt8(arrayAll(g -> JSONExtractBool(g, 'passed'), judged))) AS judge_grader
       FROM ${table} FINAL WHERE run_id = {run:String} AND grading_version = {v:UInt32}
     ) AS a
     LEFT JOIN (
       SELECT attempt_uid, toInt8(argMax(passed, grading_version)) AS passed FROM metrics
       WHERE run_id = {run:String} AND grading_version <= {v:UInt32} AND metric = 'correctness' AND status = 'scored'
       GROUP BY attempt_uid
     ) AS m ON m.attempt_uid = a.attempt_uid
     GROUP BY programmatic, judge_grader, correctness
     ORDER BY programmatic, judge_grader, correctness
     SETTINGS join_use_nulls = 1`,
    { run: runId, v: gradingVersion },
  )
  const flag = (value: string | number | null): -1 | 0 | 1 => (value === null ? -1 : (Math.max(-1, Math.min(1, num(value))) as -1 | 0 | 1))
  return rows.map((r) => ({ programmatic: flag(r.programmatic), judge_grader: flag(r.judge_grader), correctness: flag(r.correctness), n: num(r.n) }))
}

/** One attempt as a list shows it. */
export interface AttemptListEntry {
  attempt_uid: string
  config_id: string
  task_id: string
  attempt: number
  outcome: string
  validity: string
  failure_bucket: string
  latency_ms: number
  cost_usd: number | null
  tool_call_count: number
  input_tokens: number
  output_tokens: number
  model: string
  worker_id: string
  error: string
}

type AttemptListRow = Omit<AttemptListEntry, 'attempt' | 'latency_ms' | 'cost_usd' | 'tool_call_count' | 'input_tokens' | 'output_tokens'> &
  Record<'attempt' | 'latency_ms' | 'tool_call_count' | 'input_tokens' | 'output_tokens', string | number> & { cost_usd: string | number | null }

const LIST_COLUMNS =
  "attempt_uid, config_id, task_id, attempt, outcome, validity, failure_bucket, latency_ms, cost_usd, tool_call_count, input_tokens, output_tokens, model, worker_id, substring(error, 1, 300) AS error"

function toListEntry(r: AttemptListRow): AttemptListEntry {
  return {
    ...r,
    attempt: num(r.attempt),
    latency_ms: num(r.latency_ms),
    cost_usd: r.cost_usd === null ? null : num(r.cost_usd),
    tool_call_count: num(r.tool_call_count),
    input_tokens: num(r.input_tokens),
    output_tokens: num(r.output_tokens),
  }
}

/** A run's attempts that did not pass, in task and attempt order, at most `limit`; and how many there are. */
export async function failedAttempts(reader: StoreReader, runId: string, limit: number): Promise<{ total: number; attempts: AttemptListEntry[] }> {
  const [rows, count] = await Promise.all([
    reader.query<AttemptListRow>(
      `SELECT ${LIST_COLUMNS} FROM attempts FINAL WHERE run_id = {run:String} AND outcome != 'pass'
       ORDER BY task_id, attempt, config_id LIMIT {limit:UInt32}`,
      { run: runId, limit },
    ),
    reader.query<{ n: string | number }>("SELECT count() AS n FROM attempts FINAL WHERE run_id = {run:String} AND outcome != 'pass'", { run: runId }),
  ])
  return { total: num(count[0]?.n), attempts: rows.map(toListEntry) }
}

export type AttemptFilter = { outcome?: string; failure_bucket?: string }

/** Where a page of attempts starts: after this task and attempt (exclusive). */
export interface AttemptCursor {
  task_id: string
  attempt: number
}

/**
 * One page of a run's attempts (of one task, or of all), keyset-paged on the table's sort key
 * (task, attempt): the page after `after`, `limit` long, filters applied in SQL. Fast at any
 * depth, unlike OFFSET, and never more than `limit` rows in memory.
 */
export async function attemptPage(
  reader: StoreReader,
  runId: string,
  opts: { taskId?: string; after?: AttemptCursor; limit: number; filter?: AttemptFilter },
): Promise<AttemptListEntry[]> {
  const where = [
    'run_id = {run:String}',
    ...(opts.taskId !== undefined ? ['task_id = {task:String}'] : []),
    ...(opts.after !== undefined ? ['(task_id, attempt) > ({after_task:String}, {after_attempt:UInt32})'] : []),
    ...(opts.filter?.outcome ? ['outcome = {outcome:String}'] : []),
    ...(opts.filter?.failure_bucket ? ['failure_bucket = {bucket:String}'] : []),
  ]
  const rows = await reader.query<AttemptListRow>(
    `SELECT ${LIST_COLUMNS} FROM attempts FINAL WHERE ${where.join(' AND ')} ORDER BY task_id, attempt, config_id LIMIT {limit:UInt32}`,
    {
      run: runId,
      limit: opts.limit,
      ...(opts.taskId !== undefined ? { task: opts.taskId } : {}),
      ...(opts.after !== undefined ? { after_task: opts.after.task_id, after_attempt: opts.after.attempt } : {}),
      ...(opts.filter?.outcome ? { outcome: opts.filter.outcome } : {}),
      ...(opts.filter?.failure_bucket ? { bucket: opts.filter.failure_bucket } : {}),
    },
  )
  return rows.map(toListEntry)
}

/** How many attempts of a run (of one task, or all) match a filter. */
export async function countMatching(reader: StoreReader, runId: string, opts: { taskId?: string; filter?: AttemptFilter }): Promise<number> {
  const where = [
    'run_id = {run:String}',
    ...(opts.taskId !== undefined ? ['task_id = {task:String}'] : []),
    ...(opts.filter?.outcome ? ['outcome = {outcome:String}'] : []),
    ...(opts.filter?.failure_bucket ? ['failure_bucket = {bucket:String}'] : []),
  ]
  const rows = await reader.query<{ n: string | number }>(`SELECT count() AS n FROM attempts FINAL WHERE ${where.join(' AND ')}`, {
    run: runId,
    ...(opts.taskId !== undefined ? { task: opts.taskId } : {}),
    ...(opts.filter?.outcome ? { outcome: opts.filter.outcome } : {}),
    ...(opts.filter?.failure_bucket ? { bucket: opts.filter.failure_bucket } : {}),
  })
  return num(rows[0]?.n)
}

export interface RunPageEntry {
  run_id: string
  suite: string
  adapter: string
  status: string
  started_at: number
  planned: number
  stored: number
  passed: number
  harness_errors: number
}

/** One page of runs, newest first, with stored, passed and harness-error counts aggregated for those runs only. */
export async function runsPage(reader: StoreReader, opts: { offset: number; limit: number }): Promise<{ total: number; runs: RunPageEntry[] }> {
  const [rows, count] = await Promise.all([
    reader.query<Record<string, string | number>>(
      `SELECT r.run_id AS run_id, r.suite AS suite, r.adapter AS adapter, r.status AS status, toUnixTimestamp64Milli(r.started_at) AS started,
         r.attempts * r.task_count AS planned, ifNull(a.n, 0) AS stored, ifNull(a.k, 0) AS passed, ifNull(a.h, 0) AS harness_errors
       FROM (SELECT * FROM runs FINAL ORDER BY started_at DESC, run_id LIMIT {limit:UInt32} OFFSET {offset:UInt32}) AS r
       LEFT JOIN (
         SELECT run_id, count() AS n, countIf(outcome = 'pass') AS k, countIf(failure_bucket = 'harness_error') AS h FROM attempts FINAL
         WHERE run_id IN (SELECT run_id FROM runs FINAL ORDER BY started_at DESC, run_id LIMIT {limit:UInt32} OFFSET {offset:UInt32})
         GROUP BY run_id
       ) AS a ON a.run_id = r.run_id
       ORDER BY r.started_at DESC, r.run_id
       SETTINGS join_use_nulls = 1`,
      opts,
    ),
    reader.query<{ n: string | number }>('SELECT count() AS n FROM runs FINAL'),
  ])
  return {
    total: num(count[0]?.n),
    runs: rows.map((r) => ({
      run_id: String(r['run_id']),
      suite: String(r['suite']),
      adapter: String(r['adapter']),
      status: String(r['status']),
      started_at: num(r['started']),
      planned: num(r['planned']),
      stored: num(r['stored']),
      passed: num(r['passed']),
      harness_errors: num(r['harness_errors']),
    })),
  }
}

/** The run id an attempt uid starts with (`run_id/config_id/task_id/attempt`): it lets a lookup by uid use the tables' sort key. */
const runOf = (attemptUid: string): string => attemptUid.split('/')[0] ?? ''

/** One stored attempt's row, by uid. */
export async function getAttemptEntry(reader: StoreReader, attemptUid: string): Promise<AttemptListEntry | undefined> {
  const rows = await reader.query<AttemptListRow>(`SELECT ${LIST_COLUMNS} FROM attempts FINAL WHERE run_id = {run:String} AND attempt_uid = {uid:String} LIMIT 1`, {
    run: runOf(attemptUid),
    uid: attemptUid,
  })
  return rows[0] ? toListEntry(rows[0]) : undefined
}

/** An attempt's stored trace by uid, read through the sort key (run, uid): fast in a run of any size. */
export async function getTraceByUid(reader: StoreReader, attemptUid: string): Promise<StoredTrace | undefined> {
  const rows = await reader.query<{ stored: string }>('SELECT stored FROM traces FINAL WHERE run_id = {run:String} AND attempt_uid = {uid:String} LIMIT 1', {
    run: runOf(attemptUid),
    uid: attemptUid,
  })
  return rows[0] ? StoredTrace.parse(JSON.parse(rows[0].stored)) : undefined
}

/** An attempt's judgement at its newest grading version, read through the sort key. */
export async function getJudgementByUid(reader: StoreReader, attemptUid: string): Promise<Judgement | undefined> {
  const rows = await reader.query<JudgementRow>(
    'SELECT * FROM judgements FINAL WHERE run_id = {run:String} AND attempt_uid = {uid:String} ORDER BY grading_version DESC LIMIT 1',
    { run: runOf(attemptUid), uid: attemptUid },
  )
  return rows[0] ? rowToJudgement(rows[0]) : undefined
}

/** The attempts matching run, task and attempt number (one per config of the run). */
export async function findAttempts(reader: StoreReader, runId: string, taskId: string, attempt: number): Promise<AttemptListEntry[]> {
  const rows = await reader.query<AttemptListRow>(
    `SELECT ${LIST_COLUMNS} FROM attempts FINAL WHERE run_id = {run:String} AND task_id = {task:String} AND attempt = {attempt:UInt32} ORDER BY config_id`,
    { run: runId, task: taskId, attempt },
  )
  return rows.map(toListEntry)
}

/** Tasks of a run, for error messages and the UI (aggregated, never the attempts). */
export async function runTaskIds(reader: StoreReader, runId: string): Promise<string[]> {
  const rows = await reader.query<{ task_id: string }>('SELECT DISTINCT task_id FROM attempts FINAL WHERE run_id = {run:String} ORDER BY task_id', { run: runId })
  return rows.map((r) => r.task_id)
}

/** When an attempt started (ms since the epoch) — the stored trace's span times are relative to it. */
export async function attemptStartedAt(reader: StoreReader, runId: string, attemptUids: readonly string[]): Promise<Map<string, number>> {
  if (attemptUids.length === 0) return new Map()
  const rows = await reader.query<{ attempt_uid: string; started: string | number }>(
    'SELECT attempt_uid, toUnixTimestamp64Milli(started_at) AS started FROM attempts FINAL WHERE run_id = {run:String} AND has({uids:Array(String)}, attempt_uid)',
    { run: runId, uids: attemptUids },
  )
  return new Map(rows.map((r) => [r.attempt_uid, num(r.started)]))
}
