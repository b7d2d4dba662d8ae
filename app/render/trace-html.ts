/**
 * One attempt's trace as a self-contained HTML page: the header facts, then the span tree
 * (attempt → environment seed/verify → agent → model and tool calls → grading → restore), each node
 * collapsible by vanilla JS, with a waterfall bar of its timing, its fields (arguments, results,
 * tokens, cost — redacted as stored) and marks for injected faults, budget refusals and tier 2.
 */
import { formatUsd, type TraceNode, type TraceView } from '../../core/span-tree.js'
import { esc, fmt, page } from './html.js'

export interface TraceRenderOptions {
  /** a link back (the report, or the UI's task page) */
  backHref?: string
  backLabel?: string
}

const CSS = `
.tree, .tree ul { list-style: none; margin: 0; padding: 0; }
.tree ul { margin-left: 18px; border-left: 1px dotted var(--line); padding-left: 6px; }
.node > .row { display: grid; grid-template-columns: 22px minmax(260px, 1fr) 120px 240px; align-items: center; gap: 6px; padding: 2px 0; }
.node > .row:hover { background: var(--soft); }
.toggle { border: 0; background: none; cursor: pointer; width: 20px; font-size: 12px; color: var(--muted); padding: 0; }
.toggle[disabled] { cursor: default; visibility: hidden; }
.name { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.kind { display: inline-block; min-width: 54px; font-size: 11px; color: var(--muted); text-transform: uppercase; }
.time { font-size: 12px; color: var(--muted); text-align: right; font-variant-numeric: tabular-nums; }
.wf { position: relative; height: 8px; background: var(--soft); }
.wf span { position: absolute; top: 0; height: 8px; background: #8aa7dd; min-width: 1px; }
.status-error > .row .name, .status-failed > .row .name { color: var(--fail); }
.status-refused > .row .name { color: var(--warn); }
.status-passed > .row .name { color: var(--pass); }
.mark { display: inline-block; font-size: 11px; padding: 0 5px; margin-left: 6px; border-radius: 3px; background: #fff1d6; color: #7a4a00; border: 1px solid #f0c36d; }
.mark.fault { background: #fde2e2; color: #8a1c1c; border-color: #f3a5a5; }
.fields { margin: 0 0 4px 28px; display: grid; grid-template-columns: 120px 1fr; gap: 2px 10px; font-size: 12px; }
.fields dt { color: var(--muted); } .fields dd { margin: 0; }
.node.collapsed > .fields, .node.collapsed > ul { display: none; }
.toolbar { margin: 10px 0; } .toolbar button { margin-right: 6px; }
`

const SCRIPT = `
(function () {
  function setCollapsed(li, collapsed) {
    li.classList.toggle('collapsed', collapsed);
    var t = li.querySelector(':scope > .row > .toggle');
    if (t && !t.disabled) { t.textContent = collapsed ? '\\u25B8' : '\\u25BE'; t.setAttribute('aria-expanded', String(!collapsed)); }
  }
  document.querySelectorAll('.node > .row > .toggle').forEach(function (t) {
    t.addEventListener('click', function () { var li = t.closest('.node'); setCollapsed(li, !li.classList.contains('collapsed')); });
  });
  document.getElementById('expand-all').addEventListener('click', function () { document.querySelectorAll('.node').forEach(function (li) { setCollapsed(li, false); }); });
  document.getElementById('collapse-all').addEventListener('click', function () { document.querySelectorAll('.node').forEach(function (li) { if (li.querySelector(':scope > ul, :scope > .fields')) setCollapsed(li, true); }); });
})();
`

function markHtml(mark: string): string {
  return `<span class="mark${mark.startsWith('injected fault') ? ' fault' : ''}">${esc(mark)}</span>`
}

