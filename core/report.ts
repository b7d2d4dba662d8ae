/**
 * The report model of a run: per-task and per-suite figures computed from aggregates. The store
 * computes the aggregates in SQL over many rows (store/repositories.ts); `aggregateAttempts`
 * computes the same aggregates from raw attempts, so the two paths can be checked against each
 * other. Different suites are never pooled: every figure belongs to one suite.
 */
import { consistency, meanOfAvailable, passAtK, passHatK, quantile, rateOf, suiteRate, type Rate } from './stats.js'

/** Latency percentiles (ms) of a group of attempts. */
export interface LatencyPercentiles {
  p50: number
  p90: number
  p99: number
}

export const LATENCY_QUANTILES = [0.5, 0.9, 0.99] as const

/** Sums and order statistics over a group of attempts: everything the figures are computed from. */
export interface MeasureAggregate {
  n: number
  /** attempts whose outcome is `pass` */
  k: number
  /** null when n = 0 */
  latency_ms: LatencyPercentiles | null
  tool_calls: number
  input_tokens: number
  output_tokens: number
  /** attempts whose cost is known (a priced model) */
  priced: number
  /** the summed cost of the priced attempts, USD */
  cost_usd: number
}

export interface TaskAggregate extends MeasureAggregate {
  suite: string
  task_id: string
}

export interface SuiteAggregate extends MeasureAggregate {
  suite: string
}

/** The per-attempt fields the aggregates are built from. */
export interface AttemptMeasurement {
  suite: string
  task_id: string
  outcome: string
  latency_ms: number
  tool_call_count: number
  input_tokens: number
  output_tokens: number
  cost_usd: number | null
}

function aggregate(attempts: readonly AttemptMeasurement[]): MeasureAggregate {
  const latencies = attempts.map((a) => a.latency_ms)
  const priced = attempts.filter((a) => a.cost_usd !== null)
  return {
    n: attempts.length,
    k: attempts.filter((a) => a.outcome === 'pass').length,
    latency_ms:
      attempts.length === 0
        ? null
        : { p50: quantile(latencies, 0.5)!, p90: quantile(latencies, 0.9)!, p99: quantile(latencies, 0.99)! },
    tool_calls: sum(attempts.map((a) => a.tool_call_count)),
    input_tokens: sum(attempts.map((a) => a.input_tokens)),
    output_tokens: sum(attempts.map((a) => a.output_tokens)),
    priced: priced.length,
    cost_usd: sum(priced.map((a) => a.cost_usd!)),
  }
}

/** Task and suite aggregates from raw attempts, sorted by suite then task — what the SQL path returns. */
export function aggregateAttempts(attempts: readonly AttemptMeasurement[]): { tasks: TaskAggregate[]; suites: SuiteAggregate[] } {
  const bySuite = groupBy(attempts, (a) => a.suite)
  const byTask = groupBy(attempts, (a) => `${a.suite}\u0000${a.task_id}`)
  const tasks = [...byTask.values()].map((group) => ({ suite: group[0]!.suite, task_id: group[0]!.task_id, ...aggregate(group) }))
  const suites = [...bySuite.values()].map((group) => ({ suite: group[0]!.suite, ...aggregate(group) }))
  tasks.sort((a, b) => compareText(a.suite, b.suite) || compareText(a.task_id, b.task_id))
  suites.sort((a, b) => compareText(a.suite, b.suite))
  return { tasks, suites }
}

/** Cost figures; a cost is null (unavailable) when any attempt it covers has no known price — never zero. */
export interface CostFigures {
  /** attempts with a known cost, of n */
  priced: number
  total_usd: number | null
  per_attempt_usd: number | null
  /** total cost / successes; null with no successes */
  per_success_usd: number | null
}

export interface MeasureFigures {
  latency_ms: LatencyPercentiles | null
  tool_calls_per_attempt: number | null
  input_tokens_per_attempt: number | null
  output_tokens_per_attempt: number | null
  cost: CostFigures
}

