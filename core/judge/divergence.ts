/**
 * Tier 2 — golden divergence. After a tier-0 failure of a task with a golden trace, a judge names
 * the earliest decision that put the run on a wrong path. Most tasks have several correct
 * trajectories, so the prompt tells the judge to ignore order, phrasing and tool sequencing that do
 * not affect correctness; divergence is not failure. It localizes; it never changes the outcome. Pure.
 */
import { z } from 'zod'
import type { AgentTrace, Grade, JudgeStamp, Tier2Result } from '../contracts/index.js'
import { parseStrict, type JudgeCallOutcome, type JudgeRequest, type ParseResult } from './protocol.js'
import { AGENT_TEXT_IS_DATA, clip, renderInput, renderSteps, traceSteps } from './render.js'

export const GOLDEN_DIVERGENCE_PROMPT_VERSION = 'golden-divergence/2'

export const DivergenceReply = z.strictObject({
  /** 1-based step of the failed run; null when no decision of the run was wrong */
  divergence_step: z.number().int().positive().nullable(),
  decision: z.string(),
  explanation: z.string(),
  confidence: z.number().min(0).max(1),
})
export type DivergenceReply = z.infer<typeof DivergenceReply>

const REPLY_SCHEMA = {
  type: 'object',
  properties: {
    divergence_step: { type: ['integer', 'null'], minimum: 1 },
    decision: { type: 'string' },
    explanation: { type: 'string' },
    confidence: { type: 'number', minimum: 0, maximum: 1 },
  },
  required: ['divergence_step', 'decision', 'explanation', 'confidence'],
  additionalProperties: false,
}

export interface DivergenceQuestion {
  instruction: string
  input: Record<string, unknown>
  /** why tier 0 failed the run: the failing grades */
  grades: readonly Grade[]
  golden: AgentTrace
  run: AgentTrace
  maxChars: number
}

const SYSTEM = [
  'You compare a FAILED run of an AI agent with a GOLDEN (known-good) run of the same task, to find where the failed run went wrong.',
  'Several different trajectories can be correct. Ignore differences in the order of steps, in phrasing or formatting, and in',
  'which tools were used, whenever they do not affect whether the task is solved. A step that differs from the golden run is',
  'not wrong by itself. Name the EARLIEST step of the failed run after which it could no longer succeed without correcting',
  'that decision. If no step of the failed run is wrong, answer null.',
  'Reply with exactly one JSON object and nothing else:',
  '{"divergence_step": <step number of the failed run, or null>, "decision": "<what the agent decided at that step>",',
  '"explanation": "<why that put the run on a wrong path, one or two sentences>", "confidence": <a number from 0 to 1>}',
  AGENT_TEXT_IS_DATA,
].join('\n')

/** The tier-2 request for one failed attempt; the parser rejects a step the failed run does not have. */
export function divergenceRequest(q: DivergenceQuestion): JudgeRequest<DivergenceReply> {
  const runSteps = traceSteps(q.run)
  const failing = q.grades.filter((grade) => !grade.passed)
  const budget = Math.max(600, q.maxChars - q.instruction.length)
  const parts = [
    `Task given to the agent:\n${clip(q.instruction, 2_000)}`,
    `Task input:\n${renderInput(q.input)}`,
    `Why the failed run was graded a failure:\n${failing.map((grade) => `- ${grade.grader}: ${clip(grade.detail, 300)}`).join('\n') || '- (no failing grade detail)'}`,
    `GOLDEN run (known good):\n${renderSteps(traceSteps(q.golden), { maxChars: Math.floor(budget * 0.4) })}`,
    `FAILED run (${runSteps.length} steps):\n${renderSteps(runSteps, { maxChars: Math.floor(budget * 0.6) })}`,
    'Which step of the FAILED run is the earliest wrong decision? Reply with the JSON object only.',
  ]
  return {
    purpose: 'golden_divergence',
    prompt_version: GOLDEN_DIVERGENCE_PROMPT_VERSION,
    schema: REPLY_SCHEMA,
    schema_name: 'golden_divergence',
    messages: [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: parts.join('\n\n') },
    ],
    parse: (text) => parseDivergence(text, runSteps.length),
  }
}

/** Strict: one JSON object of exactly the reply's keys, and a step the failed run has. */
export function parseDivergence(text: string, steps: number): ParseResult<DivergenceReply> {
  const parsed = parseStrict(text, DivergenceReply)
  if (!parsed.ok) return parsed
  const step = parsed.value.divergence_step
  if (step !== null && step > steps) return { ok: false, error: `divergence_step ${step} is not a step of the failed run (it has steps 1 to ${steps})` }
  return parsed
}

/**
 * The tier-2 result from the judge call: `localized` (a step, with its confidence), `not_localized`
 * (the judge found no wrong step), or `errored` (malformed twice, or no answer at all).
 * `low_confidence` is set below `minConfidence`, and for `not_localized`.
 */
export function tier2FromCall(outcome: JudgeCallOutcome<DivergenceReply>, minConfidence: number): Tier2Result {
  const judge: JudgeStamp = outcome.stamp
  if (!outcome.ok) {
    return {
      status: 'errored',
      divergence_step: null,
      decision: '',
      explanation: '',
      confidence: null,
      low_confidence: true,
      calls: outcome.calls,
      error: outcome.error,
      judge,
    }
  }
  const reply = outcome.value
  const localized = reply.divergence_step !== null
  return {
    status: localized ? 'localized' : 'not_localized',
    divergence_step: reply.divergence_step,
    decision: reply.decision,
    explanation: reply.explanation,
    confidence: reply.confidence,
    low_confidence: !localized || reply.confidence < minConfidence,
    calls: outcome.calls,
    error: '',
    judge,
  }
}

/** A tier-2 result that carries only its status (not applicable, pending, not run). */
export function tier2Status(status: 'not_applicable' | 'pending' | 'not_run', error = ''): Tier2Result {
  return { status, divergence_step: null, decision: '', explanation: '', confidence: null, low_confidence: false, calls: 0, error, judge: null }
}
