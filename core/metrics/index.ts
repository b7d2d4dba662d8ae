/**
 * The metric registry: 18 deterministic metrics (tool usage, budget, output format, security,
 * state) and 11 LLM-judge metrics (quality, safety, tool use), each with a name, description and
 * version. Deterministic metrics run on every attempt in the attempt worker; judge metrics run in
 * the judge worker, by default only for attempts whose gating deterministic metrics passed. Pure.
 */
import type { MetricValue } from '../contracts/index.js'
import { deterministicMetrics } from './deterministic.js'
import { judgeMetrics } from './judge.js'
import type { JudgeMetric, MetricDefinition, MetricInput } from './types.js'

export { deterministicMetrics } from './deterministic.js'
export { JUDGE_METRICS_PROMPT_VERSION, judgeMetrics, judgeMetricValues, metricsRequest, skippedJudgeMetrics, type MetricScores } from './judge.js'
export type { DeterministicMetric, JudgeMetric, MetricDefinition, MetricInput, MetricReading } from './types.js'

/** Every metric by name, deterministic first. */
export const metrics: ReadonlyMap<string, MetricDefinition> = new Map<string, MetricDefinition>(
  [...deterministicMetrics, ...judgeMetrics].map((metric) => [metric.name, metric]),
)

/** Runs every deterministic metric on one attempt; a metric that throws is recorded as errored, not fatal. */
export function runDeterministicMetrics(input: MetricInput): MetricValue[] {
  return deterministicMetrics.map((metric): MetricValue => {
    try {
      const reading = metric.compute(input)
      return {
        metric: metric.name,
        version: metric.version,
        kind: 'deterministic',
        status: reading.value === null ? 'not_applicable' : 'scored',
        value: reading.value,
        passed: reading.value === null ? null : reading.passed,
        detail: reading.detail,
        judge: null,
      }
    } catch (error) {
      return { metric: metric.name, version: metric.version, kind: 'deterministic', status: 'errored', value: null, passed: null, detail: `threw: ${error instanceof Error ? error.message : String(error)}`, judge: null }
    }
  })
}

/** Whether the attempt may go to the judge metrics: every gating deterministic metric passed (n/a counts as passed). */
export function deterministicGate(values: readonly MetricValue[]): { passed: boolean; failed: string[] } {
  const gating = new Set(deterministicMetrics.filter((metric) => metric.gate).map((metric) => metric.name))
  const failed = values.filter((value) => gating.has(value.metric) && (value.passed === false || value.status === 'errored')).map((value) => value.metric)
  return { passed: failed.length === 0, failed }
}

/** The judge metrics a run asked for (all when `names` is absent); throws on a name the registry lacks. */
export function selectJudgeMetrics(names: readonly string[] | undefined): JudgeMetric[] {
  if (names === undefined) return [...judgeMetrics]
  const unknown = names.filter((name) => !judgeMetrics.some((metric) => metric.name === name))
  if (unknown.length > 0) {
    throw new Error(`unknown judge metric(s) ${unknown.map((n) => `"${n}"`).join(', ')}; known: ${judgeMetrics.map((m) => m.name).join(', ')}`)
  }
  return judgeMetrics.filter((metric) => names.includes(metric.name))
}

