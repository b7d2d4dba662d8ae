/**
 * What the model-backed adapters (react, single_shot, langgraph, pydantic-ai) share: their config
 * (model and decoding settings), the prompt they build from the invocation payload, and how tool
 * specs, tool arguments and tool results cross to and from the model.
 */
import type OpenAI from 'openai'
import { loadedOpenAI, loadOpenAI } from '../llm/openai-package.js'
import { z } from 'zod'
import type { InvocationPayload, ToolSpec } from '../../core/contracts/index.js'
import type { AdapterContext, LlmEndpoint } from '../../core/plugins.js'
import { LlmConfigError } from '../llm/errors.js'
import { gatewayConfigShape, harnessConfigShape, parseAdapterConfig } from './config-schema.js'

/**
 * ctx.config of a model-backed adapter (react, single_shot, langgraph; pydantic-ai adds `python`).
 * `base_url`, `api_key_env` and `price_table` are read by the worker's LLM gateway, not here.
 */
export const ModelAdapterConfig = z
  .strictObject({
    model: z
      .string({ error: (issue) => (issue.input === undefined ? 'required (forge run --model NAME, or "model" in --adapter-config)' : undefined) })
      .min(1)
      .describe('The model name sent upstream (what --model sets).'),
    temperature: z.number().min(0).max(2).optional().describe('Sampling temperature (0..2).'),
    top_p: z.number().min(0).max(1).optional().describe('Nucleus sampling mass (0..1).'),
    seed: z
      .number()
      .int()
      .nullable()
      .optional()
      .describe("Sampling seed; default: the attempt's seed, so a rerun asks for the same sampling; null sends none."),
    max_tokens: z.number().int().positive().optional().describe('Completion tokens per model call.'),
    frequency_penalty: z.number().min(-2).max(2).optional().describe('Frequency penalty (-2..2).'),
    presence_penalty: z.number().min(-2).max(2).optional().describe('Presence penalty (-2..2).'),
    stop: z.union([z.string(), z.array(z.string())]).optional().describe('Stop sequence(s).'),
    max_steps: z.number().int().positive().max(200).default(12).describe('Model calls per attempt (each tool round is one).'),
    system_prompt: z.string().optional().describe('Replaces the default system prompt (the denylist and tool budget are still appended).'),
    price_table: harnessConfigShape.price_table,
    decoding: harnessConfigShape.decoding,
    ...gatewayConfigShape,
  })
  .describe('Config of a model-backed adapter (--adapter-config; --model sets model).')
export type ModelAdapterConfig = z.output<typeof ModelAdapterConfig>

/** The sampling settings sent with every call of an attempt (only what is set). */
export interface Decoding {
  temperature?: number
  top_p?: number
  seed?: number
  max_tokens?: number
  frequency_penalty?: number
  presence_penalty?: number
  stop?: string | string[]
}

/** Parses a model adapter's config; throws LlmConfigError naming the field (a missing model says how to give one). */
export function parseModelConfig(adapter: string, config: Record<string, unknown>): ModelAdapterConfig {
  return parseAdapterConfig(adapter, ModelAdapterConfig, config, (message) => new LlmConfigError(message))
}

/** The decoding settings of an attempt: the config's, with the seed defaulting to the attempt's. */
export function decodingFor(config: ModelAdapterConfig, attemptSeed: number): Decoding {
  const decoding: Decoding = {}
  if (config.temperature !== undefined) decoding.temperature = config.temperature
  if (config.top_p !== undefined) decoding.top_p = config.top_p
  if (config.seed !== null) decoding.seed = config.seed ?? attemptSeed
  if (config.max_tokens !== undefined) decoding.max_tokens = config.max_tokens
  if (config.frequency_penalty !== undefined) decoding.frequency_penalty = config.frequency_penalty
  if (config.presence_penalty !== undefined) decoding.presence_penalty = config.presence_penalty
  if (config.stop !== undefined) decoding.stop = config.stop
  return decoding
}

const DEFAULT_SYSTEM_PROMPT =
  'You are an agent under evaluation. Solve the task. Use the tools you are given when they help; ' +
  'never invent tools. When you are done, reply with the final answer alone, without explanation.'

/** The system prompt: the config's or the default, plus the denylist and tool budget from the payload. */
export function systemPrompt(payload: InvocationPayload, config: ModelAdapterConfig): string {
  const lines = [config.system_prompt ?? DEFAULT_SYSTEM_PROMPT]
  if (payload.disallowed_tools.length > 0) lines.push(`Never call these tools: ${payload.disallowed_tools.join(', ')}.`)
  if (payload.tools.length > 0) lines.push(`You may make at most ${payload.budget.max_tool_calls} tool calls.`)
  return lines.join('\n')
}

/** The user turn: the task's instruction verbatim, then its input as JSON. */
export function userPrompt(payload: InvocationPayload): string {
  const input = Object.keys(payload.input).length > 0 ? `\n\nInput:\n${JSON.stringify(payload.input, null, 2)}` : ''
  return `${payload.instruction}${input}`
}

/** Tool specs as OpenAI function tools. */
export function openAiTools(specs: ToolSpec[]): OpenAI.Chat.Completions.ChatCompletionFunctionTool[] {
  return specs.map((spec) => ({
    type: 'function',
    function: { name: spec.name, description: spec.description, parameters: spec.input_schema },
  }))
}

/**
 * A model's tool-call arguments (a JSON string) as the value handed to the tool proxy. Text that is
 * not JSON is passed on as it is, so the proxy records the call as malformed rather than the
 * adapter hiding it.
 */
export function parseToolArguments(text: string): unknown {
  if (text.trim() === '') return {}
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
  }
}

/** A tool outcome as the content of the `tool` message the model sees next. */
export function toolResultContent(outcome: { ok: true; result: unknown } | { ok: false; error: string }): string {
  if (!outcome.ok) return `Error: ${outcome.error}`
  if (typeof outcome.result === 'string') return outcome.result
  return JSON.stringify(outcome.result) ?? 'null'
}

/** An OpenAI client pointed at the attempt's LLM gateway: no retries (a retry is the agent's decision), aborted with the attempt. */
export async function gatewayClient(endpoint: LlmEndpoint, ctx: AdapterContext): Promise<OpenAI> {
  const Client = await loadOpenAI()
  return new Client({ baseURL: endpoint.baseURL, apiKey: endpoint.apiKey, maxRetries: 0, timeout: ctx.budget.max_duration_ms })
}

/** True for the gateway's answer once the attempt's token budget is spent. */
export function isTokenBudgetError(error: unknown): boolean {
  const openai = loadedOpenAI()
  return openai !== undefined && error instanceof openai.APIError && error.code === 'max_tokens_budget_exhausted'
}

/**
 * True when a model call failed for reasons outside the agent — the model server unreachable or
 * failing (5xx): the adapter throws, so the attempt is a visible harness error, not an agent failure.
 */
export function isInfrastructureError(error: unknown): boolean {
  const openai = loadedOpenAI()
  if (openai === undefined || error instanceof openai.APIUserAbortError) return false
  if (error instanceof openai.APIConnectionError) return true
  return error instanceof openai.APIError && typeof error.status === 'number' && error.status >= 500
}

/** How a failed model call is kept on the trace. */
export function modelError(error: unknown): { kind: string; message: string } {
  if (isTokenBudgetError(error)) return { kind: 'budget_exhausted', message: errorMessage(error) }
  const openai = loadedOpenAI()
  if (openai !== undefined && error instanceof openai.APIUserAbortError) return { kind: 'aborted', message: 'the attempt was stopped during a model call' }
  return { kind: 'model_error', message: errorMessage(error) }
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
