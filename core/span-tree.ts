/**
 * The span tree of one stored attempt: what `forge trace` prints and draws, what `forge run`'s
 * step logs and the OTLP export walk. Spans nest by `parent_span_id`; tool spans (`tool-<index>`)
 * get their call's arguments, result, error, refusal and injected fault; the grading span gets one
 * child per grade and invariant and the verdict; tier 2 marks the step where the run went wrong.
 * Pure: built only from the stored trace and the facts passed in.
 */
import type { Grade, InvariantResult, Span, StoredTrace, Tier2Result, ToolCall } from './contracts/index.js'

export type TraceNodeKind = Span['category'] | 'grade' | 'invariant' | 'verdict' | 'tier2'

export type TraceNodeStatus = 'ok' | 'error' | 'refused' | 'passed' | 'failed' | 'info'

/** One labelled value of a node; `block` values (JSON, long text) are shown preformatted. */
export interface TraceField {
  label: string
  value: string
  block?: boolean
}

export interface TraceNode {
  /** the span id, or a synthetic id for grades, invariants and the verdict (`grading/grade-0`) */
  id: string
  parent_id: string | null
  depth: number
  kind: TraceNodeKind
  name: string
  /** ms since the attempt started; null for synthetic nodes */
  start_ms: number | null
  duration_ms: number | null
  status: TraceNodeStatus
  /** what a reader must not miss: injected faults, budget refusals, tier-2 localisation */
  marks: string[]
  fields: TraceField[]
  children: TraceNode[]
}

/** Facts about the attempt that the stored trace does not hold (from its `attempts` row and judgement). */
export interface AttemptFacts {
  model?: string
  cost_usd?: number | null
  latency_ms?: number
  input_tokens?: number
  output_tokens?: number
  tier2?: Tier2Result | null
  needs_human_review?: boolean
  review_reasons?: string[]
}

export interface TraceView {
  attempt_uid: string
  run_id: string
  config_id: string
  suite: string
  task_id: string
  attempt: number
  outcome: StoredTrace['outcome']
  validity: StoredTrace['validity']
  failure_bucket: string | null
  model: string
  cost_usd: number | null
  latency_ms: number | null
  input_tokens: number
  output_tokens: number
  /** what had to be cut to store the trace (e.g. `tool_results`, `spans`) */
  truncated: string[]
  output: string
  self_report: string
  errors: { kind: string; message: string }[]
  budget_exhausted: string | null
  tier2: Tier2Result | null
  needs_human_review: boolean
  review_reasons: string[]
  /** the root (the attempt span), or several roots when the trace has no attempt span */
  roots: TraceNode[]
  /** every node in depth-first order */
  nodes: number
}

/** JSON of a stored value, pretty-printed; strings stay as they are. */
export function showValue(value: unknown): string {
  if (value === undefined) return ''
  if (typeof value === 'string') return value
  try {
    return JSON.stringify(value, null, 2) ?? String(value)
  } catch {
    return String(value)
  }
}

const TOOL_SPAN = /^tool-(\d+)$/

function toolFields(call: ToolCall): TraceField[] {
  const fields: TraceField[] = [{ label: 'arguments', value: showValue(call.args), block: true }]
  if (call.result !== undefined) fields.push({ label: 'result', value: showValue(call.result), block: true })
  if (call.error !== undefined) fields.push({ label: 'error', value: call.error, block: call.error.length > 80 })
  if (call.retry_index > 0) fields.push({ label: 'retry', value: String(call.retry_index) })
  return fields
}

function toolMarks(call: ToolCall): string[] {
  const marks: string[] = []
  if (call.injected_fault !== undefined && call.injected_fault !== '') marks.push(`injected fault: ${call.injected_fault}`)
  if (call.refused === 'budget_exhausted') marks.push('budget refusal')
  else if (call.refused !== undefined) marks.push(`refused: ${call.refused}`)
  return marks
}

function toolStatus(call: ToolCall): TraceNodeStatus {
  if (call.refused !== undefined) return 'refused'
  return call.error !== undefined ? 'error' : 'ok'
}

const num = (value: unknown): number | undefined => (typeof value === 'number' && Number.isFinite(value) ? value : undefined)

