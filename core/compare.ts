/**
 * Regression detection between two runs (a baseline `a` and a candidate `b`), task by task within
 * each suite: a two-proportion test (Fisher's exact test when counts are small) with
 * Benjamini–Hochberg across tasks — a task regressed only when significant after correction AND
 * its point estimate dropped; changed tool usage (which tools, in what order), tested the same
 * way; and cost, latency and tool calls that grew beyond configured deltas. Pure.
 */
import { benjaminiHochberg, compareProportions, type ProportionTest } from './hypothesis.js'
import type { SuiteFigures, TaskFigures } from './report.js'
import { compareText } from './report.js'
import type { Rate } from './stats.js'

/** How many attempts of a task called exactly this sequence of tools, in order ([] = no calls). */
export interface ToolSequenceCount {
  task_id: string
  sequence: string[]
  n: number
}

/** What a run contributes to a comparison: its figures, tool sequences and the stamps that must match. */
export interface CompareSide {
  run_id: string
  suites: SuiteFigures[]
  tool_sequences: ToolSequenceCount[]
  stamps: RunStamps
}

/** Facts about a run that make two runs comparable (or not). Empty = not recorded. */
export interface RunStamps {
  price_table_version: string
  price_table_date: string
  /** content hash of the suite directory */
  suite_hash: string
  judge_model: string
  judge_prompt_version: string
}

export interface CompareThresholds {
  /** false-discovery rate for Benjamini–Hochberg (success and tool-usage families) */
  fdr: number
  /** relative increase of cost per attempt that is flagged (0.2 = +20%) */
  cost_increase: number
  /** relative increase of p50 or p90 latency that is flagged … */
  latency_increase: number
  /** … when it is also at least this many milliseconds */
  latency_min_ms: number
  /** relative increase of tool calls per attempt that is flagged … */
  tool_calls_increase: number
  /** … when it is also at least this many calls per attempt */
  tool_calls_min: number
}

export const DEFAULT_THRESHOLDS: CompareThresholds = {
  fdr: 0.05,
  cost_increase: 0.2,
  latency_increase: 0.25,
  latency_min_ms: 50,
  tool_calls_increase: 0.25,
  tool_calls_min: 0.5,
}

export type MetricName = 'cost_per_attempt_usd' | 'latency_p50_ms' | 'latency_p90_ms' | 'tool_calls_per_attempt'

export interface MetricChange {
  metric: MetricName
  a: number | null
  b: number | null
  /** (b − a) / a; null when either is unavailable or a = 0 */
  relative: number | null
  flagged: boolean
}

/** One tested aspect of tool usage: the share of attempts that call a tool, or that follow the baseline's usual order. */
export interface ToolUsageFeature {
  kind: 'uses_tool' | 'usual_sequence'
  /** the tool name, or the baseline's most common sequence joined with ' > ' */
  feature: string
  a: { k: number; n: number }
  b: { k: number; n: number }
  p: number
  q: number
  flagged: boolean
}

export interface TaskComparison {
  suite: string
  task_id: string
  a: Rate
  b: Rate
  /** b.rate − a.rate; null when either run has no attempts */
  delta: number | null
  test: ProportionTest['test']
  p: number
  /** Benjamini–Hochberg adjusted p across the compared tasks */
  q: number
  /** significant after correction and the point estimate dropped */
  regressed: boolean
  /** significant after correction and the point estimate rose */
  improved: boolean
  metrics: MetricChange[]
  tool_usage: ToolUsageFeature[]
  tool_usage_changed: boolean
}

export interface SuiteComparison {
  suite: string
  a: { rate: number | null; tasks: number }
  b: { rate: number | null; tasks: number }
  delta: number | null
  metrics: MetricChange[]
  tasks: TaskComparison[]
  /** tasks present in one run only */
  only_in_a: string[]
  only_in_b: string[]
}

export interface CompareFindings {
  success: number
  tool_usage: number
  cost: number
  latency: number
  tool_calls: number
}

export interface Comparison {
  run_a: string
  run_b: string
  thresholds: CompareThresholds
  suites: SuiteComparison[]
  /** suites present in one run only: never pooled into another suite */
  suites_only_in_a: string[]
  suites_only_in_b: string[]
  warnings: string[]
  /** flagged items by kind */
  findings: CompareFindings
  /** true when anything was flagged: the CI signal */
  regression: boolean
}

