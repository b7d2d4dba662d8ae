/**
 * The run report as one self-contained HTML document: stamps, the harness-error banner, per-suite
 * headline figures, per-task rates with Wilson intervals (table and chart), outcomes, validity and
 * failure buckets, latency and cost distributions, recovery under faults, judge agreement, the
 * comparison with another run, and the failed attempts with links to their traces. Every number a
 * chart shows is also in a table; table rows carry the exact figures as data-* attributes.
 */
import type { TaskStats } from '../stats.js'
import type { CompareReport } from '../compare.js'
import type { ReportModel } from '../report.js'
import type { Histogram } from '../../core/run-report.js'
import { esc, fmt, htmlTable, page } from './html.js'
import { histogramChart, rateCurve, wilsonChart } from './svg.js'

const data = (attrs: Record<string, string | number | null>): string =>
  Object.entries(attrs)
    .map(([k, v]) => `data-${k}="${esc(v === null ? 'null' : String(v))}"`)
    .join(' ')

function stampsSection(model: ReportModel): string {
  const s = model.stamps
  const rows: [string, string][] = [
    ['run', model.run_id],
    ['status', s.status],
    ['suite', s.suite],
    ['suite hash', s.suite_hash === '' ? 'not recorded' : s.suite_hash],
    ['agent (adapter)', s.adapter],
    ['config', s.config_id],
    ['model', s.models.length === 0 ? 'n/a' : s.models.map((m) => `${m.model || '(not recorded)'} (${m.n} attempts)`).join(', ')],
    ['price table', s.price_table],
    ['fault profile', s.fault_profile],
    ['seed', s.seed],
    ['judge', s.judge],
    ['attempts', `${model.stats.attempts} stored${s.planned_attempts !== null ? ` of ${s.planned_attempts} planned` : ''}`],
    ['started', fmt.date(s.started_at)],
    ['finished', fmt.date(s.finished_at)],
  ]
  return `<table id="stamps">${rows.map(([k, v]) => `<tr data-stamp="${esc(k)}"><th>${esc(k)}</th><td>${esc(v)}</td></tr>`).join('')}</table>`
}

function card(label: string, value: string, attrs = '', extraClass = ''): string {
  return `<div class="card${extraClass ? ` ${extraClass}` : ''}" ${attrs}><div class="v">${esc(value)}</div><div class="l">${esc(label)}</div></div>`
}