/** Tokens, cost, status and the rest of a model span's attributes, as fields. */
function modelFields(attributes: Record<string, unknown>): TraceField[] {
  const fields: TraceField[] = []
  const input = num(attributes['input_tokens'])
  const output = num(attributes['output_tokens'])
  if (input !== undefined || output !== undefined) fields.push({ label: 'tokens', value: `${input ?? 0} in, ${output ?? 0} out` })
  if ('cost_usd' in attributes) fields.push({ label: 'cost', value: attributes['cost_usd'] === null ? 'unavailable (unpriced model)' : formatUsd(num(attributes['cost_usd']) ?? 0) })
  for (const [key, value] of Object.entries(attributes)) {
    if (['input_tokens', 'output_tokens', 'cost_usd', 'status', 'latency_ms'].includes(key)) continue
    fields.push({ label: key.replaceAll('_', ' '), value: showValue(value), block: typeof value === 'object' && value !== null })
  }
  return fields
}

function attributeFields(attributes: Record<string, unknown>): TraceField[] {
  return Object.entries(attributes)
    .filter(([key]) => key !== 'status')
    .map(([key, value]) => ({ label: key.replaceAll('_', ' '), value: showValue(value), block: typeof value === 'object' && value !== null }))
}

function spanStatus(span: Span): TraceNodeStatus {
  const status = span.attributes['status']
  if (typeof status !== 'string') return span.attributes['error'] !== undefined ? 'error' : 'info'
  if (status === 'ok' || status === 'ready' || status === 'restored' || status === 'returned') return 'ok'
  if (['hallucinated_tool', 'disallowed_tool', 'malformed_tool_call', 'budget_exhausted'].includes(status)) return 'refused'
  return 'error'
}

/** US dollars with enough digits for sub-cent amounts. */
export function formatUsd(x: number): string {
  if (x === 0) return '$0'
  return Math.abs(x) < 0.01 ? `$${x.toPrecision(3)}` : `$${x.toFixed(4)}`
}

function gradeNode(grade: Grade, index: number, parent: string): TraceNode {
  const fields: TraceField[] = [{ label: 'score', value: grade.score.toFixed(2) }]
  if (grade.detail !== '') fields.push({ label: 'detail', value: grade.detail, block: grade.detail.length > 80 })
  if (grade.judge) fields.push({ label: 'judge', value: `${grade.judge.model} (prompt ${grade.judge.prompt_version})` })
  return {
    id: `${parent}/grade-${index}`,
    parent_id: parent,
    depth: 0,
    kind: 'grade',
    name: `grader ${grade.grader}: ${grade.passed ? 'passed' : 'failed'}`,
    start_ms: null,
    duration_ms: null,
    status: grade.passed ? 'passed' : 'failed',
    marks: grade.violation ? [`violation: ${grade.violation}`] : [],
    fields,
    children: [],
  }
}

function invariantNode(result: InvariantResult, index: number, parent: string): TraceNode {
  return {
    id: `${parent}/invariant-${index}`,
    parent_id: parent,
    depth: 0,
    kind: 'invariant',
    name: `invariant ${result.name}: ${result.passed ? 'held' : 'broken'}`,
    start_ms: null,
    duration_ms: null,
    status: result.passed ? 'passed' : 'failed',
    marks: [],
    fields: result.detail === '' ? [] : [{ label: 'detail', value: result.detail }],
    children: [],
  }
}

function verdictNode(stored: StoredTrace, parent: string): TraceNode {
  const fields: TraceField[] = [
    { label: 'outcome', value: stored.outcome },
    { label: 'validity', value: stored.validity },
  ]
  if (stored.failure_bucket !== null) fields.push({ label: 'failure bucket', value: stored.failure_bucket })
  return {
    id: `${parent}/verdict`,
    parent_id: parent,
    depth: 0,
    kind: 'verdict',
    name: `verdict: ${stored.outcome}${stored.failure_bucket ? ` (${stored.failure_bucket})` : ''}, ${stored.validity}`,
    start_ms: null,
    duration_ms: null,
    status: stored.outcome === 'pass' ? 'passed' : 'failed',
    marks: [],
    fields,
    children: [],
  }
}

