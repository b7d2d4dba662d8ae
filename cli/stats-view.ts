import type { RunStamps } from '../core/compare.js'
import type { RunStats, SuiteStats, TaskStats } from '../app/stats.js'
import { printFaultStats, printFamilies } from './fault-view.js'
import { counts, interval, ms, num, pct, table, usd } from './format.js'
import { harnessBanner } from '../core/run-report.js'

/** The stamps every report prints: price table version and date, suite content, judge. */
export function stampLine(stamps: RunStamps): string {
  const price = stamps.price_table_version === '' ? 'price table not recorded' : `price table ${stamps.price_table_version} (${stamps.price_table_date || 'no date'})`
  const suite = stamps.suite_hash === '' ? '' : `   suite content ${stamps.suite_hash.slice(0, 12)}`
  const judge = stamps.judge_model === '' ? '' : `   judge ${stamps.judge_model}${stamps.judge_prompt_version ? ` prompt ${stamps.judge_prompt_version}` : ''}`
  const faults = stamps.fault_profile_hash ? `   faults ${stamps.fault_profile_hash.slice(0, 12)} (${stamps.fault_mode ?? ''}, rate ${stamps.fault_rate ?? 0})` : ''
  return `${price}${suite}${judge}${faults}`
}

/** Which pass@k / pass^k columns a report shows. */
export interface StatsViewOptions {
  /** every k asked for (forge stats --k), each shown; default: the computed ks above 1 (pass@1 = pass^1 = the success rate) */
  ks?: readonly number[]
}

/** A run's report: per suite, a success table and a cost/latency table, then the suite's headline figures. */
export function printRunStats(log: (line: string) => void, stats: RunStats, options: StatsViewOptions = {}): void {
  const run = stats.run
  // statistics over less than the whole run say so first (issue 12)
  if (stats.notice !== null) log(stats.notice)
  log(`run ${stats.run_id}${run ? `  suite ${run.suite}  adapter ${run.adapter}  status ${run.status}` : ''}`)
  log(stampLine(stats.stamps))
  if (run?.redacted === false) log('not redacted: secrets and PII stored as produced (--no-redact)')
  if (run?.guard_answers === true) log('answer guard on (--guard-answers): expected answers redacted from tool arguments')
  const banner = harnessBanner(stats.failure_buckets['harness_error'] ?? 0, stats.attempts)
  if (banner) log(`\n!! HARNESS ERRORS: ${banner.message}\n`)
  const ks = options.ks ? [...options.ks] : stats.ks.filter((k) => k > 1)
  for (const suite of stats.suites) {
    const tasks = stats.tasks.filter((t) => t.suite === suite.suite)
    if (stats.suites.length > 1) log(`\nsuite ${suite.suite} (reported apart: suites are never pooled)`)
    log('')
    log(
      table(
        ['task', 'k/n', 'success', 'wilson 95%', 'valid k/n', 'valid rate', ...ks.flatMap((k) => [`pass@${k}`, `pass^${k}`]), 'consistency', 'failure buckets'],
        tasks.map((t) => [
          t.task_id,
          `${t.k}/${t.n}${t.stopped_early ? '*' : ''}`,
          pct(t.rate),
          interval(t.low, t.high),
          `${t.validity_rates.valid.k}/${t.validity_rates.valid.n}`,
          pct(t.validity_rates.valid.rate),
          ...ks.flatMap((k) => passCells(t, k)),
          num(t.consistency, 2),
          counts(t.failure_buckets),
        ]),
        ['l', 'r', 'r', 'l', 'r', 'r', ...ks.flatMap((): ('l' | 'r')[] => ['r', 'r']), 'r', 'l'],
      ),
    )
    log('')
    log(
      table(
        ['task', 'p50 ms', 'p90 ms', 'p99 ms', 'tool calls', 'tokens in', 'tokens out', 'cost/attempt', 'cost/success'],
        tasks.map((t) => [
          t.task_id,
          ms(t.latency_ms?.p50),
          ms(t.latency_ms?.p90),
          ms(t.latency_ms?.p99),
          num(t.tool_calls_per_attempt, 2),
          num(t.input_tokens_per_attempt, 0),
          num(t.output_tokens_per_attempt, 0),
          usd(t.cost.per_attempt_usd),
          usd(t.cost.per_success_usd),
        ]),
        ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
      ),
    )
    log('')
    printSuiteHeadline(log, suite, ks)
    if (tasks.some((t) => t.stopped_early)) {
      log(`* stopped early: the Wilson interval reached the requested width (≤ ${run?.stop_width ?? '?'}) before all attempts ran`)
    }
  }
  log(`outcomes: ${counts(stats.outcomes)}   validity: ${counts(stats.validity)}   (n = ${stats.attempts})`)
  log(`failure buckets: ${counts(stats.failure_buckets)}`)
  if (stats.families !== undefined) printFamilies(log, stats.families)
  if (stats.faults !== undefined) printFaultStats(log, stats.faults)
}

// a k the run has too few attempts for is said so, not left a bare n/a
const K_ABOVE_N = 'n/a (k > n)'

function passCells(t: TaskStats, k: number): string[] {
  const p = t.pass_k.find((x) => x.k === k)
  if (k > t.n) return [K_ABOVE_N, K_ABOVE_N]
  return [pct(p?.pass_at_k), pct(p?.pass_hat_k)]
}

function suitePass(suite: SuiteStats, k: number): string {
  const p = suite.pass_k.find((x) => x.k === k)
  if (p === undefined || p.tasks === 0) return `pass@${k} ${K_ABOVE_N}`
  const over = p.tasks < suite.success.tasks ? ` (over the ${p.tasks} of ${suite.success.tasks} tasks with k ≤ n)` : ''
  return `pass@${k} ${pct(p.pass_at_k)}, pass^${k} ${pct(p.pass_hat_k)}${over}`
}

function printSuiteHeadline(log: (line: string) => void, suite: SuiteStats, ks: number[]): void {
  log(`suite success (unweighted mean of ${suite.success.tasks} task rates): ${pct(suite.success.rate)}`)
  const v = suite.validity_rates
  log(
    `pass rate over all ${v.n} attempts: ${pct(v.all.rate)}; over the ${v.n_valid} valid attempts: ${pct(v.valid.rate)}` +
      ` (${v.invalid} invalid excluded; each the unweighted mean of task rates)`,
  )
  const passes = ks.map((k) => suitePass(suite, k))
  log(`${passes.length > 0 ? `${passes.join('; ')}; ` : ''}consistency ${num(suite.consistency, 2)} (chance two attempts of a task agree)`)
  const latency = suite.latency_ms ? `${ms(suite.latency_ms.p50)} / ${ms(suite.latency_ms.p90)} / ${ms(suite.latency_ms.p99)} ms` : 'n/a'
  log(
    `latency p50/p90/p99 ${latency}; per attempt ${num(suite.tool_calls_per_attempt, 2)} tool calls, ` +
      `${num(suite.input_tokens_per_attempt, 0)} tokens in, ${num(suite.output_tokens_per_attempt, 0)} out`,
  )
  const unpriced = suite.n - suite.cost.priced
  log(
    `cost ${usd(suite.cost.total_usd)} total, ${usd(suite.cost.per_attempt_usd)} per attempt, ${usd(suite.cost.per_success_usd)} per success` +
      (unpriced > 0 ? ` (unavailable: ${unpriced} of ${suite.n} attempts used a model the price table does not list)` : ''),
  )
}
