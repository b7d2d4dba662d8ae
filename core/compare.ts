/**
 * Regression detection between two runs (a baseline `a` and a candidate `b`), task by task within
 * each suite: a two-proportion test (Fisher's exact test when counts are small) with
 * Benjamini–Hochberg across tasks — a task regressed only when significant after correction AND
 * its point estimate dropped; changed tool usage (which tools, in what order), tested the same
 * way; and cost, latency and tool calls per attempt, tested on every attempt's value (Mann–Whitney U
 * per task, van Elteren per suite, Benjamini–Hochberg across all of them) — flagged only when
 * significant after correction AND the figure grew beyond its configured deltas. Pure.
 */
import { benjaminiHochberg, compareProportions, type ProportionTest } from './hypothesis.js'
import { mannWhitneyTest, rankSums, vanElterenTest, type RankSums } from './rank-tests.js'
import type { AttemptMeasurement, SuiteFigures, TaskFigures } from './report.js'
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
  /** the injected-fault profile: hash, mode and nominal rate; absent or '' = no faults */
  fault_profile_hash?: string
  fault_mode?: string
  fault_rate?: number
}

/** A per-attempt value whose increase is tested: latency, tool calls, cost (priced attempts only). */
export type Measure = 'latency_ms' | 'tool_calls' | 'cost_usd'

/** The rank sums of one measure of one task over both runs' attempts (a is the first sample, b the second). */
export interface MeasureRanks {
  suite: string
  task_id: string
  measure: Measure
  ranks: RankSums
}

export interface CompareThresholds {
  /** false-discovery rate for Benjamini–Hochberg (success, tool-usage and efficiency families) */
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

/**
 * - `increased`: significant after correction, b's values rank higher and the figure grew beyond its deltas (flagged)
 * - `within delta`: significant and b's values rank higher, but the figure did not grow beyond its deltas
 * - `decreased`: significant and b's values rank lower
 * - `not significant`: the adjusted p is above the FDR
 * - `unavailable`: a figure or the per-attempt values are missing on one side: not tested
 */
export type MetricVerdict = 'increased' | 'within delta' | 'decreased' | 'not significant' | 'unavailable'

/** A figure of b against a, whether it grew beyond its allowed deltas. */
export interface MetricDelta {
  metric: MetricName
  a: number | null
  b: number | null
  /** (b − a) / a; null when either is unavailable or a = 0 */
  relative: number | null
  /** grew by more than both the relative and the absolute delta */
  beyond_delta: boolean
}

/** A figure of b against a with the test of the per-attempt values behind it. */
export interface MetricChange extends MetricDelta {
  /** Mann–Whitney U for a task, van Elteren (tasks as strata) for a suite; null when unavailable */
  test: 'mann-whitney u' | 'van elteren' | null
  /** exact null distribution or normal approximation */
  method: 'exact' | 'normal' | null
  /** attempts the test compared in a and in b (cost: priced attempts) */
  n_a: number | null
  n_b: number | null
  /** P(b > a) + ½·P(b = a) for one attempt of each (Mann–Whitney only; 0.5 = no shift) */
  effect: number | null
  /** the standardized statistic, positive when b ranks higher (null for an exact test) */
  z: number | null
  /** two-sided p-value */
  p: number | null
  /** Benjamini–Hochberg adjusted p across every cost, latency and tool-call test of the comparison */
  q: number | null
  verdict: MetricVerdict
  /** verdict = increased */
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

/**
 * Compares b against a. `ranks` are the per-task rank sums of latency, tool calls and cost over both
 * runs' attempts (`measureRanks` from raw attempts; the store computes the same in SQL); a measure
 * without ranks is reported unavailable, never flagged.
 */
export function compareRuns(
  a: CompareSide,
  b: CompareSide,
  ranks: readonly MeasureRanks[],
  thresholds: CompareThresholds = DEFAULT_THRESHOLDS,
): Comparison {
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
    deltas: MetricDelta[]
    tests: MeasureTests
  }
  const ranksOf = new Map<string, Map<Measure, RankSums>>()
  for (const r of ranks) {
    const key = taskKey(r.suite, r.task_id)
    if (!ranksOf.has(key)) ranksOf.set(key, new Map())
    ranksOf.get(key)!.set(r.measure, r.ranks)
  }
  // every efficiency test of the comparison, tasks and suites, is one family for BH
  const efficiency: MeasureTest[] = []
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
      const deltas = metricDeltas(ta, tb, thresholds)
      const taskRanks = ranksOf.get(taskKey(suite, ta.task_id))
      const tests = testsFor(deltas, (measure) => {
        const r = taskRanks?.get(measure)
        return r && r.n1 > 0 && r.n2 > 0 ? mannWhitneyOf(r) : null
      })
      efficiency.push(...tests.values())
      pending.push({
        suite,
        a: ta,
        b: tb,
        test: compareProportions(ta.k, ta.n, tb.k, tb.n),
        tool: toolUsageTests(sequencesOf(a.tool_sequences, ta.task_id, ta.n), sequencesOf(b.tool_sequences, tb.task_id, tb.n)),
        deltas,
        tests,
      })
    }
  }
  const suiteDeltas = new Map<string, { deltas: MetricDelta[]; tests: MeasureTests }>()
  for (const suite of shared) {
    const deltas = metricDeltas(bySuiteA.get(suite)!, bySuiteB.get(suite)!, thresholds)
    const strataOf = (measure: Measure) =>
      pending.filter((p) => p.suite === suite).flatMap((p) => ranksOf.get(taskKey(suite, p.a.task_id))?.get(measure) ?? [])
    const tests = testsFor(deltas, (measure) => vanElterenOf(strataOf(measure)))
    efficiency.push(...tests.values())
    suiteDeltas.set(suite, { deltas, tests })
  }
  const q = benjaminiHochberg(pending.map((p) => p.test.p))
  const toolQ = benjaminiHochberg(pending.flatMap((p) => p.tool.map((t) => t.p)))
  const efficiencyQ = new Map(benjaminiHochberg(efficiency.map((t) => t.p)).map((value, i) => [efficiency[i]!, value]))
  const changes = (deltas: MetricDelta[], tests: MeasureTests) => metricChanges(deltas, tests, efficiencyQ, thresholds.fdr)

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
    const metrics = changes(p.deltas, p.tests)
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
    const metrics = changes(suiteDeltas.get(suite)!.deltas, suiteDeltas.get(suite)!.tests)
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