function tier2Node(tier2: Tier2Result, parent: string): TraceNode {
  const fields: TraceField[] = [{ label: 'status', value: tier2.status }]
  if (tier2.divergence_step !== null) fields.push({ label: 'divergence step', value: String(tier2.divergence_step) })
  if (tier2.decision !== '') fields.push({ label: 'decision', value: tier2.decision })
  if (tier2.explanation !== '') fields.push({ label: 'explanation', value: tier2.explanation, block: tier2.explanation.length > 80 })
  if (tier2.confidence !== null) fields.push({ label: 'confidence', value: tier2.confidence.toFixed(2) + (tier2.low_confidence ? ' (low)' : '') })
  if (tier2.error !== '') fields.push({ label: 'error', value: tier2.error })
  if (tier2.judge) fields.push({ label: 'judge', value: `${tier2.judge.model} (prompt ${tier2.judge.prompt_version})` })
  return {
    id: `${parent}/tier2`,
    parent_id: parent,
    depth: 0,
    kind: 'tier2',
    name: `tier 2 golden divergence: ${tier2.status}${tier2.divergence_step !== null ? ` at step ${tier2.divergence_step}` : ''}`,
    start_ms: null,
    duration_ms: null,
    status: tier2.status === 'errored' ? 'error' : 'info',
    marks: [],
    fields,
    children: [],
  }
}

/** The spans of a trace, or — when they were cut to fit the store — an attempt, agent and tool spans rebuilt from the calls. */
function spansOf(stored: StoredTrace): Span[] {
  if (stored.trace.spans.length > 0) return stored.trace.spans
  const uid = stored.attempt_uid
  return [
    { span_id: 'attempt', parent_span_id: null, category: 'attempt', name: uid, start_ms: 0, duration_ms: stored.trace.duration_ms, attributes: {} },
    { span_id: 'agent', parent_span_id: 'attempt', category: 'agent', name: 'agent', start_ms: 0, duration_ms: stored.trace.duration_ms, attributes: {} },
    ...stored.trace.tool_calls.map(
      (call): Span => ({ span_id: `tool-${call.index}`, parent_span_id: 'agent', category: 'tool', name: call.name, start_ms: call.started_ms, duration_ms: call.duration_ms, attributes: {} }),
    ),
  ]
}

