/**
 * The LLM gateway: a per-attempt OpenAI-compatible HTTP server on 127.0.0.1 that stands between an
 * agent and its real model. The agent gets the gateway's URL and a per-attempt token as its API
 * key (never the real upstream key); the gateway checks the token, forwards
 * `POST /v1/chat/completions` (plain or streamed) to the upstream, records every call as a `model` span (model,
 * decoding parameters, usage, latency), sums usage, prices it with the price table, and enforces
 * the attempt's max_tokens budget. Every model-backed adapter, in-process or not, goes through it.
 * With a fault profile, it is also where model faults are injected (engine/faults.ts).
 */
import { readSetting } from '../../config/index.js'
import { randomBytes, timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { BudgetLimit, Span, TokenUsage } from '../../core/contracts/index.js'
import type { LlmEndpoint } from '../../core/plugins.js'
import { costOf, type PriceTable } from '../../core/pricing.js'
import { MODEL_TOOL } from '../../core/faults.js'
import { answerModelFault, type AttemptFaults } from '../faults.js'
import { LlmConfigError } from './errors.js'
import { isLocalModel } from './local/models.js'
import { parseUntrustedJson } from '../../core/untrusted-json.js'

/** Where the gateway forwards to: an OpenAI-compatible base URL (ending in /v1) and its key. */
export interface LlmUpstream {
  baseURL: string
  /** sent upstream as `Authorization: Bearer …`; absent for local servers that need none */
  apiKey?: string
}

export interface LlmGatewayOptions {
  upstream: LlmUpstream
  /** the attempt's token budget (input + output tokens over every call) */
  maxTokens?: number | undefined
  /** prices calls; without one every cost is unavailable */
  priceTable?: PriceTable | undefined
  /** epoch ms the attempt started at: span start times are relative to it */
  startedAt: number
  now?: () => number
  /** called once when the token budget stops the agent */
  onBudgetExhausted?: (limit: BudgetLimit) => void
  /** how long one upstream call may take (default 120 s) */
  upstreamTimeoutMs?: number
  /** the parent of the gateway's spans (default `agent`) */
  parentSpanId?: string
  /**
   * The run's fault injection: a completion may get a seeded 500, 429, timeout (504 after the
   * per-call timeout), malformed completion or added latency instead of (or before) the model's
   * answer; its span records `injected_fault`.
   */
  faults?: AttemptFaults | undefined
}

/** What the gateway measured over the attempt. */
export interface LlmGatewaySummary {
  /** completion requests that reached the gateway with a valid token */
  calls: number
  usage: TokenUsage
  /** USD over every call; null when a model has no price or a response carried no usage */
  cost_usd: number | null
  /** the distinct models requested, in first-seen order */
  models: string[]
  /** the decoding settings of the first call */
  decoding: Record<string, unknown>
  /** the price table's version, or '' without one */
  price_table_version: string
  /** true once max_tokens stopped the agent */
  budget_exhausted: boolean
  /** requests refused: malformed, over budget, a wrong key, another route; past MAX_REFUSED_MODEL_CALLS the gateway closed */
  refused_calls: number
  /** the gateway stopped answering this attempt's agent (MAX_REFUSED_MODEL_CALLS refused calls) */
  closed_early: boolean
}

export interface LlmGateway extends LlmEndpoint {
  /** one `model` span per completion request, in arrival order */
  readonly spans: Span[]
  summary(): LlmGatewaySummary
  /** stops accepting calls, aborts calls still in flight and closes every connection */
  close(): Promise<void>
}

/** The request fields that describe how a model decodes, recorded on every span and attempt. */
export const DECODING_FIELDS = [
  'temperature',
  'top_p',
  'seed',
  'max_tokens',
  'max_completion_tokens',
  'frequency_penalty',
  'presence_penalty',
  'stop',
  'n',
  'logprobs',
  'top_logprobs',
  'logit_bias',
  'tool_choice',
  'parallel_tool_calls',
  'reasoning_effort',
  'response_format',
  'service_tier',
] as const

const MAX_BODY_BYTES = 16 * 1024 * 1024
/**
 * How many requests the gateway refuses an attempt's agent (a malformed body, a spent token budget,
 * a wrong key, another route) before it closes for the rest of the attempt. Every call costs the worker a request and leaves a
 * span; an agent that sent a few bad requests a millisecond kept a worker's event loop busy until its
 * deadline and its trace growing (46,000 spans, 9 MB, in 120 s).
 */
export const MAX_REFUSED_MODEL_CALLS = 100
const DEFAULT_UPSTREAM_TIMEOUT_MS = 120_000

/** The decoding settings a chat-completion request asks for (only the fields it sets). */
export function decodingOf(request: Record<string, unknown>): Record<string, unknown> {
  const decoding: Record<string, unknown> = {}
  for (const field of DECODING_FIELDS) {
    const value = request[field]
    if (value === undefined || value === null) continue
    // a response_format's schema can be large: its type says enough
    decoding[field] = field === 'response_format' && typeof value === 'object' ? { type: (value as Record<string, unknown>)['type'] } : value
  }
  return decoding
}

/** Starts a gateway on 127.0.0.1 (a free port); close it when the attempt ends. */
export async function startLlmGateway(opts: LlmGatewayOptions): Promise<LlmGateway> {
  const token = `forge-${randomBytes(24).toString('hex')}`
  const closing = new AbortController()
  const meter = createUsageMeter(opts)
  // calls still being answered: close() waits for them, so each leaves its span
  const inflight = new Set<Promise<void>>()
  // past MAX_REFUSED_MODEL_CALLS refused calls nothing listens any more: the kernel refuses the rest
  const shutOut = (): void => {
    server.close()
    server.closeAllConnections()
  }
  const server = createServer(
    routeRequests(
      Buffer.from(token),
      inflight,
      (req, res) => handleCompletion(req, res, { meter, upstream: opts.upstream, timeoutMs: opts.upstreamTimeoutMs ?? DEFAULT_UPSTREAM_TIMEOUT_MS, closing: closing.signal, faults: opts.faults, shutOut }),
      // a wrong key or another route: no span, but it counts towards closing
      (res) => {
        if (meter.refuse()) res.once('close', shutOut)
      },
    ),
  )
  server.keepAliveTimeout = 5_000
  const port = await listenOnLoopback(server)

  let closed: Promise<void> | undefined
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    apiKey: token,
    spans: meter.spans,
    summary: () => meter.summary(),
    close() {
      closed ??= (async () => {
        closing.abort(new Error('the attempt ended'))
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()))
        server.closeAllConnections()
        await Promise.allSettled([...inflight])
        await stopped
      })()
      return closed
    },
  }
}