export function compareRuns(a: CompareSide, b: CompareSide, thresholds: CompareThresholds = DEFAULT_THRESHOLDS): Comparison {
  const bySuiteB = new Map(b.suites.map((s) => [s.suite, s]))
  const bySuiteA = new Map(a.suites.map((s) => [s.suite, s]))
  const shared = [...bySuiteA.keys()].filter((s) => bySuiteB.has(s)).sort(compareText)

  // pass 1: tests per task, gathered into one family per kind for BH
  interface Pending {
    suite: string
    a: TaskFigures
    b: TaskFigures
    test: ProportionTest
    tool: Omit<ToolUsageFeature, 'q' | 'flagged'>[]
  }
  const pending: Pending[] = []
  const onlyIn = new Map<string, { a: string[]; b: string[] }>()
  for (const suite of shared) {
    const sa = bySuiteA.get(suite)!
    const sb = bySuiteB.get(suite)!
    const tasksB = new Map(sb.tasks.map((t) => [t.task_id, t]))
    const tasksA = new Map(sa.tasks.map((t) => [t.task_id, t]))
    onlyIn.set(suite, {
      a: sa.tasks.filter((t) => !tasksB.has(t.task_id)).map((t) => t.task_id),
      b: sb.tasks.filter((t) => !tasksA.has(t.task_id)).map((t) => t.task_id),
    })
    for (const ta of sa.tasks) {
      const tb = tasksB.get(ta.task_id)
      if (!tb) continue
      pending.push({
        suite,
        a: ta,
        b: tb,
        test: compareProportions(ta.k, ta.n, tb.k, tb.n),
        tool: toolUsageTests(sequencesOf(a.tool_sequences, ta.task_id, ta.n), sequencesOf(b.tool_sequences, tb.task_id, tb.n)),
      })
    }
  }
  const q = benjaminiHochberg(pending.map((p) => p.test.p))
  const toolQ = benjaminiHochberg(pending.flatMap((p) => p.tool.map((t) => t.p)))

  const findings: CompareFindings = { success: 0, tool_usage: 0, cost: 0, latency: 0, tool_calls: 0 }
  const count = (metrics: MetricChange[]) => {
    for (const m of metrics.filter((x) => x.flagged)) {
      if (m.metric === 'cost_per_attempt_usd') findings.cost++
      else if (m.metric === 'tool_calls_per_attempt') findings.tool_calls++
      else findings.latency++
    }
  }
  let toolIndex = 0
  const comparisons: TaskComparison[] = pending.map((p, i) => {
    const qi = q[i]!
    const delta = p.a.rate === null || p.b.rate === null ? null : p.b.rate - p.a.rate
    const significant = qi <= thresholds.fdr
    const tool_usage = p.tool.map((t) => {
      const tq = toolQ[toolIndex++]!
      return { ...t, q: tq, flagged: tq <= thresholds.fdr }
    })
    const metrics = metricChanges(p.a, p.b, thresholds)
    const comparison: TaskComparison = {
      suite: p.suite,
      task_id: p.a.task_id,
      a: pickRate(p.a),
      b: pickRate(p.b),
      delta,
      test: p.test.test,
      p: p.test.p,
      q: qi,
      regressed: significant && delta !== null && delta < 0,
      improved: significant && delta !== null && delta > 0,
      metrics,
      tool_usage,
      tool_usage_changed: tool_usage.some((t) => t.flagged),
    }
    if (comparison.regressed) findings.success++
    if (comparison.tool_usage_changed) findings.tool_usage++
    count(metrics)
    return comparison
  })

  const suites: SuiteComparison[] = shared.map((suite) => {
    const sa = bySuiteA.get(suite)!
    const sb = bySuiteB.get(suite)!
    const metrics = metricChanges(sa, sb, thresholds)
    count(metrics)
    return {
      suite,
      a: sa.success,
      b: sb.success,
      delta: sa.success.rate === null || sb.success.rate === null ? null : sb.success.rate - sa.success.rate,
      metrics,
      tasks: comparisons.filter((c) => c.suite === suite),
      only_in_a: onlyIn.get(suite)!.a,
      only_in_b: onlyIn.get(suite)!.b,
    }
  })

  const regression = Object.values(findings).some((n) => n > 0)
  return {
    run_a: a.run_id,
    run_b: b.run_id,
    thresholds,
    suites,
    suites_only_in_a: [...bySuiteA.keys()].filter((s) => !bySuiteB.has(s)).sort(compareText),
    suites_only_in_b: [...bySuiteB.keys()].filter((s) => !bySuiteA.has(s)).sort(compareText),
    warnings: stampWarnings(a, b, shared.length),
    findings,
    regression,
  }
}

function pickRate(t: Rate): Rate {
  return { k: t.k, n: t.n, rate: t.rate, low: t.low, high: t.high }
}

interface MetricSource {
  latency_ms: { p50: number; p90: number } | null
  tool_calls_per_attempt: number | null
  cost: { per_attempt_usd: number | null }
}