/** The span tree of one stored attempt, with its header facts. */
export function buildTraceView(stored: StoredTrace, facts: AttemptFacts = {}): TraceView {
  const calls = new Map(stored.trace.tool_calls.map((call) => [call.index, call]))
  const spans = spansOf(stored)
  const tier2 = facts.tier2 ?? null
  // tier 2 counts tool calls in order (1-based), then the final answer
  const divergentCall = tier2?.divergence_step != null && tier2.divergence_step <= stored.trace.tool_calls.length ? stored.trace.tool_calls[tier2.divergence_step - 1] : undefined

  const nodes = new Map<string, TraceNode>()
  const order: TraceNode[] = []
  for (const span of spans) {
    if (nodes.has(span.span_id)) continue // a duplicate id keeps its first span
    const toolIndex = span.category === 'tool' ? TOOL_SPAN.exec(span.span_id) : null
    const call = toolIndex ? calls.get(Number(toolIndex[1])) : undefined
    const node: TraceNode = {
      id: span.span_id,
      parent_id: span.parent_span_id,
      depth: 0,
      kind: span.category,
      name: span.category === 'tool' ? `tool ${span.name}` : span.category === 'model' ? `model ${span.name}` : span.name,
      start_ms: span.start_ms,
      duration_ms: span.duration_ms,
      status: call ? toolStatus(call) : spanStatus(span),
      marks: call ? toolMarks(call) : [],
      fields: call ? toolFields(call) : span.category === 'model' ? modelFields(span.attributes) : attributeFields(span.attributes),
      children: [],
    }
    if (call && divergentCall === call) node.marks.push(`tier 2: earliest wrong decision (step ${tier2!.divergence_step})`)
    if (span.category === 'agent' && stored.trace.budget_exhausted) node.marks.push(`stopped at budget ${stored.trace.budget_exhausted}`)
    if (span.category === 'agent' && stored.trace.refused) node.marks.push('the agent declined the task')
    if (span.category === 'attempt') {
      node.name = `attempt ${stored.task_id} #${stored.attempt}`
      node.status = stored.outcome === 'pass' ? 'passed' : 'failed'
    }
    nodes.set(node.id, node)
    order.push(node)
  }

  const grading = order.find((n) => n.kind === 'grading')
  const gradeParent = grading ?? undefined
  const synthetic: TraceNode[] = [
    ...stored.grades.map((g, i) => gradeNode(g, i, gradeParent?.id ?? 'grading')),
    ...stored.invariants.map((inv, i) => invariantNode(inv, i, gradeParent?.id ?? 'grading')),
    verdictNode(stored, gradeParent?.id ?? 'grading'),
    ...(tier2 && tier2.status !== 'not_applicable' ? [tier2Node(tier2, gradeParent?.id ?? 'grading')] : []),
  ]

  const roots: TraceNode[] = []
  const root = order.find((n) => n.parent_id === null && n.kind === 'attempt') ?? order.find((n) => n.parent_id === null)
  for (const node of order) {
    const parent = node.parent_id === null ? undefined : nodes.get(node.parent_id)
    // an orphan (its parent never recorded) or a cycle hangs from the root rather than vanishing
    if (parent && parent !== node && !isAncestor(node, parent, nodes)) parent.children.push(node)
    else if (node === root || !root) roots.push(node)
    else root.children.push(node)
  }
  if (gradeParent) gradeParent.children.push(...synthetic)
  else if (root) root.children.push(gradingPlaceholder(synthetic, root.id))
  else roots.push(gradingPlaceholder(synthetic, null))

  let count = 0
  const visit = (node: TraceNode, depth: number): void => {
    node.depth = depth
    count++
    // stable: equal starts keep recorded order (grading before restore); synthetic nodes stay last, in order
    node.children = stableSortBy(node.children, (child) => child.start_ms ?? Number.POSITIVE_INFINITY)
    for (const child of node.children) visit(child, depth + 1)
  }
  for (const r of roots) visit(r, 0)

  return {
    attempt_uid: stored.attempt_uid,
    run_id: stored.run_id,
    config_id: stored.config_id,
    suite: stored.suite,
    task_id: stored.task_id,
    attempt: stored.attempt,
    outcome: stored.outcome,
    validity: stored.validity,
    failure_bucket: stored.failure_bucket,
    model: facts.model ?? '',
    cost_usd: facts.cost_usd ?? null,
    latency_ms: facts.latency_ms ?? null,
    input_tokens: facts.input_tokens ?? stored.trace.usage.input_tokens,
    output_tokens: facts.output_tokens ?? stored.trace.usage.output_tokens,
    truncated: stored.truncated,
    output: showValue(stored.trace.output),
    self_report: stored.trace.self_report ?? '',
    errors: stored.trace.errors,
    budget_exhausted: stored.trace.budget_exhausted ?? null,
    tier2,
    needs_human_review: facts.needs_human_review ?? false,
    review_reasons: facts.review_reasons ?? [],
    roots,
    nodes: count,
  }
}

function gradingPlaceholder(children: TraceNode[], parent: string | null): TraceNode {
  return {
    id: 'grading',
    parent_id: parent,
    depth: 0,
    kind: 'grading',
    name: 'grade',
    start_ms: null,
    duration_ms: null,
    status: 'info',
    marks: [],
    fields: [],
    children: children.map((c) => ({ ...c, parent_id: 'grading' })),
  }
}

function isAncestor(candidate: TraceNode, of: TraceNode, nodes: Map<string, TraceNode>): boolean {
  let current: TraceNode | undefined = of
  const seen = new Set<string>()
  while (current && !seen.has(current.id)) {
    if (current === candidate) return true
    seen.add(current.id)
    current = current.parent_id === null ? undefined : nodes.get(current.parent_id)
  }
  // a loop above `of` that does not pass through `candidate`: its own members are detached when they are placed
  return false
}

function stableSortBy<T>(values: readonly T[], key: (value: T) => number): T[] {
  return values
    .map((value, index) => ({ value, index, k: key(value) }))
    .sort((a, b) => a.k - b.k || a.index - b.index)
    .map((x) => x.value)
}

/** Every node of a view, depth first (parents before children, children in start order). */
export function flattenTrace(view: Pick<TraceView, 'roots'>): TraceNode[] {
  const out: TraceNode[] = []
  const walk = (node: TraceNode): void => {
    out.push(node)
    node.children.forEach(walk)
  }
  view.roots.forEach(walk)
  return out
}