function suiteSection(model: ReportModel): string {
  const stats = model.stats
  const ks = stats.ks.filter((k) => k > 1)
  return stats.suites
    .map((suite) => {
      const tasks = stats.tasks.filter((t) => t.suite === suite.suite)
      const id = suite.suite.replace(/[^A-Za-z0-9_-]/g, '_')
      const v = suite.validity_rates
      const headline = [
        card(`suite success: unweighted mean of ${suite.success.tasks} task rates`, fmt.pct(suite.success.rate), `id="suite-rate-${esc(id)}" ${data({ rate: suite.success.rate, tasks: suite.success.tasks })}`),
        card('attempts (passed / all)', `${suite.k} / ${suite.n}`, data({ k: suite.k, n: suite.n })),
        card(`pass rate over the ${v.n_valid} valid attempts`, fmt.pct(v.valid.rate), data({ rate: v.valid.rate })),
        ...suite.pass_k
          .filter((p) => p.k > 1)
          .map((p) => card(`pass@${p.k} / pass^${p.k} (mean over ${p.tasks} tasks)`, `${fmt.pct(p.pass_at_k)} / ${fmt.pct(p.pass_hat_k)}`, data({ k: p.k, 'pass-at-k': p.pass_at_k, 'pass-hat-k': p.pass_hat_k }), 'passk')),
        card('consistency (two attempts agree)', fmt.num(suite.consistency, 2)),
        card('latency p50 / p90 / p99 (ms)', suite.latency_ms ? `${fmt.ms(suite.latency_ms.p50)} / ${fmt.ms(suite.latency_ms.p90)} / ${fmt.ms(suite.latency_ms.p99)}` : 'n/a'),
        card('cost total', fmt.usd(suite.cost.total_usd), `id="cost-total-${esc(id)}" ${data({ usd: suite.cost.total_usd })}`),
        card('cost per success', fmt.usd(suite.cost.per_success_usd), `id="cost-per-success-${esc(id)}" ${data({ usd: suite.cost.per_success_usd })}`),
      ].join('')
      const unpriced = suite.n - suite.cost.priced
      const costNote =
        unpriced > 0 ? `<p class="note">Cost unavailable for ${unpriced} of ${suite.n} attempts: their model is not in the price table (${esc(model.stamps.price_table)}). Unavailable is never $0.</p>` : ''
      const taskTable = htmlTable({
        id: `tasks-${id}`,
        headers: ['task', 'k/n', 'success', 'Wilson 95%', 'valid k/n', 'valid rate', ...ks.flatMap((k) => [`pass@${k}`, `pass^${k}`]), 'consistency', 'failure buckets'],
        num: [1, 2, 4, 5, ...ks.flatMap((_, i) => [6 + 2 * i, 7 + 2 * i]), 6 + 2 * ks.length],
        rows: tasks.map((t) => [
          esc(t.task_id),
          `${t.k}/${t.n}${t.stopped_early ? '*' : ''}`,
          fmt.pct(t.rate),
          fmt.interval(t.low, t.high),
          `${t.validity_rates.valid.k}/${t.validity_rates.valid.n}`,
          fmt.pct(t.validity_rates.valid.rate),
          ...ks.flatMap((k) => passCells(t, k)),
          fmt.num(t.consistency, 2),
          esc(fmt.counts(t.failure_buckets)),
        ]),
        rowAttrs: tasks.map((t) => `class="task-row" ${data({ task: t.task_id, k: t.k, n: t.n, rate: t.rate, low: t.low, high: t.high })}`),
      })
      const measureTable = htmlTable({
        id: `measures-${id}`,
        headers: ['task', 'p50 ms', 'p90 ms', 'p99 ms', 'tool calls', 'tokens in', 'tokens out', 'cost/attempt', 'cost/success'],
        num: [1, 2, 3, 4, 5, 6, 7, 8],
        rows: tasks.map((t) => [
          esc(t.task_id),
          fmt.ms(t.latency_ms?.p50),
          fmt.ms(t.latency_ms?.p90),
          fmt.ms(t.latency_ms?.p99),
          fmt.num(t.tool_calls_per_attempt, 2),
          fmt.num(t.input_tokens_per_attempt, 0),
          fmt.num(t.output_tokens_per_attempt, 0),
          fmt.usd(t.cost.per_attempt_usd),
          fmt.usd(t.cost.per_success_usd),
        ]),
        rowAttrs: tasks.map((t) => data({ task: t.task_id, 'cost-per-success': t.cost.per_success_usd })),
      })
      const chart = wilsonChart({
        id: `wilson-${id}`,
        title: `Success rate per task with Wilson 95% intervals, suite ${suite.suite}`,
        rows: tasks.map((t) => ({ label: t.task_id, rate: t.rate, low: t.low, high: t.high, k: t.k, n: t.n })),
        reference: suite.success.rate === null ? null : { value: suite.success.rate, label: `suite ${fmt.pct(suite.success.rate)}` },
      })
      const stopped = tasks.some((t) => t.stopped_early)
        ? `<p class="muted small">* stopped early: the Wilson interval reached the requested width (≤ ${esc(String(stats.run?.stop_width ?? '?'))}) before all attempts ran.</p>`
        : ''
      return `<section class="suite" id="suite-${esc(id)}">
<h2>Suite ${esc(suite.suite)}${stats.suites.length > 1 ? ' <span class="muted small">(reported apart: suites are never pooled)</span>' : ''}</h2>
<div class="cards">${headline}</div>${costNote}
<h3>Success per task</h3>
${chart}
${taskTable}${stopped}
<h3>Latency, tool calls, tokens and cost per task</h3>
${measureTable}
</section>`
    })
    .join('\n')
}

