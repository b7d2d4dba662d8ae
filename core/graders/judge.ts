import { z } from 'zod'
import type { JudgeStamp } from '../contracts/index.js'
import { canonicalJson } from '../env-diff.js'
import { JUDGE_GRADER_PROMPT_VERSION, judgeGraderRequest } from '../judge/grader-prompt.js'
import type { GraderDefinition } from '../plugins.js'
import { baseConfigShape, passFail } from './common.js'
import { quote } from './output.js'

export const JudgeGraderConfig = z.strictObject({
  ...baseConfigShape,
  /** what a passing answer does, in plain words: the judge grades against this */
  rubric: z.string().min(1),
  /** a reference answer the judge may compare with */
  reference: z.string().min(1).optional(),
  /** the judge model; default: the run's judge model (--judge-model), else FORGE_JUDGE_MODEL on the worker */
  model: z.string().min(1).optional(),
  /** show the judge the tool calls as well as the answer */
  include_tool_calls: z.boolean().default(true),
  /** also require the judge's 0–1 score to reach this */
  min_score: z.number().min(0).max(1).optional(),
})
export type JudgeGraderConfig = z.output<typeof JudgeGraderConfig>

/** A judge grader's answer for one attempt, as the worker hands it back (GradeContext.judgements). */
export type JudgeGraderVerdict =
  | { ok: true; verdict: 'pass' | 'fail'; score: number; reason: string; stamp: JudgeStamp }
  /** not judged: a deterministic grader failed first, or no judge answered */
  | { ok: false; reason: string }

/** The key a judge grader's verdict is found under: equal configs share one judge call. */
export function judgeGraderKey(config: JudgeGraderConfig): string {
  return canonicalJson(config)
}

export const judgeGrader: GraderDefinition<JudgeGraderConfig> = {
  name: 'judge',
  description:
    'An LLM judge (any OpenAI-compatible model) grades the answer against `rubric` (and `reference` when given), replying ' +
    'in strict JSON; a malformed reply is retried once. Asked only after every deterministic grader of the task passed. ' +
    'Records the model, prompt version and decoding settings.',
  configSchema: JudgeGraderConfig,
  judge: {
    key: judgeGraderKey,
    model: (config) => config.model,
    request: (config, trace, ctx, opts) =>
      judgeGraderRequest({
        instruction: ctx.task.instruction,
        input: ctx.task.input,
        rubric: config.rubric,
        reference: config.reference,
        trace,
        includeToolCalls: config.include_tool_calls,
        maxChars: opts.maxChars,
      }),
  },
  grade(config, _trace, ctx) {
    const verdict = ctx.judgements?.[judgeGraderKey(config)]
    // a judge grade always carries a stamp, so it is never mistaken for a programmatic one; model '' = not judged
    const unjudged = { model: '', prompt_version: JUDGE_GRADER_PROMPT_VERSION, decoding: {} }
    if (verdict === undefined) return { ...passFail(false, 'not judged: no judge verdict was recorded for this grader'), judge: unjudged }
    if (!verdict.ok) return { ...passFail(false, `not judged: ${verdict.reason}`), judge: unjudged }
    const passed = verdict.verdict === 'pass' && (config.min_score === undefined || verdict.score >= config.min_score)
    const bar = config.min_score === undefined ? '' : ` (needs ${config.min_score})`
    return {
      passed,
      score: verdict.score,
      judge: verdict.stamp,
      detail: `judge ${verdict.stamp.model} [${verdict.stamp.prompt_version}]: ${verdict.verdict}, score ${verdict.score}${bar}: ${quote(verdict.reason, 300)}`,
    }
  },
}