function nodeHtml(node: TraceNode, total: number): string {
  const expandable = node.children.length > 0 || node.fields.length > 0
  const timing = node.start_ms === null ? '' : `${Math.round(node.start_ms)} ms +${Math.round(node.duration_ms ?? 0)} ms`
  const left = node.start_ms === null || total <= 0 ? 0 : Math.min(100, (node.start_ms / total) * 100)
  const width = node.duration_ms === null || total <= 0 ? 0 : Math.min(100 - left, ((node.duration_ms ?? 0) / total) * 100)
  const waterfall = node.start_ms === null ? '<div></div>' : `<div class="wf" title="${esc(timing)}"><span style="left:${left.toFixed(2)}%;width:${width.toFixed(2)}%"></span></div>`
  const fields =
    node.fields.length === 0
      ? ''
      : `<dl class="fields">${node.fields.map((f) => `<dt>${esc(f.label)}</dt><dd>${f.block ? `<pre>${esc(f.value)}</pre>` : esc(f.value)}</dd>`).join('')}</dl>`
  const children = node.children.length === 0 ? '' : `<ul role="group">${node.children.map((c) => nodeHtml(c, total)).join('')}</ul>`
  return (
    `<li class="node kind-${esc(node.kind)} status-${esc(node.status)}" role="treeitem" data-span-id="${esc(node.id)}" data-depth="${node.depth}" data-kind="${esc(node.kind)}">` +
    `<div class="row"><button class="toggle" type="button" aria-expanded="true" aria-label="collapse or expand ${esc(node.name)}"${expandable ? '' : ' disabled'}>${expandable ? '\u25BE' : ''}</button>` +
    `<span class="name"><span class="kind">${esc(node.kind)}</span><span class="label">${esc(node.name)}</span>${node.marks.map(markHtml).join('')}</span>` +
    `<span class="time">${esc(timing)}</span>${waterfall}</div>${fields}${children}</li>`
  )
}

/** The trace page of one attempt. */
export function renderTrace(view: TraceView, opts: TraceRenderOptions = {}): string {
  const total = Math.max(1, ...flatten(view.roots).map((n) => (n.start_ms ?? 0) + (n.duration_ms ?? 0)))
  const facts: [string, string][] = [
    ['attempt uid', view.attempt_uid],
    ['run', view.run_id],
    ['suite', view.suite],
    ['task', `${view.task_id} #${view.attempt}`],
    ['outcome', `${view.outcome}${view.failure_bucket ? ` (${view.failure_bucket})` : ''}`],
    ['validity', view.validity],
    ['model', view.model || 'n/a'],
    ['tokens', `${view.input_tokens} in, ${view.output_tokens} out`],
    ['cost', view.cost_usd === null ? 'n/a (unpriced)' : formatUsd(view.cost_usd)],
    ['latency', view.latency_ms === null ? 'n/a' : `${fmt.ms(view.latency_ms)} ms`],
  ]
  if (view.budget_exhausted) facts.push(['budget', `stopped at ${view.budget_exhausted}`])
  if (view.tier2 && view.tier2.status !== 'not_applicable') {
    facts.push(['tier 2', `${view.tier2.status}${view.tier2.divergence_step !== null ? ` at step ${view.tier2.divergence_step}: ${view.tier2.decision}` : ''}`])
  }
  if (view.needs_human_review) facts.push(['human review', view.review_reasons.join('; ') || 'flagged'])
  const notes = [
    view.truncated.length > 0 ? `<p class="note">The stored trace was cut to fit the store: ${esc(view.truncated.join(', '))}.</p>` : '',
    ...view.errors.map((e) => `<p class="note">error (${esc(e.kind)}): ${esc(e.message)}</p>`),
  ].join('')
  const back = opts.backHref ? `<nav class="crumbs"><a id="back" href="${esc(opts.backHref)}">← ${esc(opts.backLabel ?? 'back')}</a></nav>` : ''
  const body = `${back}<h1>Trace — ${esc(view.task_id)} #${view.attempt} <span class="${view.outcome === 'pass' ? 'pass' : 'fail'}">${esc(view.outcome)}</span></h1>
<table id="facts">${facts.map(([k, v]) => `<tr><th>${esc(k)}</th><td>${esc(v)}</td></tr>`).join('')}</table>
${notes}
<h2>Span tree</h2>
<div class="toolbar"><button id="expand-all" type="button">Expand all</button><button id="collapse-all" type="button">Collapse all</button>
<span class="muted small">${view.nodes} nodes · times in ms since the attempt started</span></div>
<ul class="tree" role="tree" id="tree">${view.roots.map((r) => nodeHtml(r, total)).join('')}</ul>
<h2>Output</h2><pre id="output">${esc(view.output || '(none)')}</pre>
${view.self_report ? `<h3>Self-report <span class="muted small">(the agent's own account: kept, never graded)</span></h3><pre id="self-report">${esc(view.self_report)}</pre>` : ''}`
  return page({ title: `Forge trace — ${view.attempt_uid}`, body, css: CSS, script: SCRIPT })
}

function flatten(nodes: TraceNode[]): TraceNode[] {
  return nodes.flatMap((n) => [n, ...flatten(n.children)])
}