/** What the gateway measures over an attempt: the spans, models, usage, cost and the token budget. */
interface UsageMeter {
  readonly spans: Span[]
  /** a new call: its attributes, and `record` to leave its span once it is answered */
  startCall(): ModelCall
  /** the call's model and decoding (the attempt keeps the first call's decoding) */
  noteRequest(model: string, decoding: Record<string, unknown>): void
  /** the budget is spent: stops the agent (once) and says how much was used */
  budgetSpent(): string | undefined
  /** adds an answered call's usage and cost; a response without usage makes the cost unavailable */
  account(call: ModelCall, model: string, facts: CompletionFacts): void
  /** counts a refused call; true once there were more than MAX_REFUSED_MODEL_CALLS (the gateway closes) */
  refuse(): boolean
  summary(): LlmGatewaySummary
}

interface ModelCall {
  attributes: Record<string, unknown>
  record(status: string, model: string): void
}

function createUsageMeter(opts: LlmGatewayOptions): UsageMeter {
  const now = opts.now ?? Date.now
  const parent = opts.parentSpanId ?? 'agent'
  const spans: Span[] = []
  let nextSpan = 0
  const models: string[] = []
  const usage = { input_tokens: 0, output_tokens: 0 }
  let decoding: Record<string, unknown> | undefined
  let cost: number | null = 0
  let exhausted = false
  let refused = 0
  const exhaust = (): void => {
    if (exhausted) return
    exhausted = true
    opts.onBudgetExhausted?.('max_tokens')
  }
  const used = (): number => usage.input_tokens + usage.output_tokens
  return {
    spans,
    startCall() {
      const started = now()
      const index = nextSpan++
      const attributes: Record<string, unknown> = {}
      return {
        attributes,
        record(status, model) {
          const finished = now()
          const made: Span = {
            span_id: `model-${index}`,
            parent_span_id: parent,
            category: 'model',
            name: model || 'chat.completions',
            start_ms: Math.max(0, started - opts.startedAt),
            duration_ms: Math.max(0, finished - started),
            attributes: { status, ...attributes, latency_ms: Math.max(0, finished - started) },
          }
          // concurrent calls finish out of order: keep arrival order, looking from the end (they mostly come in order;
          // sorting the whole list per call made a long attempt's calls quadratic)
          let at = spans.length
          while (at > 0 && spanIndex(spans[at - 1]!) > index) at--
          spans.splice(at, 0, made)
        },
      }
    },
    noteRequest(model, callDecoding) {
      if (model && !models.includes(model)) models.push(model)
      decoding ??= callDecoding
    },
    refuse() {
      refused++
      return refused > MAX_REFUSED_MODEL_CALLS
    },
    budgetSpent() {
      if (opts.maxTokens === undefined || used() < opts.maxTokens) return undefined
      exhaust()
      return `token budget exhausted: ${used()} of max_tokens ${opts.maxTokens} used by this attempt`
    },
    account(call, model, facts) {
      const responseModel = facts.model ?? model
      Object.assign(call.attributes, { response_model: responseModel, finish_reason: facts.finishReason, tool_calls: facts.toolCalls })
      const callUsage = facts.usage
      if (callUsage === undefined) {
        // a response without usage cannot be priced or budgeted: the cost becomes unavailable
        call.attributes['usage'] = 'missing'
        cost = null
      } else {
        usage.input_tokens += callUsage.input_tokens
        usage.output_tokens += callUsage.output_tokens
        const callCost = opts.priceTable ? (costOf(opts.priceTable, responseModel, callUsage) ?? costOf(opts.priceTable, model, callUsage)) : null
        Object.assign(call.attributes, { input_tokens: callUsage.input_tokens, output_tokens: callUsage.output_tokens, cost_usd: callCost })
        cost = cost === null || callCost === null ? null : cost + callCost
        if (opts.maxTokens !== undefined && used() > opts.maxTokens) exhaust()
      }
    },
    summary() {
      return {
        calls: spans.length,
        usage: { ...usage },
        cost_usd: opts.priceTable ? cost : null,
        models: [...models],
        decoding: { ...(decoding ?? {}) },
        price_table_version: opts.priceTable?.version ?? '',
        budget_exhausted: exhausted,
        refused_calls: refused,
        closed_early: refused > MAX_REFUSED_MODEL_CALLS,
      }
    },
  }
}