/** The measure whose per-attempt values stand behind a figure: p50 and p90 latency share one test. */
const MEASURE_OF: Record<MetricName, Measure> = {
  cost_per_attempt_usd: 'cost_usd',
  latency_p50_ms: 'latency_ms',
  latency_p90_ms: 'latency_ms',
  tool_calls_per_attempt: 'tool_calls',
}

/** Cost, latency and tool calls of b against a; each beyond its delta when it grew by more than both allowed deltas. */
export function metricDeltas(a: MetricSource, b: MetricSource, t: CompareThresholds): MetricDelta[] {
  const change = (metric: MetricName, va: number | null, vb: number | null, rel: number, minAbs: number): MetricDelta => {
    const relative = va === null || vb === null || va === 0 ? null : (vb - va) / va
    const grew = va !== null && vb !== null && vb - va > minAbs && (va === 0 ? vb > 0 : (vb - va) / va > rel)
    return { metric, a: va, b: vb, relative, beyond_delta: grew }
  }
  return [
    change('cost_per_attempt_usd', a.cost.per_attempt_usd, b.cost.per_attempt_usd, t.cost_increase, 0),
    change('latency_p50_ms', a.latency_ms?.p50 ?? null, b.latency_ms?.p50 ?? null, t.latency_increase, t.latency_min_ms),
    change('latency_p90_ms', a.latency_ms?.p90 ?? null, b.latency_ms?.p90 ?? null, t.latency_increase, t.latency_min_ms),
    change('tool_calls_per_attempt', a.tool_calls_per_attempt, b.tool_calls_per_attempt, t.tool_calls_increase, t.tool_calls_min),
  ]
}

/** One test of a measure: the fields a MetricChange reports, and which way b moved. */
interface MeasureTest {
  test: 'mann-whitney u' | 'van elteren'
  method: 'exact' | 'normal'
  n_a: number
  n_b: number
  effect: number | null
  z: number | null
  p: number
  /** b's values rank higher than a's */
  higher: boolean
}
type MeasureTests = Map<Measure, MeasureTest>

function mannWhitneyOf(r: RankSums): MeasureTest {
  const t = mannWhitneyTest(r)
  return { test: t.test, method: t.method, n_a: r.n1, n_b: r.n2, effect: t.effect, z: t.z, p: t.p, higher: t.effect > 0.5 }
}

