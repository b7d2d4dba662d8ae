/**
 * The Prometheus text exposition format (version 0.0.4), pure: the health endpoint of every process
 * role renders its counters and gauges with this, and a ServiceMonitor scrapes them.
 */

export type MetricType = 'counter' | 'gauge'

export interface MetricSample {
  labels?: Record<string, string>
  value: number
}

export interface MetricFamily {
  /** snake_case, `forge_` prefixed; counters end in `_total` */
  name: string
  help: string
  type: MetricType
  samples: MetricSample[]
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/

/** Renders metric families as Prometheus text; throws on a name or label Prometheus would reject. */
export function renderPrometheus(families: readonly MetricFamily[]): string {
  const lines: string[] = []
  const seen = new Set<string>()
  for (const family of families) {
    if (!NAME.test(family.name)) throw new Error(`invalid metric name "${family.name}"`)
    if (seen.has(family.name)) throw new Error(`metric "${family.name}" is listed twice`)
    seen.add(family.name)
    lines.push(`# HELP ${family.name} ${escapeHelp(family.help)}`, `# TYPE ${family.name} ${family.type}`)
    for (const sample of family.samples) {
      lines.push(`${family.name}${renderLabels(family.name, sample.labels)} ${formatValue(sample.value)}`)
    }
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`
}

function renderLabels(metric: string, labels: Record<string, string> | undefined): string {
  const entries = Object.entries(labels ?? {})
  if (entries.length === 0) return ''
  const parts = entries.map(([key, value]) => {
    if (!LABEL.test(key) || key.startsWith('__')) throw new Error(`invalid label name "${key}" on metric "${metric}"`)
    return `${key}="${value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')}"`
  })
  return `{${parts.join(',')}}`
}

function escapeHelp(help: string): string {
  return help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN'
  if (value === Infinity) return '+Inf'
  if (value === -Infinity) return '-Inf'
  return String(value)
}

/** One sample per key of `counts`, labelled `label="<key>"`, in key order (stable scrapes diff cleanly). */
export function labelledSamples(label: string, counts: Record<string, number>): MetricSample[] {
  return Object.keys(counts)
    .sort()
    .map((key) => ({ labels: { [label]: key }, value: counts[key] ?? 0 }))
}
