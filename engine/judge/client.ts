/**
 * The judge's one door to a model: an OpenAI-compatible chat completion (any server: the endpoint
 * comes from the worker's FORGE_JUDGE_BASE_URL / FORGE_JUDGE_API_KEY, else OPENAI_BASE_URL /
 * OPENAI_API_KEY). It sends a pure JudgeRequest (core/judge), parses the reply strictly, retries a
 * malformed reply once with a correction, and reports model, prompt version and decoding settings
 * with every answer. A judge that cannot answer is data (`ok: false`), never an exception.
 */
import type OpenAI from 'openai'
import { loadOpenAI } from '../llm/openai-package.js'
import type { JudgeSettings, JudgeStamp } from '../../core/contracts/index.js'
import { judgeDecoding, retryMessages, type JudgeCallOutcome, type JudgeMessage, type JudgeRequest } from '../../core/judge/protocol.js'
import { readSetting } from '../../config/index.js'
import { localModelUpstream } from '../llm/gateway.js'
import { isLocalModel } from '../llm/local/models.js'
import { JudgeConfigError } from './errors.js'
import { sharedJudgeLimiter, type RateLimiter } from './rate-limit.js'

export interface JudgeEndpoint {
  /** an OpenAI-compatible base URL ending in /v1 */
  baseURL: string
  apiKey?: string
}

/**
 * Where the judge model is: FORGE_JUDGE_BASE_URL / FORGE_JUDGE_API_KEY, else OPENAI_BASE_URL /
 * OPENAI_API_KEY; a `local` judge model is served by the stack's model server (FORGE_LOCAL_MODEL_URL).
 */
export function resolveJudgeEndpoint(env: NodeJS.ProcessEnv, model?: string): JudgeEndpoint {
  if (isLocalModel(model)) {
    try {
      return localModelUpstream(model, env)
    } catch (error) {
      throw new JudgeConfigError((error as Error).message)
    }
  }
  // FORGE_JUDGE_BASE_URL is validated by the config; OPENAI_BASE_URL is the agents' variable, checked here
  const baseURL = readSetting('judgeBaseUrl', env) ?? (env['OPENAI_BASE_URL'] || 'https://api.openai.com/v1')
  if (!/^https?:\/\//.test(baseURL)) throw new JudgeConfigError(`OPENAI_BASE_URL (the judge's endpoint without FORGE_JUDGE_BASE_URL) must be an http(s) URL, got ${JSON.stringify(baseURL)}`)
  const apiKey = readSetting('judgeApiKey', env) ?? (env['OPENAI_API_KEY'] || undefined)
  return apiKey ? { baseURL, apiKey } : { baseURL }
}

export interface JudgeCallOptions {
  endpoint: JudgeEndpoint
  model: string
  settings: Pick<JudgeSettings, 'temperature' | 'top_p' | 'seed' | 'max_tokens' | 'response_format' | 'timeout_ms'>
  /** waits for a slot before every call (default: the process's judge limiter, FORGE_JUDGE_RATE per second) */
  limiter?: RateLimiter
  signal?: AbortSignal
}

/** What one judge question cost: the calls made and their token usage (recorded, not graded). */
export interface JudgeUsage {
  input_tokens: number
  output_tokens: number
  latency_ms: number
}

/**
 * Asks one question. A reply that `request.parse` rejects is retried once, with the rejected reply
 * and what was wrong with it; a second malformed reply makes the outcome `ok: false, malformed: true`.
 */
export async function askJudge<T>(request: JudgeRequest<T>, opts: JudgeCallOptions): Promise<JudgeCallOutcome<T> & { usage: JudgeUsage }> {
  const decoding = judgeDecoding(opts.settings)
  const stamp: JudgeStamp = { model: opts.model, prompt_version: request.prompt_version, decoding }
  const client = new (await loadOpenAI())({ baseURL: opts.endpoint.baseURL, apiKey: opts.endpoint.apiKey ?? 'no-key', maxRetries: 3, timeout: opts.settings.timeout_ms })
  const limiter = opts.limiter ?? sharedJudgeLimiter()
  const usage: JudgeUsage = { input_tokens: 0, output_tokens: 0, latency_ms: 0 }
  let calls = 0

  const complete = async (messages: JudgeMessage[]): Promise<string> => {
    await limiter.acquire()
    calls++
    const started = Date.now()
    try {
      const completion = await client.chat.completions.create(
        {
          model: opts.model,
          messages,
          temperature: opts.settings.temperature,
          max_tokens: opts.settings.max_tokens,
          ...(opts.settings.top_p !== undefined ? { top_p: opts.settings.top_p } : {}),
          ...(opts.settings.seed !== null ? { seed: opts.settings.seed } : {}),
          ...responseFormat(request, opts.settings.response_format),
        },
        opts.signal ? { signal: opts.signal } : {},
      )
      usage.input_tokens += completion.usage?.prompt_tokens ?? 0
      usage.output_tokens += completion.usage?.completion_tokens ?? 0
      return completion.choices[0]?.message.content ?? ''
    } finally {
      usage.latency_ms += Date.now() - started
    }
  }

  let first: string
  try {
    first = await complete(request.messages)
  } catch (error) {
    return { ok: false, error: `the judge could not be asked: ${errorMessage(error)}`, stamp, calls, malformed: false, usage }
  }
  const parsed = request.parse(first)
  if (parsed.ok) return { ok: true, value: parsed.value, stamp, calls, usage }
  let second: string
  try {
    second = await complete(retryMessages(request, first, parsed.error))
  } catch (error) {
    return { ok: false, error: `malformed reply (${parsed.error}); the retry failed: ${errorMessage(error)}`, stamp, calls, malformed: false, usage }
  }
  const reparsed = request.parse(second)
  if (reparsed.ok) return { ok: true, value: reparsed.value, stamp, calls, usage }
  return { ok: false, error: `malformed reply twice: ${reparsed.error}`, stamp, calls, malformed: true, usage }
}

type ResponseFormat = NonNullable<OpenAI.Chat.Completions.ChatCompletionCreateParams['response_format']>

function responseFormat(request: JudgeRequest<unknown>, kind: JudgeSettings['response_format']): { response_format: ResponseFormat } | Record<string, never> {
  if (kind === 'json_schema') return { response_format: { type: 'json_schema', json_schema: { name: request.schema_name, schema: request.schema, strict: true } } }
  if (kind === 'json_object') return { response_format: { type: 'json_object' } }
  return {}
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
