/**
 * How Forge talks to a judge model, as pure data: a request (messages, the JSON Schema of the only
 * acceptable reply, a prompt version) and a strict parser of the reply. The worker (engine/judge)
 * sends requests and retries a malformed reply once; nothing here does I/O.
 */
import { z } from 'zod'
import type { JudgeSettings, JudgeStamp } from '../contracts/index.js'

export interface JudgeMessage {
  role: 'system' | 'user' | 'assistant'
  content: string
}

export type ParseResult<T> = { ok: true; value: T } | { ok: false; error: string }

/** What a judge is asked for. */
export type JudgePurpose = 'grader' | 'golden_divergence' | 'metrics'

/** One question to a judge model; `parse` accepts only a reply that is exactly the JSON `schema` describes. */
export interface JudgeRequest<T> {
  purpose: JudgePurpose
  prompt_version: string
  messages: JudgeMessage[]
  /** the JSON Schema of the reply, sent as `response_format` when the endpoint supports it */
  schema: Record<string, unknown>
  schema_name: string
  parse(text: string): ParseResult<T>
}

/** A judge call's outcome as the worker reports it back to pure code. */
export type JudgeCallOutcome<T> =
  | { ok: true; value: T; stamp: JudgeStamp; calls: number }
  | { ok: false; error: string; stamp: JudgeStamp; calls: number; /** every reply was malformed (not a transport failure) */ malformed: boolean }

/** The decoding settings a judge call sends, from the run's judge settings (only what is set). */
export function judgeDecoding(settings: Pick<JudgeSettings, 'temperature' | 'top_p' | 'seed' | 'max_tokens' | 'response_format'>): Record<string, unknown> {
  const decoding: Record<string, unknown> = { temperature: settings.temperature, max_tokens: settings.max_tokens }
  if (settings.top_p !== undefined) decoding['top_p'] = settings.top_p
  if (settings.seed !== null) decoding['seed'] = settings.seed
  decoding['response_format'] = settings.response_format
  return decoding
}

/**
 * The messages of the one retry after a malformed reply: the original conversation, the rejected
 * reply, and a correction naming what was wrong.
 */
export function retryMessages(request: JudgeRequest<unknown>, rejectedReply: string, problem: string): JudgeMessage[] {
  return [
    ...request.messages,
    { role: 'assistant', content: rejectedReply.length > 2000 ? `${rejectedReply.slice(0, 2000)}…` : rejectedReply },
    {
      role: 'user',
      content: `That reply was rejected: ${problem}. Answer again with one JSON object that matches the requested shape exactly, and nothing else: no prose, no code fence.`,
    },
  ]
}

/**
 * The reply as one JSON object, strictly: the whole text (surrounding whitespace aside) must be
 * it — no code fence, no prose before or after.
 */
export function strictJsonObject(text: string): ParseResult<Record<string, unknown>> {
  const trimmed = text.trim()
  if (trimmed === '') return { ok: false, error: 'the reply is empty' }
  if (trimmed.startsWith('```')) return { ok: false, error: 'the reply is wrapped in a code fence, not bare JSON' }
  if (!trimmed.startsWith('{')) return { ok: false, error: `the reply does not start with a JSON object: ${preview(trimmed)}` }
  let value: unknown
  try {
    value = JSON.parse(trimmed)
  } catch (error) {
    return { ok: false, error: `the reply is not valid JSON (${error instanceof Error ? error.message : String(error)}): ${preview(trimmed)}` }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, error: 'the reply is not a JSON object' }
  return { ok: true, value: value as Record<string, unknown> }
}

/** Parses a reply strictly as JSON, then with a strict zod schema (unknown keys are malformed too). */
export function parseStrict<T>(text: string, schema: z.ZodType<T>): ParseResult<T> {
  const json = strictJsonObject(text)
  if (!json.ok) return json
  const parsed = schema.safeParse(json.value)
  if (parsed.success) return { ok: true, value: parsed.data }
  const problems = parsed.error.issues.slice(0, 4).map((issue) => {
    const at = issue.path.map(String).join('.')
    return issue.code === 'unrecognized_keys' ? `unexpected key(s) ${issue.keys.map((k) => `"${k}"`).join(', ')}${at ? ` in ${at}` : ''}` : `${at || '(reply)'}: ${issue.message}`
  })
  return { ok: false, error: `the reply does not have the requested shape: ${problems.join('; ')}` }
}

function preview(text: string): string {
  const flat = text.replace(/\s+/g, ' ')
  return JSON.stringify(flat.length > 80 ? `${flat.slice(0, 80)}…` : flat)
}