/** Checks the per-attempt token on every request and serves only chat completions; the rest is refused. */
function routeRequests(token: Buffer, inflight: Set<Promise<void>>, completion: (req: IncomingMessage, res: ServerResponse) => Promise<void>, refused: (res: ServerResponse) => void) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? '').split('?')[0] ?? ''
    if (!authorized(req, token)) {
      req.resume()
      refused(res)
      return sendError(res, 401, 'invalid API key: use the per-attempt token the harness gave you', 'invalid_request_error', 'invalid_api_key')
    }
    if (req.method === 'POST' && (path === '/v1/chat/completions' || path === '/chat/completions')) {
      const call = completion(req, res)
        .catch((error: unknown) => {
          if (!res.headersSent) sendError(res, 500, `gateway error: ${errorMessage(error)}`, 'server_error', 'gateway_error')
          else res.destroy()
        })
        .finally(() => inflight.delete(call))
      inflight.add(call)
      return
    }
    req.resume()
    refused(res)
    sendError(res, 404, `the Forge LLM gateway serves only POST /v1/chat/completions, not ${req.method ?? '?'} ${path}`, 'invalid_request_error', 'not_found')
  }
}

async function listenOnLoopback(server: Server): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
  return (server.address() as AddressInfo).port
}

interface CompletionContext {
  meter: UsageMeter
  upstream: LlmUpstream
  timeoutMs: number
  /** aborted when the gateway closes */
  closing: AbortSignal
  faults: AttemptFaults | undefined
  /** closes the gateway for the rest of the attempt (too many refused calls) */
  shutOut(): void
}

/**
 * One chat completion: read and check the request, refuse it once the budget is spent, forward it
 * (asking a stream for its usage), relay the answer as it comes, then account for its usage. Every
 * call leaves one span, whatever happened to it.
 */
