/** Run statistics: counts come from ClickHouse, intervals and the suite rate from core/stats. */
import type { RunRecord } from '../core/contracts.js'
import { rateOf, suiteRate, type Rate } from '../core/stats.js'
import type { StoreReader } from '../store/clickhouse.js'
import { getRun, outcomeCounts } from '../store/repositories.js'

export interface TaskStats extends Rate {
  task_id: string
  outcomes: Record<string, number>
  failure_buckets: Record<string, number>
}

export interface RunStats {
  run: RunRecord | undefined
  run_id: string
  attempts: number
  tasks: TaskStats[]
  /** unweighted mean of per-task success rates */
  suite_rate: number | null
  outcomes: Record<string, number>
  failure_buckets: Record<string, number>
  validity: Record<string, number>
}

export async function getRunStats(reader: StoreReader, runId: string): Promise<RunStats> {
  const [run, rows] = await Promise.all([getRun(reader, runId), outcomeCounts(reader, runId)])
  const byTask = new Map<string, { k: number; n: number; outcomes: Record<string, number>; failure_buckets: Record<string, number> }>()
  const outcomes: Record<string, number> = {}
  const failure_buckets: Record<string, number> = {}
  const validity: Record<string, number> = {}
  let attempts = 0
  for (const row of rows) {
    const task = byTask.get(row.task_id) ?? { k: 0, n: 0, outcomes: {}, failure_buckets: {} }
    byTask.set(row.task_id, task)
    task.n += row.n
    if (row.outcome === 'pass') task.k += row.n
    add(task.outcomes, row.outcome, row.n)
    add(outcomes, row.outcome, row.n)
    add(validity, row.validity, row.n)
    if (row.failure_bucket) {
      add(task.failure_buckets, row.failure_bucket, row.n)
      add(failure_buckets, row.failure_bucket, row.n)
    }
    attempts += row.n
  }
  const tasks = [...byTask.entries()].map(([task_id, t]) => ({ task_id, ...rateOf(t.k, t.n), outcomes: t.outcomes, failure_buckets: t.failure_buckets }))
  return { run, run_id: runId, attempts, tasks, suite_rate: suiteRate(tasks).rate, outcomes, failure_buckets, validity }
}

function add(into: Record<string, number>, key: string, n: number): void {
  into[key] = (into[key] ?? 0) + n
}
