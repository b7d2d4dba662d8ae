/** `forge trace` in the terminal: the span tree indented by depth, each node's timing, status, marks and fields. */
import type { TraceField, TraceNode, TraceView } from '../../core/span-tree.js'
import { formatUsd } from '../../core/span-tree.js'

export interface TraceTextOptions {
  /** print every field whole (default: one line each, cut at `width`) */
  full?: boolean
  width?: number
}

const STATUS_MARK: Record<TraceNode['status'], string> = { ok: 'ok', error: 'ERROR', refused: 'REFUSED', passed: 'pass', failed: 'FAIL', info: '' }

function oneLine(field: TraceField, width: number): string {
  let value = field.value
  if (field.block) {
    try {
      value = JSON.stringify(JSON.parse(value))
    } catch {
      value = value.replace(/\s*\n\s*/g, ' ⏎ ')
    }
  }
  value = value.replace(/\n/g, ' ⏎ ')
  return value.length > width ? `${value.slice(0, width - 1)}…` : value
}

function timing(node: TraceNode): string {
  if (node.start_ms === null) return ''
  return `@${Math.round(node.start_ms)} ms +${Math.round(node.duration_ms ?? 0)} ms`
}

/** The header lines of a trace: which attempt, its verdict and measurements. */
export function traceHeader(view: TraceView): string[] {
  const lines = [
    `attempt ${view.attempt_uid}`,
    `run ${view.run_id}  suite ${view.suite}  task ${view.task_id}  attempt ${view.attempt}`,
    `outcome ${view.outcome}${view.failure_bucket ? ` (${view.failure_bucket})` : ''}  validity ${view.validity}` +
      `  model ${view.model || 'n/a'}  tokens ${view.input_tokens} in / ${view.output_tokens} out` +
      `  cost ${view.cost_usd === null ? 'n/a' : formatUsd(view.cost_usd)}  latency ${view.latency_ms === null ? 'n/a' : `${Math.round(view.latency_ms)} ms`}`,
  ]
  if (view.budget_exhausted) lines.push(`stopped at budget ${view.budget_exhausted}`)
  if (view.needs_human_review) lines.push(`flagged for human review: ${view.review_reasons.join('; ') || 'no reason recorded'}`)
  if (view.truncated.length > 0) lines.push(`stored trace was cut to fit: ${view.truncated.join(', ')}`)
  return lines
}

/** The tree as text lines, two spaces per span depth; fields one more level in. */
export function traceLines(view: TraceView, opts: TraceTextOptions = {}): string[] {
  const width = opts.width ?? 160
  const lines = traceHeader(view)
  lines.push('')
  const walk = (node: TraceNode): void => {
    const indent = '  '.repeat(node.depth)
    const status = STATUS_MARK[node.status]
    const parts = [`${indent}${node.children.length > 0 ? '▾' : '•'} ${node.name}`, timing(node), status, ...node.marks.map((m) => `[${m}]`)].filter((p) => p !== '')
    lines.push(parts.join('  '))
    for (const field of node.fields) {
      if (opts.full && field.block) {
        lines.push(`${indent}    ${field.label}:`)
        for (const line of field.value.split('\n')) lines.push(`${indent}      ${line}`)
      } else {
        lines.push(`${indent}    ${field.label}: ${opts.full ? field.value.replace(/\n/g, ' ⏎ ') : oneLine(field, Math.max(20, width - indent.length - field.label.length - 6))}`)
      }
    }
    node.children.forEach(walk)
  }
  view.roots.forEach(walk)
  if (view.output !== '') lines.push('', `output: ${opts.full ? view.output : oneLine({ label: 'output', value: view.output }, width - 8)}`)
  for (const error of view.errors) lines.push(`error (${error.kind}): ${error.message}`)
  if (view.self_report !== '') lines.push(`self-report (kept, never graded): ${opts.full ? view.self_report : oneLine({ label: '', value: view.self_report }, width - 33)}`)
  return lines
}