function passCells(t: TaskStats, k: number): string[] {
  const p = t.pass_k.find((x) => x.k === k)
  return [fmt.pct(p?.pass_at_k), fmt.pct(p?.pass_hat_k)]
}

function countsTable(id: string, label: string, counts: Record<string, number>, total: number): string {
  const entries = Object.entries(counts).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
  if (entries.length === 0) return `<p id="${esc(id)}" class="muted">${esc(label)}: none</p>`
  return htmlTable({
    id,
    headers: [label, 'attempts', 'share'],
    num: [1, 2],
    rows: entries.map(([k, n]) => [esc(k), String(n), fmt.pct(total === 0 ? null : n / total)]),
    rowAttrs: entries.map(([k, n]) => data({ key: k, n })),
  })
}

function outcomesSection(model: ReportModel): string {
  const s = model.stats
  const failed = Object.entries(s.outcomes)
    .filter(([o]) => o !== 'pass')
    .reduce((t, [, n]) => t + n, 0)
  return `<section id="outcomes-section"><h2>Outcomes, validity and failure buckets</h2>
<p class="muted">Outcome belongs to the agent, validity to the instrument. Each attempt that did not pass has exactly one failure bucket (n = ${s.attempts}).</p>
<div class="cards">
${countsTable('outcomes', 'outcome', s.outcomes, s.attempts)}
${countsTable('validity', 'validity', s.validity, s.attempts)}
${countsTable('failure-buckets', 'failure bucket', s.failure_buckets, failed)}
</div></section>`
}

function histogramBins(h: Histogram, unit: 'ms' | 'usd'): { label: string; n: number }[] {
  const label = (x: number) => (unit === 'ms' ? (x >= 1000 ? `${+(x / 1000).toPrecision(2)} s` : `${+x.toPrecision(2)} ms`) : `$${+x.toPrecision(2)}`)
  return h.bins.map((b) => ({ label: b.high === 0 ? (unit === 'ms' ? '0 ms' : '$0') : label(b.low), n: b.n }))
}

function distributionsSection(model: ReportModel): string {
  const parts = ['<section id="distributions"><h2>Latency and cost distributions</h2>']
  parts.push(
    model.latency.total === 0
      ? '<p class="muted">No latency measured.</p>'
      : '<h3>Latency</h3>' +
        histogramChart({ id: 'latency-histogram', title: 'Attempts by latency (log scale, 4 bins per decade)', bins: histogramBins(model.latency, 'ms'), xLabel: 'latency (lower edge of each bin)' }),
  )
  const priced = model.cost.total
  if (priced === 0) parts.push(`<p class="muted" id="cost-unavailable">Cost unavailable for every attempt (${model.cost.missing} unpriced): no cost distribution.</p>`)
  else {
    parts.push('<h3>Cost per attempt</h3>')
    parts.push(histogramChart({ id: 'cost-histogram', title: 'Attempts by cost (log scale, 4 bins per decade)', bins: histogramBins(model.cost, 'usd'), xLabel: 'cost per attempt (lower edge of each bin)' }))
    if (model.cost.missing > 0) parts.push(`<p class="muted">${model.cost.missing} attempts have no cost (unpriced model) and are not in the chart.</p>`)
  }
  parts.push('</section>')
  return parts.join('\n')
}

