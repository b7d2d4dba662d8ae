import type { CompareReport } from '../app/compare.js'
import type { MetricChange, TaskComparison } from '../core/compare.js'
import { stampsOf } from '../app/stats.js'
import { interval, ms, num, pct, pp, pValue, table, usd } from './format.js'
import { stampLine } from './stats-view.js'

const metricLabel: Record<MetricChange['metric'], string> = {
  cost_per_attempt_usd: 'cost per attempt',
  latency_p50_ms: 'latency p50',
  latency_p90_ms: 'latency p90',
  tool_calls_per_attempt: 'tool calls per attempt',
}

function metricValue(m: MetricChange, v: number | null): string {
  if (m.metric === 'cost_per_attempt_usd') return usd(v)
  if (m.metric === 'tool_calls_per_attempt') return num(v, 2)
  return `${ms(v)} ms`
}

/** A figure's change with its test: `latency p50 12 ms → 118 ms (+883%; mann-whitney u, q <0.0001, increased)`. */
function metricLine(m: MetricChange): string {
  const relative = m.relative === null ? '' : `${m.relative >= 0 ? '+' : ''}${(m.relative * 100).toFixed(0)}%; `
  const test = m.test === null || m.q === null ? 'not tested' : `${m.test}, q ${pValue(m.q)}`
  return `${metricLabel[m.metric]} ${metricValue(m, m.a)} → ${metricValue(m, m.b)} (${relative}${test}, ${m.verdict})`
}

function verdict(t: TaskComparison): string {
  if (t.regressed) return 'REGRESSED'
  return t.improved ? 'improved' : '—'
}

/** The comparison as a user reads it: stamps and warnings, a table per suite, then what was flagged. */
export function printComparison(log: (line: string) => void, report: CompareReport): void {
  const base = report.baseline
  log(
    `a = run ${report.run_a}${base ? ` (baseline ${base.name} v${base.version}, commit ${base.commit_hash.slice(0, 12) || '—'}, agent ${base.agent_version || '—'})` : ''}`,
  )
  log(`    ${stampLine(stampsOf(report.a))}`)
  log(`b = run ${report.run_b}`)
  log(`    ${stampLine(stampsOf(report.b))}`)
  for (const warning of report.warnings) log(`warning: ${warning}`)
  for (const suite of report.suites_only_in_a) log(`warning: suite ${suite} is only in run a; not compared`)
  for (const suite of report.suites_only_in_b) log(`warning: suite ${suite} is only in run b; not compared`)

  for (const suite of report.suites) {
    log('')
    log(`suite ${suite.suite}: success ${pct(suite.a.rate)} → ${pct(suite.b.rate)} (${pp(suite.delta)}; unweighted means of task rates)`)
    log(
      table(
        ['task', 'a k/n', 'a', 'wilson 95%', 'b k/n', 'b', 'wilson 95%', 'delta', 'test', 'p', 'q (BH)', 'verdict'],
        suite.tasks.map((t) => [
          t.task_id,
          `${t.a.k}/${t.a.n}`,
          pct(t.a.rate),
          interval(t.a.low, t.a.high),
          `${t.b.k}/${t.b.n}`,
          pct(t.b.rate),
          interval(t.b.low, t.b.high),
          pp(t.delta),
          t.test === 'fisher exact' ? 'fisher' : 'z',
          pValue(t.p),
          pValue(t.q),
          verdict(t),
        ]),
        ['l', 'r', 'r', 'l', 'r', 'r', 'l', 'r', 'l', 'r', 'r', 'l'],
      ),
    )
    if (suite.only_in_a.length > 0) log(`tasks only in a: ${suite.only_in_a.join(', ')}`)
    if (suite.only_in_b.length > 0) log(`tasks only in b: ${suite.only_in_b.join(', ')}`)
    const toolChanges = suite.tasks.filter((t) => t.tool_usage_changed)
    if (toolChanges.length > 0) {
      log('tool usage changed:')
      for (const t of toolChanges) {
        const lines = t.tool_usage
          .filter((f) => f.flagged)
          .map((f) =>
            f.kind === 'uses_tool'
              ? `${f.feature} called in ${pct(f.a.k / f.a.n)} → ${pct(f.b.k / f.b.n)} of attempts (q ${pValue(f.q)})`
              : `usual order "${f.feature}" in ${pct(f.a.k / f.a.n)} → ${pct(f.b.k / f.b.n)} (q ${pValue(f.q)})`,
          )
        log(`  ${t.task_id}: ${lines.join('; ')}`)
      }
    }
    const efficiency = [
      ...suite.metrics.map((m) => ({ where: `suite ${suite.suite}`, m })),
      ...suite.tasks.flatMap((t) => t.metrics.map((m) => ({ where: t.task_id, m }))),
    ]
    const increases = efficiency.filter(({ m }) => m.flagged)
    if (increases.length > 0) {
      log('increased significantly and beyond the allowed delta:')
      for (const { where, m } of increases) log(`  ${where}: ${metricLine(m)}`)
    }
    // what a point-estimate rule would have flagged: shown so a reader sees why it was not
    const noise = efficiency.filter(({ m }) => m.beyond_delta && !m.flagged)
    if (noise.length > 0) {
      log('grew beyond the allowed delta but not flagged:')
      for (const { where, m } of noise) log(`  ${where}: ${metricLine(m)}`)
    }
  }
  log('')
  const tests = report.suites.flatMap((s) => [...s.metrics, ...s.tasks.flatMap((t) => t.metrics)])
  log(
    `cost, latency and tool calls: per-attempt values of every attempt ranked in the store, Mann–Whitney U per task and ` +
      `van Elteren per suite, Benjamini–Hochberg across them (FDR ${report.thresholds.fdr}); ${tests.filter((m) => m.test !== null).length} figure(s) tested, ` +
      `${tests.filter((m) => m.verdict === 'unavailable').length} unavailable; flagged only when significant, higher in b and beyond the allowed delta`,
  )
  log('')
  const f = report.findings
  log(
    report.regression
      ? `REGRESSION: ${f.success} task(s) dropped significantly, ${f.tool_usage} changed tool usage, ` +
          `${f.cost} cost, ${f.latency} latency and ${f.tool_calls} tool-call increase(s) (FDR ${report.thresholds.fdr})`
      : `no regression found (FDR ${report.thresholds.fdr}; a task is flagged only when significant after Benjamini–Hochberg and its rate dropped)`,
  )
}
