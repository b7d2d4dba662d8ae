/**
 * What an attempt asks of the judge worker, decided in the attempt worker from tier 0 and the
 * deterministic metrics (deterministic checks first; the judge only where they allow it). Pure.
 */
import type { Grade, JudgeSettings, MetricValue, Tier2Result } from './contracts/index.js'
import { GOLDEN_DIVERGENCE_PROMPT_VERSION, tier2Status } from './judge/divergence.js'
import { JUDGE_GRADER_PROMPT_VERSION } from './judge/grader-prompt.js'
import { judgeDecoding } from './judge/protocol.js'
import { deterministicGate, JUDGE_METRICS_PROMPT_VERSION, selectJudgeMetrics, skippedJudgeMetrics } from './metrics/index.js'
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

/**
 * The run's judge stamps, so `forge compare` can warn when two runs were judged differently:
 * the judge model(s), and the prompt versions in use with the decoding settings.
 */
export function judgeStamps(input: {
  settings: JudgeSettings | undefined
  /** models named by the tasks' `judge` grader configs */
  graderModels: readonly string[]
  /** the tasks have `judge` graders */
  judgeGraders: boolean
  /** FORGE_JUDGE_MODEL, the judge graders' fallback model */
  envModel?: string | undefined
}): { judge_model: string; judge_prompt_version: string } {
  const { settings } = input
  const models = [...new Set([...(settings ? [settings.model] : []), ...input.graderModels, ...(input.judgeGraders && !settings && input.graderModels.length === 0 && input.envModel ? [input.envModel] : [])])]
  const prompts = [
    ...(input.judgeGraders ? [JUDGE_GRADER_PROMPT_VERSION] : []),
    ...(settings?.golden_divergence ? [GOLDEN_DIVERGENCE_PROMPT_VERSION] : []),
    ...(settings && selectJudgeMetrics(settings.metrics).length > 0 ? [JUDGE_METRICS_PROMPT_VERSION] : []),
  ]
  if (prompts.length === 0) return { judge_model: '', judge_prompt_version: '' }
  const decoding = judgeDecoding(settings ?? { temperature: 0, seed: 0, max_tokens: 512, response_format: 'json_schema' })
  const settingsText = Object.entries(decoding)
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(' ')
  return { judge_model: models.join(','), judge_prompt_version: `${prompts.join(' ')}; ${settingsText}` }
}
