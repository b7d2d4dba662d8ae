/**
 * What the store holds of one run, for its completeness check (core/completeness.ts): which planned
 * attempts have both their attempt row and their stored trace, how many rows repeat an attempt_uid,
 * and how many attempts were harness errors. Reads with FINAL, like every read.
 */
import { missingAttempts, plannedFor, plannedTotal, type CompletenessReport } from '../core/completeness.js'
import type { StoreReader } from './clickhouse.js'

export interface CompletenessQuery {
  run_id: string
  task_ids: readonly string[]
  /** attempts per task: the plan's attempt indices are 0 … attempts − 1 */
  attempts: number
  /** tasks that planned fewer (a sequential run's tasks that stopped early): task id → attempts scheduled */
  attempts_by_task?: Readonly<Record<string, number>>
  /** missing attempts listed by name (the count is always exact) */
  listed?: number
}

interface TaskCountRow {
  task_id: string
  n: string | number
  uids: string | number
  harness: string | number
  traces: string | number
}

/** The run's stored attempts against its plan: an attempt counts as stored once both its row and its trace are in. */
export async function checkStoredAgainstPlan(reader: StoreReader, query: CompletenessQuery): Promise<CompletenessReport> {
  const perTask = await reader.query<TaskCountRow>(
    `SELECT a.task_id AS task_id, a.n AS n, a.uids AS uids, a.harness AS harness, ifNull(t.n, 0) AS traces
     FROM (SELECT task_id, count() AS n, uniqExact(attempt_uid) AS uids, countIf(failure_bucket = 'harness_error') AS harness
           FROM attempts FINAL WHERE run_id = {run:String} GROUP BY task_id) AS a
     LEFT JOIN (SELECT task_id, uniqExact(attempt_uid) AS n FROM traces FINAL WHERE run_id = {run:String} GROUP BY task_id) AS t
       ON t.task_id = a.task_id`,
    { run: query.run_id },
  )
  const counts = new Map(perTask.map((row) => [row.task_id, row]))
  // only tasks short of their plan are listed attempt by attempt
  const short = query.task_ids.filter((taskId) => {
    const row = counts.get(taskId)
    const planned = plannedFor(query, taskId)
    return planned > 0 && (row === undefined || Number(row.uids) < planned || Number(row.traces) < planned)
  })
  const stored = new Map<string, Set<number>>()
  for (const taskId of query.task_ids) if (!short.includes(taskId)) stored.set(taskId, new Set(Array.from({ length: plannedFor(query, taskId) }, (_, i) => i)))
  if (short.length > 0) {
    const rows = await reader.query<{ task_id: string; attempt: string | number }>(
      `SELECT a.task_id AS task_id, a.attempt AS attempt
       FROM (SELECT DISTINCT task_id, attempt, attempt_uid FROM attempts FINAL WHERE run_id = {run:String} AND task_id IN {tasks:Array(String)}) AS a
       INNER JOIN (SELECT DISTINCT attempt_uid FROM traces FINAL WHERE run_id = {run:String} AND task_id IN {tasks:Array(String)}) AS t
         ON t.attempt_uid = a.attempt_uid`,
      { run: query.run_id, tasks: short },
    )
    for (const row of rows) {
      const have = stored.get(row.task_id) ?? new Set<number>()
      stored.set(row.task_id, have)
      have.add(Number(row.attempt))
    }
  }
  const found = missingAttempts(query, stored, query.listed)
  const planned = new Set(query.task_ids)
  const inPlan = perTask.filter((row) => planned.has(row.task_id))
  return {
    planned: plannedTotal(query),
    stored: found.stored,
    missing_count: found.count,
    missing: found.missing,
    doubled: inPlan.reduce((sum, row) => sum + Number(row.n) - Number(row.uids), 0),
    harness_errors: inPlan.reduce((sum, row) => sum + Number(row.harness), 0),
  }
}
