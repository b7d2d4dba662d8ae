/**
 * The tier-0 `judge` grader's calls, made inside the attempt activity (its verdict decides the
 * outcome the activity publishes). Deterministic graders run first: the judge is asked only when
 * every one of them passed. A judge that cannot answer is a harness error of the attempt
 * (outcome not measured: invalid), never a silent fail.
 */
import { JudgeSettings, type AgentTrace, type Grade, type GraderSpec } from '../../core/contracts/index.js'
import { isJudgeSpec, judgeRequestsOf, type JudgeGraderVerdict } from '../../core/graders/index.js'
import type { GradeContext } from '../../core/plugins.js'
import { askJudge, resolveJudgeEndpoint } from './client.js'
import { readSetting } from '../../config/index.js'
import type { RateLimiter } from './rate-limit.js'

export interface InlineJudgeOptions {
  /** the run's judge settings (decoding, default model); absent: defaults and FORGE_JUDGE_MODEL */
  settings?: JudgeSettings | undefined
  env: NodeJS.ProcessEnv
  limiter?: RateLimiter | undefined
}

export interface InlineJudgement {
  judgements: Record<string, JudgeGraderVerdict>
  /** set when a judge could not give a verdict: the attempt's harness error */
  error?: string
}

/** Verdicts for a task's LLM-backed graders; undefined when the task has none. */
export async function judgeGraderVerdicts(
  specs: GraderSpec[],
  grades: readonly Grade[],
  trace: AgentTrace,
  ctx: GradeContext,
  opts: InlineJudgeOptions,
): Promise<InlineJudgement | undefined> {
  const maxChars = opts.settings?.max_prompt_chars ?? 16_000
  const pending = judgeRequestsOf(specs, trace, ctx, { maxChars })
  if (pending.length === 0) return undefined
  const judgements: Record<string, JudgeGraderVerdict> = {}
  const failedFirst = grades.filter((grade, i) => specs[i] !== undefined && !isJudgeSpec(specs[i]) && !grade.passed)
  if (failedFirst.length > 0) {
    const reason = `deterministic grader(s) ${failedFirst.map((g) => g.grader).join(', ')} failed first: the judge was not asked`
    for (const p of pending) judgements[p.key] = { ok: false, reason }
    return { judgements }
  }
  let error: string | undefined
  for (const p of pending) {
    const model = p.model ?? opts.settings?.model ?? readSetting('judgeModel', opts.env)
    if (model === undefined || model === '') {
      const reason = 'no judge model: set `model` in the grader config, forge run --judge-model, or FORGE_JUDGE_MODEL on the worker'
      judgements[p.key] = { ok: false, reason }
      error ??= `judge grader "${p.grader}": ${reason}`
      continue
    }
    let endpoint
    try {
      endpoint = resolveJudgeEndpoint(opts.env, model)
    } catch (e) {
      const reason = e instanceof Error ? e.message : String(e)
      judgements[p.key] = { ok: false, reason }
      error ??= `judge grader "${p.grader}": ${reason}`
      continue
    }
    const settings = opts.settings ?? JudgeSettings.parse({ model })
    const outcome = await askJudge(p.request, { endpoint, model, settings, ...(opts.limiter ? { limiter: opts.limiter } : {}) })
    if (outcome.ok) {
      judgements[p.key] = { ok: true, verdict: outcome.value.verdict, score: outcome.value.score, reason: outcome.value.reason, stamp: outcome.stamp }
    } else {
      judgements[p.key] = { ok: false, reason: outcome.error }
      error ??= `judge grader "${p.grader}" (${model}): ${outcome.error}`
    }
  }
  return error === undefined ? { judgements } : { judgements, error }
}