async function handleCompletion(req: IncomingMessage, res: ServerResponse, ctx: CompletionContext): Promise<void> {
  const call = ctx.meter.startCall()
  const request = await readCompletionRequest(req)
  if (!request.ok) {
    call.attributes['error'] = request.error
    call.record('bad_request', '')
    return refuse(ctx, res, 400, `invalid request body: ${request.error}`, 'invalid_request_error', 'invalid_body')
  }
  const { body } = request
  const model = typeof body['model'] === 'string' ? body['model'] : ''
  const callDecoding = decodingOf(body)
  Object.assign(call.attributes, { model, ...callDecoding, messages: Array.isArray(body['messages']) ? body['messages'].length : 0 })
  if (Array.isArray(body['tools'])) call.attributes['tools'] = body['tools'].length
  ctx.meter.noteRequest(model, callDecoding)

  if (!model || !Array.isArray(body['messages'])) {
    call.record('bad_request', model)
    return refuse(ctx, res, 400, 'a chat completion needs "model" (a string) and "messages" (an array)', 'invalid_request_error', 'invalid_body')
  }
  const spent = ctx.meter.budgetSpent()
  if (spent !== undefined) {
    call.record('budget_exhausted', model)
    return refuse(ctx, res, 400, spent, 'budget_exhausted', 'max_tokens_budget_exhausted')
  }
  const forwarded = forwardedRequest(body, request.raw)
  if (forwarded.streamed) call.attributes['stream'] = true
  if (ctx.faults !== undefined && (await injectFault(ctx.faults, call, res, { model, stream: forwarded.streamed }, ctx.closing))) return

  let upstream: Response
  try {
    upstream = await callUpstream(ctx, forwarded)
  } catch (error) {
    call.attributes['error'] = `upstream unreachable: ${errorMessage(error)}`
    call.record('upstream_error', model)
    return sendError(res, 502, `the Forge LLM gateway could not reach the model: ${errorMessage(error)}`, 'upstream_error', 'upstream_unreachable')
  }
  call.attributes['http_status'] = upstream.status
  const facts = await relayAnswer(upstream, res, forwarded, call, model)
  if (facts === undefined) return
  ctx.meter.account(call, model, facts)
  call.record('ok', model)
}

/** Answers a refused call; past MAX_REFUSED_MODEL_CALLS of them the gateway closes for the rest of the attempt. */
function refuse(ctx: CompletionContext, res: ServerResponse, status: number, message: string, type: string, code: string): void {
  const tooMany = ctx.meter.refuse()
  // this answer still goes out; then nothing of the agent's reaches the gateway any more
  if (tooMany) res.once('close', () => ctx.shutOut())
  sendError(res, status, tooMany ? `${message}; the gateway refused ${MAX_REFUSED_MODEL_CALLS} requests of this attempt and closes` : message, type, code)
}

/**
 * The seeded fault of this completion (engine/faults.ts), if any: answered in the model's place
 * (true), or latency added before it is forwarded as usual (`slow`: false).
 */
async function injectFault(faults: AttemptFaults, call: ModelCall, res: ServerResponse, request: { model: string; stream: boolean }, closing: AbortSignal): Promise<boolean> {
  const fault = faults.schedule.next('model', MODEL_TOOL)
  if (fault === undefined) return false
  call.attributes['injected_fault'] = fault.kind
  const answer = await answerModelFault(fault, faults.profile, request, res, closing)
  if (!answer.answered) return false
  call.attributes['http_status'] = answer.status
  if (answer.flavour !== undefined) call.attributes['garbage'] = answer.flavour
  call.record('injected_fault', request.model)
  return true
}

type CompletionRequest = { ok: true; body: Record<string, unknown>; raw: string } | { ok: false; error: string }

async function readCompletionRequest(req: IncomingMessage): Promise<CompletionRequest> {
  try {
    const raw = await readBody(req)
    const parsed: unknown = parseUntrustedJson(raw)
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('the body must be a JSON object')
    return { ok: true, body: parsed as Record<string, unknown>, raw }
  } catch (error) {
    return { ok: false, error: errorMessage(error) }
  }
}

interface ForwardedRequest {
  /** the body sent upstream */
  payload: string
  streamed: boolean
  /** the client asked for the stream's usage chunk itself */
  clientWantsUsage: boolean
}

/** A stream reports usage only when asked: ask for it (and hide it later from a client that did not). */
function forwardedRequest(body: Record<string, unknown>, raw: string): ForwardedRequest {
  const streamed = body['stream'] === true
  const clientWantsUsage = isRecord(body['stream_options']) && body['stream_options']['include_usage'] === true
  const payload = streamed && !clientWantsUsage ? JSON.stringify({ ...body, stream_options: { ...(isRecord(body['stream_options']) ? body['stream_options'] : {}), include_usage: true } }) : raw
  return { payload, streamed, clientWantsUsage }
}

