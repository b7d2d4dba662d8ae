/**
 * Pages of `forge ui`: runs → run → task → attempt (the trace page). Server-rendered, no script
 * needed to browse; every list is one bounded page with a link to the next.
 */
import type { RunStats } from '../stats.js'
import type { AttemptFilter, AttemptListEntry, RunPageEntry } from '../../store/report-queries.js'
import { esc, fmt, htmlTable, page } from './html.js'
import { wilsonChart } from './svg.js'

export const uiPaths = {
  runs: (offset = 0) => (offset > 0 ? `/?offset=${offset}` : '/'),
  run: (runId: string) => `/runs/${encodeURIComponent(runId)}`,
  report: (runId: string) => `/runs/${encodeURIComponent(runId)}/report`,
  attempts: (runId: string, opts: { taskId?: string; after?: { task_id: string; attempt: number }; filter?: AttemptFilter } = {}) => {
    const q = new URLSearchParams()
    if (opts.after) q.set('after', `${opts.after.task_id}/${opts.after.attempt}`)
    if (opts.filter?.outcome) q.set('outcome', opts.filter.outcome)
    if (opts.filter?.failure_bucket) q.set('bucket', opts.filter.failure_bucket)
    const base = opts.taskId !== undefined ? `/runs/${encodeURIComponent(runId)}/tasks/${encodeURIComponent(opts.taskId)}` : `/runs/${encodeURIComponent(runId)}/attempts`
    const query = q.toString()
    return query ? `${base}?${query}` : base
  },
  attempt: (uid: string) => `/attempts/${encodeURIComponent(uid)}`,
}

const crumbs = (parts: [string, string | null][]) =>
  `<nav class="crumbs">${parts.map(([label, href]) => (href ? `<a href="${esc(href)}">${esc(label)}</a>` : `<span>${esc(label)}</span>`)).join(' › ')}</nav>`

export function runsPageHtml(data: { total: number; offset: number; limit: number; runs: RunPageEntry[] }): string {
  const next = data.offset + data.runs.length < data.total ? `<a id="next" href="${esc(uiPaths.runs(data.offset + data.limit))}">next ${data.limit} →</a>` : ''
  const prev = data.offset > 0 ? `<a id="prev" href="${esc(uiPaths.runs(Math.max(0, data.offset - data.limit)))}">← previous</a> ` : ''
  const body = `${crumbs([['Runs', null]])}<h1>Runs</h1>
<p class="muted">${data.total} runs stored; showing ${data.runs.length === 0 ? 'none' : `${data.offset + 1}–${data.offset + data.runs.length}`}, newest first. Read-only.</p>
${htmlTable({
  id: 'runs',
  headers: ['run', 'started (UTC)', 'suite', 'agent', 'status', 'attempts stored / planned', 'passed', 'harness errors'],
  num: [5, 6, 7],
  rows: data.runs.map((r) => [
    `<a href="${esc(uiPaths.run(r.run_id))}">${esc(r.run_id)}</a>`,
    esc(fmt.date(r.started_at)),
    esc(r.suite),
    esc(r.adapter),
    esc(r.status),
    `${r.stored} / ${r.planned}`,
    `${r.passed} (${fmt.pct(r.stored === 0 ? null : r.passed / r.stored)})`,
    r.harness_errors > 0 ? `<span class="fail">${r.harness_errors}</span>` : '0',
  ]),
  rowAttrs: data.runs.map((r) => `data-run="${esc(r.run_id)}"`),
})}
<p>${prev}${next}</p>`
  return page({ title: 'Forge — runs', body })
}

