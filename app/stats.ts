/**
 * Run statistics: counts, sums and latency percentiles come from ClickHouse (one scan); rates,
 * intervals, pass@k / pass^k, consistency and cost figures from core/report. Each suite stands apart.
 */
import type { RunStamps } from '../core/compare.js'
import { partialRunNotice } from '../core/completeness.js'
import type { RunRecord } from '../core/contracts/index.js'
import { DEFAULT_KS, suiteFigures, type SuiteFigures, type TaskFigures } from '../core/report.js'
import { suiteValidityRates, validityRates, type ValidityRates } from '../core/validity.js'
import type { StoreReader } from '../store/clickhouse.js'
import { getRun, runFigures } from '../store/repositories.js'
import { familyStats } from './adversarial-stats.js'
import type { FamilyFigures } from '../core/adversarial.js'
import { getFaultStats, type FaultStats } from './fault-stats.js'

export interface TaskStats extends TaskFigures {
  outcomes: Record<string, number>
  failure_buckets: Record<string, number>
  /** a sequential run stopped this task early: its interval was narrow enough */
  stopped_early: boolean
  /** the pass rate over all attempts and, beside it, over attempts whose evidence stands (validity not invalid) */
  validity_rates: ValidityRates
}

export type SuiteStats = Omit<SuiteFigures, 'tasks'> & {
  /** the suite's pass rate over all attempts and the validity-filtered one, each the unweighted mean of task rates */
  validity_rates: ReturnType<typeof suiteValidityRates>
}

export interface RunStats {
  run: RunRecord | undefined
  run_id: string
  /** set when the statistics cover less than the whole run (in progress, cancelled, incomplete, degraded): printed first */
  notice: string | null
  attempts: number
  /** every task of the run, sorted by suite then task */
  tasks: TaskStats[]
  /** one entry per suite: suites are never pooled */
  suites: SuiteStats[]
  /** the unweighted mean of per-task success rates when the run has one suite; null for several (never pooled) */
  suite_rate: number | null
  outcomes: Record<string, number>
  failure_buckets: Record<string, number>
  validity: Record<string, number>
  stamps: RunStamps
  ks: number[]
  /** runs with a fault profile (or that met injected faults): recovery and robustness drop */
  faults?: FaultStats
  /** runs of a generated adversarial suite: scores per mutation family */
  families?: FamilyFigures[]
}

/** The statistics of a stored run; `known.run`: its record as the caller just read it (not read again). */
export async function getRunStats(reader: StoreReader, runId: string, ks: readonly number[] = DEFAULT_KS, known: { run?: RunRecord } = {}): Promise<RunStats> {
  const [run, { outcomes: rows, ...aggregates }] = await Promise.all([known.run ?? getRun(reader, runId), runFigures(reader, runId)])
  const breakdown = new Map<string, { outcomes: Record<string, number>; failure_buckets: Record<string, number> }>()
  const outcomes: Record<string, number> = {}
  const failure_buckets: Record<string, number> = {}
  const validity: Record<string, number> = {}
  let attempts = 0
  for (const row of rows) {
    const task = breakdown.get(row.task_id) ?? { outcomes: {}, failure_buckets: {} }
    breakdown.set(row.task_id, task)
    add(task.outcomes, row.outcome, row.n)
    add(outcomes, row.outcome, row.n)
    add(validity, row.validity, row.n)
    if (row.failure_bucket) {
      add(task.failure_buckets, row.failure_bucket, row.n)
      add(failure_buckets, row.failure_bucket, row.n)
    }
    attempts += row.n
  }
  const stopped = new Set(run?.stopped_tasks ?? [])
  const figures = suiteFigures(aggregates.tasks, aggregates.suites, ks)
  const rates = validityRates(rows)
  const ratesOf = (taskId: string): ValidityRates => rates.get(taskId) ?? validityRates([{ task_id: taskId, outcome: 'pass', validity: 'valid', n: 0 }]).get(taskId)!
  const tasks = figures.flatMap((s) =>
    s.tasks.map((t) => ({
      ...t,
      outcomes: breakdown.get(t.task_id)?.outcomes ?? {},
      failure_buckets: breakdown.get(t.task_id)?.failure_buckets ?? {},
      stopped_early: stopped.has(t.task_id),
      validity_rates: ratesOf(t.task_id),
    })),
  )
  const suites = figures.map(({ tasks: suiteTasks, ...suite }) => ({ ...suite, validity_rates: suiteValidityRates(suiteTasks.map((t) => ratesOf(t.task_id))) }))
  const [faults, families] = await Promise.all([getFaultStats(reader, run, runId), familyStats(run, tasks)])
  return {
    run,
    run_id: runId,
    notice: partialRunNotice(run, attempts) ?? null,
    attempts,
    tasks,
    suites,
    suite_rate: suites.length === 1 ? suites[0]!.success.rate : null,
    outcomes,
    failure_buckets,
    validity,
    stamps: stampsOf(run),
    ks: [...ks],
    ...(faults !== undefined ? { faults } : {}),
    ...(families !== undefined ? { families } : {}),
  }
}

export function stampsOf(run: RunRecord | undefined): RunStamps {
  return {
    price_table_version: run?.price_table_version ?? '',
    price_table_date: run?.price_table_date ?? '',
    suite_hash: run?.suite_hash ?? '',
    judge_model: run?.judge_model ?? '',
    judge_prompt_version: run?.judge_prompt_version ?? '',
    ...(run?.fault_profile_hash ? { fault_profile_hash: run.fault_profile_hash, fault_mode: run.fault_mode ?? '', fault_rate: run.fault_rate ?? 0 } : {}),
  }
}

function add(into: Record<string, number>, key: string, n: number): void {
  into[key] = (into[key] ?? 0) + n
}