function callUpstream(ctx: CompletionContext, request: ForwardedRequest): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: request.streamed ? 'text/event-stream' : 'application/json' }
  if (ctx.upstream.apiKey) headers['authorization'] = `Bearer ${ctx.upstream.apiKey}`
  return fetch(`${ctx.upstream.baseURL.replace(/\/+$/, '')}/chat/completions`, {
    method: 'POST',
    headers,
    body: request.payload,
    signal: AbortSignal.any([ctx.closing, AbortSignal.timeout(ctx.timeoutMs)]),
  })
}

/**
 * Passes the upstream's answer to the client: an error as it is, a stream chunk by chunk, a plain
 * completion whole. Returns what the answer says about the call; undefined when it was an error or
 * broke off (then the call's span is already recorded).
 */
async function relayAnswer(upstream: Response, res: ServerResponse, request: ForwardedRequest, call: ModelCall, model: string): Promise<CompletionFacts | undefined> {
  try {
    if (!upstream.ok) {
      const text = await upstream.text()
      call.attributes['error'] = text.slice(0, 500)
      call.record('upstream_error', model)
      res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' })
      res.end(text)
      return undefined
    }
    if (request.streamed) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
      const facts = await relayStream(upstream, res, request.clientWantsUsage)
      res.end()
      return facts
    }
    const text = await upstream.text()
    const facts = factsOf(parseObject(text))
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(text)
    return facts
  } catch (error) {
    call.attributes['error'] = `upstream failed mid-response: ${errorMessage(error)}`
    call.record('upstream_error', model)
    if (!res.headersSent) sendError(res, 502, `the model's response broke off: ${errorMessage(error)}`, 'upstream_error', 'upstream_broken')
    else res.destroy()
    return undefined
  }
}

/**
 * Resolves the upstream from adapter config (`base_url`, `api_key_env`) and the worker's environment;
 * a `local` model goes to the stack's model server (FORGE_LOCAL_MODEL_URL, set by `forge run`).
 */
export function resolveUpstream(config: Record<string, unknown>, env: NodeJS.ProcessEnv): LlmUpstream {
  if (config['base_url'] === undefined && isLocalModel(config['model'])) return localModelUpstream(config['model'], env)
  const baseURL = config['base_url'] ?? env['OPENAI_BASE_URL'] ?? 'https://api.openai.com/v1'
  if (typeof baseURL !== 'string' || !/^https?:\/\//.test(baseURL)) {
    throw new LlmConfigError(`adapter config base_url must be an http(s) URL, got ${JSON.stringify(baseURL)}`)
  }
  const keyVariable = config['api_key_env'] ?? 'OPENAI_API_KEY'
  if (typeof keyVariable !== 'string' || keyVariable === '') throw new LlmConfigError('adapter config api_key_env must name an environment variable')
  const apiKey = env[keyVariable]
  if (config['api_key_env'] !== undefined && !apiKey) {
    throw new LlmConfigError(`adapter config api_key_env names ${keyVariable}, which is not set in the worker's environment`)
  }
  return apiKey ? { baseURL, apiKey } : { baseURL }
}

/** The stack's model server, which serves every `local` model (engine/llm/local/server.ts). */
export function localModelUpstream(model: string, env: NodeJS.ProcessEnv): LlmUpstream {
  const baseURL = readSetting('localModelUrl', env)
  if (!baseURL) {
    throw new LlmConfigError(
      `model "${model}" runs on the stack's model server, but this worker has no FORGE_LOCAL_MODEL_URL${baseURL ? ` (got ${JSON.stringify(baseURL)})` : ''}: ` +
        'start the run with forge run (it starts the model server), or set FORGE_LOCAL_MODEL_URL (and FORGE_LOCAL_MODEL_KEY) on the worker',
    )
  }
  const apiKey = readSetting('localModelKey', env)
  return apiKey ? { baseURL, apiKey } : { baseURL }
}

/** What the gateway keeps of one answered completion. */
interface CompletionFacts {
  model: string | undefined
  usage: TokenUsage | undefined
  finishReason: unknown
  toolCalls: number
}