export function runPageHtml(stats: RunStats, opts: { taskOffset: number; taskLimit: number; banner: string | null }): string {
  const run = stats.run
  const tasks = stats.tasks.slice(opts.taskOffset, opts.taskOffset + opts.taskLimit)
  const bucketLinks = Object.entries(stats.failure_buckets)
    .sort((a, b) => b[1] - a[1])
    .map(([bucket, n]) => `<a href="${esc(uiPaths.attempts(stats.run_id, { filter: { failure_bucket: bucket } }))}">${esc(bucket)} ${n}</a>`)
    .join(', ')
  const suites = stats.suites
    .map(
      (s) =>
        `<div class="card" id="suite-rate-${esc(s.suite)}" data-rate="${s.success.rate ?? 'null'}"><div class="v">${fmt.pct(s.success.rate)}</div><div class="l">suite ${esc(s.suite)}: unweighted mean of ${s.success.tasks} task rates</div></div>` +
        `<div class="card"><div class="v">${s.k} / ${s.n}</div><div class="l">attempts passed / all</div></div>` +
        `<div class="card"><div class="v">${fmt.usd(s.cost.per_success_usd)}</div><div class="l">cost per success</div></div>` +
        `<div class="card"><div class="v">${s.latency_ms ? `${fmt.ms(s.latency_ms.p50)} / ${fmt.ms(s.latency_ms.p90)}` : 'n/a'}</div><div class="l">latency p50 / p90 ms</div></div>`,
    )
    .join('')
  const taskNav = [
    opts.taskOffset > 0 ? `<a href="?task_offset=${Math.max(0, opts.taskOffset - opts.taskLimit)}">← previous tasks</a>` : '',
    opts.taskOffset + tasks.length < stats.tasks.length ? `<a id="next-tasks" href="?task_offset=${opts.taskOffset + opts.taskLimit}">next ${opts.taskLimit} tasks →</a>` : '',
  ].join(' ')
  const body = `${crumbs([['Runs', uiPaths.runs()], [stats.run_id, null]])}
<h1>Run ${esc(stats.run_id)}</h1>
<p class="muted">suite ${esc(run?.suite ?? '')} · agent ${esc(run?.adapter ?? '')} · ${esc(run?.status ?? 'no run record')} · seed ${esc(run?.seed ?? '')} · started ${esc(fmt.date(run?.started_at))} ·
<a id="report-link" href="${esc(uiPaths.report(stats.run_id))}">full report</a> · <a href="${esc(uiPaths.attempts(stats.run_id))}">all attempts</a> · <a href="?format=json">JSON</a></p>
${opts.banner ? `<div class="banner" id="harness-banner" role="alert">${esc(opts.banner)}</div>` : ''}
<div class="cards">${suites}</div>
<p>outcomes: ${Object.entries(stats.outcomes)
    .map(([o, n]) => `<a href="${esc(uiPaths.attempts(stats.run_id, { filter: { outcome: o } }))}">${esc(o)} ${n}</a>`)
    .join(', ')} · validity: ${esc(fmt.counts(stats.validity))} · failure buckets: ${bucketLinks || 'none'}</p>
<h2>Tasks (${stats.tasks.length})</h2>
${wilsonChart({ id: 'wilson', title: 'Success per task with Wilson 95% intervals', rows: tasks.map((t) => ({ label: t.task_id, rate: t.rate, low: t.low, high: t.high, k: t.k, n: t.n })) })}
${htmlTable({
  id: 'tasks',
  headers: ['task', 'k/n', 'success', 'Wilson 95%', 'p50 ms', 'cost/attempt', 'failure buckets'],
  num: [1, 2, 4, 5],
  rows: tasks.map((t) => [
    `<a href="${esc(uiPaths.attempts(stats.run_id, { taskId: t.task_id }))}">${esc(t.task_id)}</a>`,
    `${t.k}/${t.n}`,
    fmt.pct(t.rate),
    fmt.interval(t.low, t.high),
    fmt.ms(t.latency_ms?.p50),
    fmt.usd(t.cost.per_attempt_usd),
    esc(fmt.counts(t.failure_buckets)),
  ]),
  rowAttrs: tasks.map((t) => `class="task-row" data-task="${esc(t.task_id)}" data-k="${t.k}" data-n="${t.n}"`),
})}
<p>${taskNav}</p>`
  return page({ title: `Forge — run ${stats.run_id}`, body })
}

export function attemptsPageHtml(data: { runId: string; taskId?: string; filter: AttemptFilter; total: number; limit: number; attempts: AttemptListEntry[] }): string {
  const last = data.attempts.at(-1)
  const next =
    last && data.attempts.length === data.limit
      ? `<a id="next" href="${esc(uiPaths.attempts(data.runId, { ...(data.taskId !== undefined ? { taskId: data.taskId } : {}), after: last, filter: data.filter }))}">next ${data.limit} →</a>`
      : ''
  const what = [data.taskId !== undefined ? `task ${data.taskId}` : 'all tasks', data.filter.outcome ? `outcome ${data.filter.outcome}` : '', data.filter.failure_bucket ? `bucket ${data.filter.failure_bucket}` : '']
    .filter(Boolean)
    .join(', ')
  const body = `${crumbs([['Runs', uiPaths.runs()], [data.runId, uiPaths.run(data.runId)], [data.taskId ?? 'attempts', null]])}
<h1>Attempts — ${esc(what)}</h1>
<p class="muted">${data.total} attempts match; ${data.attempts.length} on this page (by task and attempt). <a href="?${esc(new URLSearchParams({ ...(data.filter.outcome ? { outcome: data.filter.outcome } : {}), ...(data.filter.failure_bucket ? { bucket: data.filter.failure_bucket } : {}), format: 'json' }).toString())}">JSON</a></p>
${htmlTable({
  id: 'attempts',
  headers: ['task', 'attempt', 'outcome', 'failure bucket', 'validity', 'latency ms', 'tool calls', 'tokens in/out', 'cost', 'worker', 'error'],
  num: [1, 5, 6],
  rows: data.attempts.map((a) => [
    esc(a.task_id),
    `<a href="${esc(uiPaths.attempt(a.attempt_uid))}">#${a.attempt}</a>`,
    `<span class="${a.outcome === 'pass' ? 'pass' : 'fail'}">${esc(a.outcome)}</span>`,
    esc(a.failure_bucket || '—'),
    esc(a.validity),
    fmt.ms(a.latency_ms),
    String(a.tool_call_count),
    `${a.input_tokens} / ${a.output_tokens}`,
    fmt.usd(a.cost_usd),
    esc(a.worker_id),
    esc(a.error.length > 100 ? `${a.error.slice(0, 99)}…` : a.error),
  ]),
  rowAttrs: data.attempts.map((a) => `class="attempt-row" data-uid="${esc(a.attempt_uid)}"`),
})}
<p>${next}</p>`
  return page({ title: `Forge — ${data.runId} attempts`, body })
}

export function notFoundHtml(message: string): string {
  return page({ title: 'Forge — not found', body: `${crumbs([['Runs', uiPaths.runs()]])}<h1>Not found</h1><p>${esc(message)}</p>` })
}