export interface PassAtK {
  k: number
  /** at least one of k attempts passes (unbiased estimator); null when k > n */
  pass_at_k: number | null
  /** all k attempts pass (unbiased estimator); null when k > n */
  pass_hat_k: number | null
}

export interface TaskFigures extends Rate, MeasureFigures {
  suite: string
  task_id: string
  pass_k: PassAtK[]
  /** chance two attempts agree (both pass or both fail); null when n < 2 */
  consistency: number | null
}

export interface SuitePassAtK {
  k: number
  /** unweighted mean over the tasks where it is defined (n ≥ k) */
  pass_at_k: number | null
  pass_hat_k: number | null
  /** tasks the means are over */
  tasks: number
}

export interface SuiteFigures extends MeasureFigures {
  suite: string
  /** attempts and successes over the whole suite (for denominators only: the rate is `success`) */
  n: number
  k: number
  /** the unweighted mean of per-task success rates, over `tasks` tasks */
  success: { rate: number | null; tasks: number }
  pass_k: SuitePassAtK[]
  /** unweighted mean of per-task consistency */
  consistency: number | null
  tasks: TaskFigures[]
}

export const DEFAULT_KS: readonly number[] = [1, 3, 5]

function measureFigures(a: MeasureAggregate): MeasureFigures {
  const per = (total: number): number | null => (a.n === 0 ? null : total / a.n)
  const total = a.n > 0 && a.priced === a.n ? a.cost_usd : null
  return {
    latency_ms: a.latency_ms,
    tool_calls_per_attempt: per(a.tool_calls),
    input_tokens_per_attempt: per(a.input_tokens),
    output_tokens_per_attempt: per(a.output_tokens),
    cost: {
      priced: a.priced,
      total_usd: total,
      per_attempt_usd: total === null ? null : total / a.n,
      per_success_usd: total === null || a.k === 0 ? null : total / a.k,
    },
  }
}

export function taskFigures(a: TaskAggregate, ks: readonly number[] = DEFAULT_KS): TaskFigures {
  return {
    suite: a.suite,
    task_id: a.task_id,
    ...rateOf(a.k, a.n),
    pass_k: ks.map((k) => ({ k, pass_at_k: passAtK(a.n, a.k, k), pass_hat_k: passHatK(a.n, a.k, k) })),
    consistency: consistency(a.n, a.k),
    ...measureFigures(a),
  }
}

/** Figures for each suite apart, each with its tasks; suites and tasks the aggregates name, sorted. */
export function suiteFigures(
  tasks: readonly TaskAggregate[],
  suites: readonly SuiteAggregate[],
  ks: readonly number[] = DEFAULT_KS,
): SuiteFigures[] {
  return [...suites]
    .sort((a, b) => compareText(a.suite, b.suite))
    .map((s) => {
      const own = tasks
        .filter((t) => t.suite === s.suite)
        .map((t) => taskFigures(t, ks))
        .sort((a, b) => compareText(a.task_id, b.task_id))
      return {
        suite: s.suite,
        n: s.n,
        k: s.k,
        success: suiteRate(own),
        pass_k: ks.map((k) => {
          const atK = meanOfAvailable(own.map((t) => t.pass_k.find((p) => p.k === k)?.pass_at_k ?? null))
          const hatK = meanOfAvailable(own.map((t) => t.pass_k.find((p) => p.k === k)?.pass_hat_k ?? null))
          return { k, pass_at_k: atK.mean, pass_hat_k: hatK.mean, tasks: atK.count }
        }),
        consistency: meanOfAvailable(own.map((t) => t.consistency)).mean,
        ...measureFigures(s),
        tasks: own,
      }
    })
}

function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0)
}

function groupBy<T>(values: readonly T[], key: (value: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>()
  for (const value of values) {
    const k = key(value)
    const group = groups.get(k)
    if (group) group.push(value)
    else groups.set(k, [value])
  }
  return groups
}

/** Byte-wise string order, as ClickHouse's ORDER BY on String sorts. */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