function factsOf(completion: Record<string, unknown> | undefined): CompletionFacts {
  const [choice] = Array.isArray(completion?.['choices']) ? (completion['choices'] as unknown[]) : []
  const message = isRecord(choice) && isRecord(choice['message']) ? choice['message'] : undefined
  return {
    model: typeof completion?.['model'] === 'string' ? completion['model'] : undefined,
    usage: usageOf(completion),
    finishReason: isRecord(choice) ? (choice['finish_reason'] ?? null) : null,
    toolCalls: Array.isArray(message?.['tool_calls']) ? message['tool_calls'].length : 0,
  }
}

/**
 * Relays a server-sent-event stream of chat-completion chunks to the client as it arrives, reading
 * the model, finish reason, tool calls and usage off the chunks. The usage-only chunk the gateway
 * asked for is dropped when the client did not ask for it itself.
 */
async function relayStream(upstream: Response, res: ServerResponse, clientWantsUsage: boolean): Promise<CompletionFacts> {
  const facts: CompletionFacts = { model: undefined, usage: undefined, finishReason: null, toolCalls: 0 }
  const toolCallIndexes = new Set<number>()
  const relay = (event: string): void => {
    const data = event
      .split(/\r?\n/)
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).trimStart())
      .join('\n')
    const chunk = data === '' || data === '[DONE]' ? undefined : parseObject(data)
    if (chunk !== undefined) {
      if (typeof chunk['model'] === 'string') facts.model = chunk['model']
      facts.usage = usageOf(chunk) ?? facts.usage
      const choices = Array.isArray(chunk['choices']) ? chunk['choices'] : []
      for (const choice of choices) {
        if (!isRecord(choice)) continue
        if (choice['finish_reason'] !== undefined && choice['finish_reason'] !== null) facts.finishReason = choice['finish_reason']
        const delta = isRecord(choice['delta']) ? choice['delta'] : {}
        for (const call of Array.isArray(delta['tool_calls']) ? delta['tool_calls'] : []) {
          if (isRecord(call) && typeof call['index'] === 'number') toolCallIndexes.add(call['index'])
        }
      }
      if (!clientWantsUsage && choices.length === 0 && chunk['usage'] !== undefined) return
    }
    res.write(`${event}\n\n`)
  }
  const decoder = new TextDecoder()
  let buffer = ''
  if (upstream.body !== null) {
    for await (const bytes of upstream.body) {
      buffer += decoder.decode(bytes, { stream: true })
      for (let match = /\r?\n\r?\n/.exec(buffer); match !== null; match = /\r?\n\r?\n/.exec(buffer)) {
        relay(buffer.slice(0, match.index))
        buffer = buffer.slice(match.index + match[0].length)
      }
    }
  }
  buffer += decoder.decode()
  if (buffer.trim() !== '') relay(buffer)
  facts.toolCalls = toolCallIndexes.size
  return facts
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = parseUntrustedJson(text)
    return isRecord(parsed) ? parsed : undefined
  } catch {
    return undefined
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function spanIndex(span: Span): number {
  return Number(span.span_id.slice('model-'.length))
}

function usageOf(completion: Record<string, unknown> | undefined): TokenUsage | undefined {
  const usage = completion?.['usage']
  if (typeof usage !== 'object' || usage === null) return undefined
  const { prompt_tokens: input, completion_tokens: output } = usage as Record<string, unknown>
  if (typeof input !== 'number' || typeof output !== 'number') return undefined
  return { input_tokens: Math.max(0, Math.round(input)), output_tokens: Math.max(0, Math.round(output)) }
}

function authorized(req: IncomingMessage, token: Buffer): boolean {
  const header = req.headers['authorization']
  const presented = typeof header === 'string' && header.startsWith('Bearer ') ? header.slice(7).trim() : (req.headers['api-key'] ?? '')
  const bytes = Buffer.from(typeof presented === 'string' ? presented : '')
  return bytes.length === token.length && timingSafeEqual(bytes, token)
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    const buffer = chunk as Buffer
    size += buffer.length
    if (size > MAX_BODY_BYTES) throw new Error(`the body is larger than ${MAX_BODY_BYTES} bytes`)
    chunks.push(buffer)
  }
  return Buffer.concat(chunks).toString('utf8')
}

function sendError(res: ServerResponse, status: number, message: string, type: string, code: string): void {
  if (res.headersSent) return
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify({ error: { message, type, code, param: null } }))
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