function vanElterenOf(strata: readonly RankSums[]): MeasureTest | null {
  const used = strata.filter((s) => s.n1 > 0 && s.n2 > 0)
  if (used.length === 0) return null
  const t = vanElterenTest(used)
  const total = (pick: (s: RankSums) => number) => used.reduce((sum, s) => sum + pick(s), 0)
  return { test: 'van elteren', method: 'normal', n_a: total((s) => s.n1), n_b: total((s) => s.n2), effect: null, z: t.z, p: t.p, higher: t.z > 0 }
}

/** A test per measure whose figure is available on both sides (only those enter the BH family). */
function testsFor(deltas: readonly MetricDelta[], test: (measure: Measure) => MeasureTest | null): MeasureTests {
  const tests: MeasureTests = new Map()
  for (const d of deltas) {
    const measure = MEASURE_OF[d.metric]
    if (d.a === null || d.b === null || tests.has(measure)) continue
    const t = test(measure)
    if (t) tests.set(measure, t)
  }
  return tests
}

function metricChanges(deltas: readonly MetricDelta[], tests: MeasureTests, q: ReadonlyMap<MeasureTest, number>, fdr: number): MetricChange[] {
  return deltas.map((d) => {
    const t = d.a === null || d.b === null ? undefined : tests.get(MEASURE_OF[d.metric])
    if (!t) return { ...d, test: null, method: null, n_a: null, n_b: null, effect: null, z: null, p: null, q: null, verdict: 'unavailable', flagged: false }
    const qt = q.get(t)!
    const verdict: MetricVerdict = qt > fdr ? 'not significant' : !t.higher ? 'decreased' : d.beyond_delta ? 'increased' : 'within delta'
    const { higher: _higher, ...reported } = t
    return { ...d, ...reported, q: qt, verdict, flagged: verdict === 'increased' }
  })
}

/**
 * The rank sums of latency, tool calls and cost (priced attempts) per task from raw attempts of a
 * and b: what the store computes in SQL (`measureRanks` in store/repositories.ts) over every
 * attempt. Only tasks with values in both runs appear; sorted by suite, task, measure.
 */
export function measureRanks(a: readonly AttemptMeasurement[], b: readonly AttemptMeasurement[]): MeasureRanks[] {
  const group = (attempts: readonly AttemptMeasurement[]) => {
    const byTask = new Map<string, AttemptMeasurement[]>()
    for (const x of attempts) {
      const key = taskKey(x.suite, x.task_id)
      if (!byTask.has(key)) byTask.set(key, [])
      byTask.get(key)!.push(x)
    }
    return byTask
  }
  const byTaskA = group(a)
  const byTaskB = group(b)
  const values: Record<Measure, (x: AttemptMeasurement) => number | null> = {
    cost_usd: (x) => x.cost_usd,
    latency_ms: (x) => x.latency_ms,
    tool_calls: (x) => x.tool_call_count,
  }
  const out: MeasureRanks[] = []
  for (const [key, ta] of byTaskA) {
    const tb = byTaskB.get(key)
    if (!tb) continue
    for (const measure of (['cost_usd', 'latency_ms', 'tool_calls'] as const)) {
      const va = ta.map(values[measure]).filter((v): v is number => v !== null)
      const vb = tb.map(values[measure]).filter((v): v is number => v !== null)
      if (va.length > 0 && vb.length > 0) out.push({ suite: ta[0]!.suite, task_id: ta[0]!.task_id, measure, ranks: rankSums(va, vb) })
    }
  }
  return out.sort((x, y) => compareText(x.suite, y.suite) || compareText(x.task_id, y.task_id) || compareText(x.measure, y.measure))
}

const taskKey = (suite: string, taskId: string): string => `${suite}\u0000${taskId}`

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
  // no faults is a profile too: a faulted run against a clean one is a robustness drop, not a regression
  const faults = (s: RunStamps) => (s.fault_profile_hash ? `${s.fault_profile_hash.slice(0, 12)} (${s.fault_mode ?? ''}, rate ${s.fault_rate ?? 0})` : 'none')
  if (faults(a.stamps) !== faults(b.stamps)) {
    warnings.push(`fault profile differs (${faults(a.stamps)} vs ${faults(b.stamps)}): pass-rate differences may come from injected faults, not from the agent`)
  }
  if (sharedSuites === 0) warnings.push('the runs share no suite: nothing was compared (suites are never pooled)')
  return warnings
}