/** Cost, latency and tool calls of b against a; each flagged when it grew beyond its delta. */
export function metricChanges(a: MetricSource, b: MetricSource, t: CompareThresholds): MetricChange[] {
  const change = (metric: MetricName, va: number | null, vb: number | null, rel: number, minAbs: number): MetricChange => {
    const relative = va === null || vb === null || va === 0 ? null : (vb - va) / va
    const grew = va !== null && vb !== null && vb - va > minAbs && (va === 0 ? vb > 0 : (vb - va) / va > rel)
    return { metric, a: va, b: vb, relative, flagged: grew }
  }
  return [
    change('cost_per_attempt_usd', a.cost.per_attempt_usd, b.cost.per_attempt_usd, t.cost_increase, 0),
    change('latency_p50_ms', a.latency_ms?.p50 ?? null, b.latency_ms?.p50 ?? null, t.latency_increase, t.latency_min_ms),
    change('latency_p90_ms', a.latency_ms?.p90 ?? null, b.latency_ms?.p90 ?? null, t.latency_increase, t.latency_min_ms),
    change('tool_calls_per_attempt', a.tool_calls_per_attempt, b.tool_calls_per_attempt, t.tool_calls_increase, t.tool_calls_min),
  ]
}

/** A task's sequences, with the attempts that called no tool as the empty sequence. */
function sequencesOf(all: readonly ToolSequenceCount[], taskId: string, n: number): { sequence: string[]; n: number }[] {
  const own = all.filter((s) => s.task_id === taskId && s.sequence.length > 0).map((s) => ({ sequence: s.sequence, n: s.n }))
  const withCalls = own.reduce((total, s) => total + s.n, 0)
  if (n > withCalls) own.push({ sequence: [], n: n - withCalls })
  return own
}

const sequenceKey = (sequence: readonly string[]): string => sequence.join(' > ')

/** Per tool: the share of attempts calling it; and the share following the baseline's most common order. */
export function toolUsageTests(
  a: readonly { sequence: string[]; n: number }[],
  b: readonly { sequence: string[]; n: number }[],
): Omit<ToolUsageFeature, 'q' | 'flagged'>[] {
  const na = a.reduce((t, s) => t + s.n, 0)
  const nb = b.reduce((t, s) => t + s.n, 0)
  if (na === 0 || nb === 0) return []
  const tools = new Set([...a, ...b].flatMap((s) => s.sequence))
  const users = (side: readonly { sequence: string[]; n: number }[], tool: string) =>
    side.filter((s) => s.sequence.includes(tool)).reduce((t, s) => t + s.n, 0)
  const features: Omit<ToolUsageFeature, 'q' | 'flagged'>[] = [...tools].sort(compareText).map((tool) => {
    const ka = users(a, tool)
    const kb = users(b, tool)
    return { kind: 'uses_tool', feature: tool, a: { k: ka, n: na }, b: { k: kb, n: nb }, p: compareProportions(ka, na, kb, nb).p }
  })
  const usual = [...a].sort((x, y) => y.n - x.n || compareText(sequenceKey(x.sequence), sequenceKey(y.sequence)))[0]!
  const key = sequenceKey(usual.sequence)
  const kb = b.filter((s) => sequenceKey(s.sequence) === key).reduce((t, s) => t + s.n, 0)
  features.push({
    kind: 'usual_sequence',
    feature: key === '' ? '(no tool calls)' : key,
    a: { k: usual.n, n: na },
    b: { k: kb, n: nb },
    p: compareProportions(usual.n, na, kb, nb).p,
  })
  return features
}

function stampWarnings(a: CompareSide, b: CompareSide, sharedSuites: number): string[] {
  const warnings: string[] = []
  const differ = (label: string, va: string, vb: string, what: string) => {
    if (va === vb) return
    if (va === '' || vb === '') warnings.push(`${label} is not recorded for ${va === '' ? `run ${a.run_id}` : `run ${b.run_id}`}: ${what}`)
    else warnings.push(`${label} differs (${va} vs ${vb}): ${what}`)
  }
  differ('suite content', a.stamps.suite_hash.slice(0, 12), b.stamps.suite_hash.slice(0, 12), 'tasks, graders or tools may have changed between the runs')
  differ('judge model', a.stamps.judge_model, b.stamps.judge_model, 'judge-graded outcomes may not be comparable')
  differ('judge prompt version', a.stamps.judge_prompt_version, b.stamps.judge_prompt_version, 'judge-graded outcomes may not be comparable')
  const table = (s: RunStamps) => (s.price_table_version === '' ? '' : `${s.price_table_version} (${s.price_table_date})`)
  differ('price table', table(a.stamps), table(b.stamps), 'cost differences may come from prices, not from the agent')
  if (sharedSuites === 0) warnings.push('the runs share no suite: nothing was compared (suites are never pooled)')
  return warnings
}
