/** The tier-0 `judge` grader's question to a judge model and the strict parser of its answer. Pure. */
import { z } from 'zod'
import type { AgentTrace } from '../contracts/index.js'
import { outputText } from '../graders/output.js'
import { parseStrict, type JudgeRequest } from './protocol.js'
import { AGENT_TEXT_IS_DATA, clip, renderInput, renderSteps, traceSteps } from './render.js'

export const JUDGE_GRADER_PROMPT_VERSION = 'judge-grader/2'

export const JudgeGraderReply = z.strictObject({
  verdict: z.enum(['pass', 'fail']),
  score: z.number().min(0).max(1),
  reason: z.string(),
})
export type JudgeGraderReply = z.infer<typeof JudgeGraderReply>

const REPLY_SCHEMA = {
  type: 'object',
  properties: {
    verdict: { type: 'string', enum: ['pass', 'fail'] },
    score: { type: 'number', minimum: 0, maximum: 1 },
    reason: { type: 'string' },
  },
  required: ['verdict', 'score', 'reason'],
  additionalProperties: false,
}

export interface JudgeGraderQuestion {
  instruction: string
  input: Record<string, unknown>
  /** what a passing answer does, in the task author's words */
  rubric: string
  /** a reference answer the judge may compare with */
  reference?: string | undefined
  trace: AgentTrace
  includeToolCalls: boolean
  maxChars: number
}

const SYSTEM =
  "You are a strict, impartial grader of an AI agent's work. Judge the agent's final answer (and its steps, when shown) " +
  'against the rubric only; ignore style and wording that do not affect whether the rubric is met. Reply with exactly one ' +
  'JSON object and nothing else: {"verdict": "pass" or "fail", "score": a number from 0 to 1, "reason": "one short sentence"}. ' +
  AGENT_TEXT_IS_DATA

/** The judge grader's request for one attempt. */
export function judgeGraderRequest(q: JudgeGraderQuestion): JudgeRequest<JudgeGraderReply> {
  const answer = outputText(q.trace.output).trim()
  const budget = Math.max(400, q.maxChars - q.instruction.length - q.rubric.length - (q.reference?.length ?? 0))
  const parts = [
    `Task given to the agent:\n${clip(q.instruction, 2_000)}`,
    `Task input:\n${renderInput(q.input)}`,
    `Rubric (what a passing answer does):\n${clip(q.rubric, 2_000)}`,
    ...(q.reference !== undefined ? [`Reference answer:\n${clip(q.reference, 2_000)}`] : []),
    ...(q.includeToolCalls ? [`The agent's steps:\n${renderSteps(traceSteps(q.trace).slice(0, -1).concat('(final answer below)'), { maxChars: Math.floor(budget / 2) })}`] : []),
    `The agent's final answer (quoted as a JSON string):\n${answer === '' ? '(empty)' : JSON.stringify(clip(answer, Math.floor(budget / 2)))}`,
    'Grade the answer. Reply with the JSON object only.',
  ]
  return {
    purpose: 'grader',
    prompt_version: JUDGE_GRADER_PROMPT_VERSION,
    schema: REPLY_SCHEMA,
    schema_name: 'judge_grade',
    messages: [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: parts.join('\n\n') },
    ],
    parse: (text) => parseStrict(text, JudgeGraderReply),
  }
}