/** The sweep's recovery curve: the pass rate at each fail rate of the sweep, this run's point marked. */
function sweepCurve(model: ReportModel): string {
  const sweep = model.sweep
  if (!sweep || sweep.points.length === 0) return ''
  const chart = rateCurve({
    id: 'sweep-curve',
    title: `Pass rate at each fail rate of fault sweep ${sweep.sweep_id}, with Wilson 95% intervals`,
    points: sweep.points.map((p) => ({ x: `${fmt.pct(p.rate)}${p.run_id === model.run_id ? ' ◆' : ''}`, label: `fail rate ${fmt.pct(p.rate)} (run ${p.run_id})`, rate: p.pass.rate, low: p.pass.low, high: p.pass.high, k: p.pass.k, n: p.pass.n })),
    xLabel: `injected fail rate (${sweep.mode}); ◆ this run`,
  })
  const table = htmlTable({
    id: 'sweep-points',
    headers: ['fail rate', 'run', 'passed', 'pass rate', 'Wilson 95%', 'recovery rate', 'faults injected', 'drop vs lowest rate', 'p'],
    num: [0, 2, 3, 5, 6, 7, 8],
    rows: sweep.points.map((p) => [
      fmt.pct(p.rate),
      p.run_id === model.run_id ? `<strong>${esc(p.run_id)}</strong> (this run)` : esc(p.run_id),
      `${p.pass.k}/${p.pass.n}`,
      fmt.pct(p.pass.rate),
      fmt.interval(p.pass.low, p.pass.high),
      `${fmt.pct(p.recovery.rate)} (${p.recovery.k}/${p.recovery.n})`,
      String(p.injected),
      p.drop === null ? '—' : `${(p.drop * 100).toFixed(1)} pts${p.significant ? ' (significant)' : ''}`,
      p.p === null ? '—' : p.p.toFixed(3),
    ]),
    rowAttrs: sweep.points.map((p) =>
      `class="sweep-point" ${data({ 'fail-rate': p.rate, run: p.run_id, k: p.pass.k, n: p.pass.n, rate: p.pass.rate, low: p.pass.low, high: p.pass.high, current: p.run_id === model.run_id ? 'true' : 'false' })}`,
    ),
  })
  return `<h3>Recovery curve of fault sweep ${esc(sweep.sweep_id)}</h3>
<p class="muted">One point per fail rate: the sweep's runs share its seed, so each point measures the same attempts under more faults.</p>
${chart}
${table}`
}

function recoverySection(model: ReportModel): string {
  const r = model.recovery
  const sweep = sweepCurve(model)
  if (!r) return sweep === '' ? '' : `<section id="recovery"><h2>Recovery under injected faults</h2>\n${sweep}</section>`
  const curve = rateCurve({
    id: 'recovery-curve',
    title: 'Pass rate by injected faults met, with Wilson 95% intervals',
    points: r.curve.map((p) => ({ x: `${p.faults}${p.or_more ? '+' : ''}`, label: `${p.faults}${p.or_more ? '+' : ''} faults`, rate: p.rate, low: p.low, high: p.high, k: p.k, n: p.n })),
    xLabel: 'injected faults met by the attempt',
  })
  const kinds = htmlTable({
    id: 'fault-kinds',
    headers: ['fault', 'calls hit', 'attempts hit', 'attempts that still passed', 'recovery rate'],
    num: [1, 2, 3, 4],
    rows: model.fault_kinds.map((f) => [esc(f.fault), String(f.calls), String(f.attempts), String(f.recovered), fmt.pct(f.attempts === 0 ? null : f.recovered / f.attempts)]),
  })
  return `<section id="recovery"><h2>Recovery under injected faults</h2>
<div class="cards">${card('recovery rate (attempts that met a fault and passed)', fmt.pct(r.faulted.rate), `id="recovery-rate" ${data({ k: r.faulted.k, n: r.faulted.n, rate: r.faulted.rate })}`)}
${card('Wilson 95%', fmt.interval(r.faulted.low, r.faulted.high))}
${card('pass rate without faults', fmt.pct(r.clean.rate), data({ k: r.clean.k, n: r.clean.n }))}</div>
${sweep}
<h3>By faults met in this run</h3>
${curve}
${kinds}</section>`
}

