/** One place per table for writes and the read queries the product needs; all reads use FINAL. */
import type { ClickHouseClient } from '@clickhouse/client'
import type { AttemptResult, RunRecord } from '../core/contracts.js'
import type { StoreReader } from './clickhouse.js'
import { attemptToRow, rowToRun, runToRow, toolCallsToRows, type RunRow } from './converters.js'

/** Inserts a batch of attempts and their tool calls; re-inserting an attempt replaces it (ReplacingMergeTree). */
export async function insertAttempts(client: ClickHouseClient, attempts: AttemptResult[], ingestedAt: number): Promise<void> {
  if (attempts.length === 0) return
  await client.insert({ table: 'attempts', values: attempts.map((a) => attemptToRow(a, ingestedAt)), format: 'JSONEachRow' })
  const calls = attempts.flatMap((a) => toolCallsToRows(a, ingestedAt))
  if (calls.length > 0) await client.insert({ table: 'tool_calls', values: calls, format: 'JSONEachRow' })
}

export async function insertRuns(client: ClickHouseClient, runs: RunRecord[]): Promise<void> {
  if (runs.length === 0) return
  await client.insert({ table: 'runs', values: runs.map(runToRow), format: 'JSONEachRow' })
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

export async function outcomeCounts(reader: StoreReader, runId: string): Promise<OutcomeCountRow[]> {
  const rows = await reader.query<OutcomeCountRow & { n: string | number }>(
    `SELECT task_id, outcome, failure_bucket, validity, count() AS n
     FROM attempts FINAL WHERE run_id = {run:String}
     GROUP BY task_id, outcome, failure_bucket, validity
     ORDER BY task_id, outcome, failure_bucket, validity`,
    { run: runId },
  )
  return rows.map((r) => ({ ...r, n: Number(r.n) }))
}
