/**
 * Log records of a run, as seed aeh specifies them: levels `silent < progress < steps < calls <
 * trace`, categories (tools, model, grading, faults, scheduler, cost) that `--log-only` and
 * `--log-exclude` select, and on every record run_id, task_id, attempt, span_id, parent_span_id and
 * category — the same fields in `forge run`'s output and in worker logs. Records of one attempt come
 * from its span tree, so parallel tool calls nest under the span that made them. Pure.
 */
import { flattenTrace, type TraceNode, type TraceView } from './span-tree.js'
import { formatUsd } from './span-tree.js'

export const LOG_LEVELS = ['silent', 'progress', 'steps', 'calls', 'trace'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]
export const LOG_CATEGORIES = ['tools', 'model', 'grading', 'faults', 'scheduler', 'cost'] as const
export type LogCategory = (typeof LOG_CATEGORIES)[number]
export const LOG_FORMATS = ['pretty', 'jsonl'] as const
export type LogFormat = (typeof LOG_FORMATS)[number]

export interface LogRecord {
  /** the lowest level that shows this record */
  level: Exclude<LogLevel, 'silent'>
  category: LogCategory
  run_id: string
  /** '' for run-wide records */
  task_id: string
  /** null for run-wide and task-wide records */
  attempt: number | null
  span_id: string | null
  parent_span_id: string | null
  /** nesting depth for pretty output (span depth; run-wide records 0) */
  depth: number
  msg: string
  /** extra structured data (arguments, results, counts) */
  data?: Record<string, unknown>
}

export interface LogFilter {
  level: LogLevel
  /** only these categories (empty: all) */
  only: readonly LogCategory[]
  exclude: readonly LogCategory[]
}

export const DEFAULT_LOG_FILTER: LogFilter = { level: 'progress', only: [], exclude: [] }

/** Does the filter let this record through? */
export function shows(filter: LogFilter, record: Pick<LogRecord, 'level' | 'category'>): boolean {
  if (LOG_LEVELS.indexOf(record.level) > LOG_LEVELS.indexOf(filter.level)) return false
  if (filter.only.length > 0 && !filter.only.includes(record.category)) return false
  return !filter.exclude.includes(record.category)
}

/** The lowest level at which any record of an attempt's trace shows: what a consumer must subscribe to. */
export function needsTraces(filter: LogFilter): boolean {
  return LOG_LEVELS.indexOf(filter.level) >= LOG_LEVELS.indexOf('steps')
}

function categoryOf(node: TraceNode): LogCategory {
  switch (node.kind) {
    case 'tool':
      return 'tools'
    case 'model':
      return 'model'
    case 'grading':
    case 'grade':
    case 'invariant':
    case 'verdict':
    case 'tier2':
      return 'grading'
    default:
      return 'scheduler'
  }
}

/** Which level a node of the span tree belongs to: the attempt's steps, or the calls within them. */
function levelOf(node: TraceNode): 'steps' | 'calls' {
  return node.kind === 'tool' || node.kind === 'model' || node.kind === 'grade' || node.kind === 'invariant' || node.kind === 'tier2' ? 'calls' : 'steps'
}

/**
 * Every record of one attempt, in tree order: a record per span (steps: attempt, fixtures, agent,
 * grading, verdict; calls: model and tool calls, grades), one per injected fault, a cost record,
 * and at `trace` level the arguments and results of each call.
 */
export function attemptRecords(view: TraceView): LogRecord[] {
  const records: LogRecord[] = []
  const base = { run_id: view.run_id, task_id: view.task_id, attempt: view.attempt }
  const timing = (node: TraceNode) => (node.start_ms === null ? '' : ` @${Math.round(node.start_ms)}ms +${Math.round(node.duration_ms ?? 0)}ms`)
  for (const node of flattenTrace(view)) {
    // grades, invariants and the verdict say their result in their name
    const status = node.status === 'info' || node.start_ms === null ? '' : ` ${node.status}`
    const marks = node.marks.length > 0 ? ` [${node.marks.join('; ')}]` : ''
    const record: LogRecord = {
      level: levelOf(node),
      category: categoryOf(node),
      ...base,
      span_id: node.id,
      parent_span_id: node.parent_id,
      depth: node.depth,
      msg: `${node.name}${timing(node)}${status}${marks}`,
    }
    records.push(record)
    for (const mark of node.marks.filter((m) => m.startsWith('injected fault'))) {
      records.push({ ...record, level: 'calls', category: 'faults', depth: node.depth + 1, msg: `${mark} on ${node.name}` })
    }
    if (node.kind === 'model') {
      const tokens = node.fields.find((f) => f.label === 'tokens')
      const cost = node.fields.find((f) => f.label === 'cost')
      if (tokens || cost) records.push({ ...record, level: 'calls', category: 'cost', depth: node.depth + 1, msg: `${node.name}: ${[tokens?.value, cost?.value].filter(Boolean).join(', ')}` })
    }
    if (node.kind === 'tool' || node.kind === 'model') {
      for (const field of node.fields.filter((f) => f.block || f.label === 'error')) {
        records.push({ ...record, level: 'trace', depth: node.depth + 1, msg: `${field.label}: ${field.value.replace(/\s*\n\s*/g, ' ')}`, data: { [field.label]: field.value } })
      }
    }
  }
  const cost = view.cost_usd === null ? 'cost n/a' : `cost ${formatUsd(view.cost_usd)}`
  records.push({
    level: 'steps',
    category: 'cost',
    ...base,
    span_id: 'attempt',
    parent_span_id: null,
    depth: 1,
    msg: `${view.input_tokens} tokens in, ${view.output_tokens} out, ${cost}`,
    data: { input_tokens: view.input_tokens, output_tokens: view.output_tokens, cost_usd: view.cost_usd },
  })
  return records
}

/** A run-wide record (scheduler): run started, a task finished, the store caught up. */
export function runRecord(runId: string, msg: string, opts: { task_id?: string; level?: 'progress' | 'steps'; data?: Record<string, unknown> } = {}): LogRecord {
  return {
    level: opts.level ?? 'progress',
    category: 'scheduler',
    run_id: runId,
    task_id: opts.task_id ?? '',
    attempt: null,
    span_id: null,
    parent_span_id: null,
    depth: 0,
    msg,
    ...(opts.data ? { data: opts.data } : {}),
  }
}

/** One line: pretty (indented by span depth, prefixed by task and attempt) or a JSON object per line. */
export function formatRecord(record: LogRecord, format: LogFormat, at?: number): string {
  if (format === 'jsonl') return JSON.stringify({ ...(at !== undefined ? { time: new Date(at).toISOString() } : {}), ...record })
  // run-wide records (run started, a task done) name what they are about in their message
  const where = record.attempt === null ? '' : `[${record.task_id}#${record.attempt}] `
  return `${where}${'  '.repeat(record.depth)}${record.msg}`
}