function agreementSection(model: ReportModel): string {
  if (!model.agreement) return ''
  const label = { judge_grader: 'tier-0 judge graders', correctness_metric: 'correctness judge metric' }
  const rows = model.agreement.sources.map((s) => [
    esc(label[s.source]),
    String(s.agreement.n),
    fmt.num(s.agreement.kappa, 3),
    fmt.pct(s.agreement.raw_agreement),
    `<span class="${s.agreement.verdict === 'trustworthy' ? 'pass' : s.agreement.verdict === 'untrustworthy' ? 'fail' : 'muted'}">${esc(s.agreement.verdict)}</span>`,
    String(s.judge_only),
    esc(s.agreement.note),
  ])
  return `<section id="judge-agreement"><h2>Judge agreement</h2>
<p class="muted">Cohen's κ between the LLM judge and the programmatic graders on the attempts that have both (grading version ${model.agreement.grading_version}); below κ ≈ 0.7 the judge is not to be trusted. Unavailable is never zero.</p>
${htmlTable({ id: 'agreement', headers: ['judge source', 'overlap n', 'κ', 'raw agreement', 'verdict', 'judged without a programmatic grade', 'note'], num: [1, 2, 3, 5], rows, rowAttrs: model.agreement.sources.map((s) => data({ source: s.source, kappa: s.agreement.kappa, n: s.agreement.n })) })}
</section>`
}

function comparisonSection(c: CompareReport | null): string {
  if (!c) return ''
  const parts = [`<section id="comparison"><h2>Compared with ${c.baseline ? `baseline ${esc(c.baseline.name)}@${c.baseline.version} (run ${esc(c.a.run_id)})` : `run ${esc(c.a.run_id)}`}</h2>`]
  parts.push(
    c.regression
      ? `<p class="banner" id="regression-verdict">Regression: ${esc(Object.entries(c.findings).filter(([, n]) => n > 0).map(([k, n]) => `${k.replace('_', ' ')} ${n}`).join(', '))}</p>`
      : '<p id="regression-verdict" class="pass">No regression flagged.</p>',
  )
  for (const w of c.warnings) parts.push(`<p class="note">${esc(w)}</p>`)
  for (const suite of c.suites) {
    parts.push(`<h3>Suite ${esc(suite.suite)}: ${fmt.pct(suite.a.rate)} → ${fmt.pct(suite.b.rate)} (${fmt.pp(suite.delta)})</h3>`)
    parts.push(
      htmlTable({
        id: `regressions-${suite.suite.replace(/[^A-Za-z0-9_-]/g, '_')}`,
        headers: ['task', 'before k/n', 'before', 'now k/n', 'now', 'delta', 'test', 'p', 'q (BH-adjusted)', 'verdict', 'flagged measures'],
        num: [1, 2, 3, 4, 5, 7, 8],
        rows: suite.tasks.map((t) => [
          esc(t.task_id),
          `${t.a.k}/${t.a.n}`,
          fmt.pct(t.a.rate),
          `${t.b.k}/${t.b.n}`,
          fmt.pct(t.b.rate),
          fmt.pp(t.delta),
          esc(t.test),
          fmt.p(t.p),
          fmt.p(t.q),
          t.regressed ? '<span class="fail">regressed</span>' : t.improved ? '<span class="pass">improved</span>' : 'no significant change',
          esc(
            t.metrics
              .filter((m) => m.flagged)
              .map((m) => `${m.metric} ${m.relative === null ? '' : `${m.relative >= 0 ? '+' : ''}${(m.relative * 100).toFixed(0)}%`}`)
              .join(', ') || '—',
          ),
        ]),
        rowAttrs: suite.tasks.map((t) => `class="comparison-row" ${data({ task: t.task_id, delta: t.delta, p: t.p, q: t.q, verdict: t.regressed ? 'regressed' : t.improved ? 'improved' : 'unchanged' })}`),
      }),
    )
    if (suite.only_in_a.length + suite.only_in_b.length > 0) {
      parts.push(`<p class="muted">Only in the earlier run: ${esc(suite.only_in_a.join(', ') || 'none')}; only in this run: ${esc(suite.only_in_b.join(', ') || 'none')}.</p>`)
    }
    const changed = suite.tasks.flatMap((t) => t.tool_usage.filter((f) => f.flagged).map((f) => ({ t, f })))
    parts.push('<h3>Tool-pattern changes</h3>')
    parts.push(
      changed.length === 0
        ? '<p class="muted" id="tool-changes-none">No change in tool usage was significant after correction.</p>'
        : htmlTable({
            id: 'tool-changes',
            headers: ['task', 'pattern', 'before', 'now', 'q'],
            num: [2, 3, 4],
            rows: changed.map(({ t, f }) => [
              esc(t.task_id),
              esc(f.kind === 'uses_tool' ? `calls ${f.feature}` : `usual order: ${f.feature}`),
              `${f.a.k}/${f.a.n}`,
              `${f.b.k}/${f.b.n}`,
              fmt.p(f.q),
            ]),
          }),
    )
  }
  parts.push('</section>')
  return parts.join('\n')
}

