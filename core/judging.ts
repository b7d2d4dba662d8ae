/**
 * What an attempt asks of the judge worker, decided in the attempt worker from tier 0 and the
 * deterministic metrics (deterministic checks first; the judge only where they allow it). Pure.
 */
import type { Grade, JudgeSettings, MetricValue, Tier2Result } from './contracts.js'
import { tier2Status } from './judge/divergence.js'
import { deterministicGate, selectJudgeMetrics, skippedJudgeMetrics } from './metrics/index.js'
import { tier0Failed } from './review.js'

export interface JudgingPlan {
  /** tier 2 as known now: not applicable, pending (the judge worker will run it) or not run (no judge) */
  tier2: Tier2Result
  /** judge-metric rows decided now: skipped by the gate, with the reason */
  skipped: MetricValue[]
  /** what the judge worker is to do; undefined: nothing, no judge activity is scheduled */
  request?: { golden_divergence: boolean; metrics: boolean }
}

export interface JudgingInput {
  /** the run's judge; undefined: the run has none */
  settings: JudgeSettings | undefined
  grades: readonly Grade[]
  /** the attempt's deterministic metrics */
  deterministic: readonly MetricValue[]
  hasGolden: boolean
  /** a harness error: nothing about the agent is measured, so nothing is judged */
  invalid: boolean
}

export function planJudging(input: JudgingInput): JudgingPlan {
  const failed = tier0Failed(input.grades)
  const divergence = failed && input.hasGolden && !input.invalid
  const settings = input.settings
  const tier2 = !divergence ? tier2Status('not_applicable') : settings?.golden_divergence === true ? tier2Status('pending') : tier2Status('not_run', settings === undefined ? 'the run has no judge' : 'golden divergence is switched off for the run')
  const selected = settings === undefined ? [] : selectJudgeMetrics(settings.metrics)
  let skipped: MetricValue[] = []
  let judgeMetrics = false
  if (selected.length > 0) {
    const gate = deterministicGate(input.deterministic)
    if (input.invalid) skipped = skippedJudgeMetrics(selected, 'not judged: the attempt is invalid (harness error)')
    else if (settings?.gate === 'deterministic' && !gate.passed) skipped = skippedJudgeMetrics(selected, `not judged: gating deterministic metric(s) failed: ${gate.failed.join(', ')}`)
    else judgeMetrics = true
  }
  const runsDivergence = tier2.status === 'pending'
  return {
    tier2,
    skipped,
    ...(runsDivergence || judgeMetrics ? { request: { golden_divergence: runsDivergence, metrics: judgeMetrics } } : {}),
  }
}