function failedSection(model: ReportModel): string {
  const f = model.failed
  const linked = f.attempts.filter((a) => a.trace_href !== undefined).length
  const head = `<p class="muted">${f.total} attempts did not pass; ${f.attempts.length < f.total ? `the first ${f.attempts.length} (by task and attempt) are listed` : 'all are listed'}; ` +
    `${linked} link to a trace page. Any attempt: <code>forge trace --run-id ${esc(model.run_id)} --task &lt;task&gt; --attempt &lt;n&gt;</code> or browse with <code>forge ui</code>.</p>`
  if (f.attempts.length === 0) return `<section id="failed"><h2>Failed attempts</h2>${head}</section>`
  return `<section id="failed"><h2>Failed attempts</h2>${head}
${htmlTable({
  id: 'failed-attempts',
  headers: ['task', 'attempt', 'outcome', 'failure bucket', 'validity', 'latency ms', 'cost', 'error', 'trace'],
  num: [1, 5],
  rows: f.attempts.map((a) => [
    esc(a.task_id),
    String(a.attempt),
    esc(a.outcome),
    esc(a.failure_bucket || '—'),
    esc(a.validity),
    fmt.ms(a.latency_ms),
    fmt.usd(a.cost_usd),
    esc(a.error.length > 120 ? `${a.error.slice(0, 119)}…` : a.error),
    a.trace_href ? `<a class="trace-link" href="${esc(a.trace_href)}">trace</a>` : `<code class="small">forge trace --attempt-uid ${esc(a.attempt_uid)}</code>`,
  ]),
  rowAttrs: f.attempts.map((a) => data({ uid: a.attempt_uid, bucket: a.failure_bucket })),
})}
</section>`
}

/** The whole report document. */
export function renderReport(model: ReportModel): string {
  const banner = model.banner ? `<div class="banner" id="harness-banner" role="alert">${esc(model.banner.message)}</div>` : ''
  const body = `<header><h1>Forge report — run ${esc(model.run_id)}</h1>
<p class="muted">suite ${esc(model.stamps.suite)} · agent ${esc(model.stamps.adapter)} · generated ${esc(fmt.date(model.generated_at))} · every rate with k/n and a Wilson 95% interval; suite rates are unweighted means of task rates</p></header>
${banner}
<section id="stamps-section"><h2>Run stamps</h2>${stampsSection(model)}</section>
${suiteSection(model)}
${outcomesSection(model)}
${distributionsSection(model)}
${recoverySection(model)}
${agreementSection(model)}
${comparisonSection(model.comparison)}
${failedSection(model)}
<footer class="muted small"><p>Forge · self-contained report: no external assets, no network requests.</p></footer>`
  return page({ title: `Forge report — ${model.run_id}`, body })
}
