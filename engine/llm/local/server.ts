/**
 * The local model server: one GGUF model loaded once with node-llama-cpp (CPU), served
 * OpenAI-compatibly on 127.0.0.1 — `POST /v1/chat/completions` (plain or streamed),
 * `GET /v1/models`, `GET /health`. The stack runs one per machine (workers/model-server-main.ts)
 * and every worker's LLM gateway forwards `local*` models to it, so 50 workers share one copy.
 *
 * - Requests queue for one of `parallel` context sequences (batched together by llama.cpp); a
 *   request whose client went away is dropped from the queue, or stopped mid-generation.
 * - Tool calls and JSON replies are constrained by grammars (chat-format.ts), so even a 135M model
 *   answers with well-formed calls of offered tools.
 * - Decoding settings reach the sampler: temperature, top_p, seed, max_tokens, stop, penalties
 *   (and llama.cpp's top_k / min_p / repeat_penalty). Without a temperature the llama.cpp server's
 *   defaults apply (0.8, top_k 40, top_p 0.95, min_p 0.05). With a seed the same request gives the
 *   same completion on the same machine.
 * - Usage is the tokens the model actually evaluated and generated.
 */
import { timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { availableParallelism } from 'node:os'
import { hostAllowed } from '../../../core/host-header.js'
import { getLlama, LlamaChat, LlamaLogLevel, type ChatHistoryItem, type Llama, type LlamaContextSequence, type LlamaGrammar } from 'node-llama-cpp'
import { jsonReplySchema, offeredTools, parseReply, replyGrammar, toHistory, type ChatMessage, type ChatTool } from './chat-format.js'

export interface LocalModelServerOptions {
  modelPath: string
  /** the model name answers carry (default: `local`) */
  name?: string
  /** completions generated at once, each on its own context sequence (default 1) */
  parallel?: number
  /** context tokens per sequence (default 4096) */
  contextSize?: number
  /**
   * CPU threads (default: half the cores, at least 1). llama.cpp's threads spin while they wait for
   * each other, so on a machine whose cores the stack's other processes also use, more threads are
   * slower: on the 2-core dev machine under load, 2 threads took 9.4 s for what 1 did in 1.7 s.
   */
  threads?: number
  /** completion tokens when a request sets no max_tokens (default 256) */
  defaultMaxTokens?: number
  /** clients must send `Authorization: Bearer <apiKey>` when set */
  apiKey?: string
  host?: string
  port?: number
}

export interface LocalModelServerStats {
  completions: number
  prompt_tokens: number
  completion_tokens: number
  /** wall time spent generating, over every completion */
  generation_ms: number
  /** requests waiting for a sequence / being generated now */
  queued: number
  active: number
  /** requests dropped because their client went away */
  abandoned: number
}

export interface LocalModelServer {
  baseURL: string
  port: number
  name: string
  parallel: number
  readonly stats: LocalModelServerStats
  close(): Promise<void>
}

interface ChatRequest {
  model?: string
  messages?: ChatMessage[]
  tools?: ChatTool[]
  tool_choice?: unknown
  temperature?: number
  top_p?: number
  top_k?: number
  min_p?: number
  seed?: number
  max_tokens?: number
  max_completion_tokens?: number
  stop?: string | string[]
  frequency_penalty?: number
  presence_penalty?: number
  repeat_penalty?: number
  n?: number
  stream?: boolean
  stream_options?: { include_usage?: boolean }
  response_format?: { type: string; json_schema?: { name?: string; schema?: Record<string, unknown> } }
}

/** llama.cpp server's sampling defaults, used when a request sets no temperature */
const LLAMA_CPP_DEFAULTS = { temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05 }
const MAX_BODY_BYTES = 16 * 1024 * 1024

class BadRequest extends Error {}

export async function startLocalModelServer(opts: LocalModelServerOptions): Promise<LocalModelServer> {
  const name = opts.name ?? 'local'
  const parallel = Math.max(1, Math.floor(opts.parallel ?? 1))
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error })
  const model = await llama.loadModel({ modelPath: opts.modelPath })
  const context = await model.createContext({
    contextSize: opts.contextSize ?? 4096,
    sequences: parallel,
    threads: opts.threads ?? Math.max(1, Math.floor(availableParallelism() / 2)),
  })
  const stats: LocalModelServerStats = { completions: 0, prompt_tokens: 0, completion_tokens: 0, generation_ms: 0, queued: 0, active: 0, abandoned: 0 }
  const grammars = new GrammarCache(llama)
  // one long-lived sequence per slot, cleared before each request (a fresh state: same seed, same reply)
  const slots = new Slots(Array.from({ length: parallel }, () => context.getSequence()))
  const keyBytes = opts.apiKey ? Buffer.from(opts.apiKey) : undefined
  const running = new Set<Promise<void>>()
  let served = 0

  const complete = async (request: ChatRequest, res: ServerResponse, signal: AbortSignal): Promise<void> => {
    if (!Array.isArray(request.messages)) throw new BadRequest('a chat completion needs "messages" (an array)')
    if (request.n !== undefined && request.n !== 1) throw new BadRequest(`n=${request.n} is not supported: the local model server answers one choice per request`)
    const offered = offeredTools(request.tools, request.tool_choice)
    const history = toHistory(request.messages, offered.tools, offered.answer) as ChatHistoryItem[]
    const format = request.response_format
    const grammar =
      offered.tools.length > 0
        ? await grammars.gbnf(replyGrammar(offered.tools, offered.answer))
        : format?.type === 'json_schema' && format.json_schema?.schema !== undefined
          ? await grammars.jsonSchema(jsonReplySchema(format.json_schema.schema))
          : format?.type === 'json_object'
            ? await grammars.json()
            : undefined
    const streamed = request.stream === true
    const id = `chatcmpl-local-${++served}`
    const created = Math.floor(Date.now() / 1000)
    const chunk = (choices: unknown[], extra: Record<string, unknown> = {}): void => {
      res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: name, choices, ...extra })}\n\n`)
    }

    stats.queued++
    let slot: Slot<LlamaContextSequence> | undefined
    try {
      slot = await slots.acquire(signal)
    } finally {
      stats.queued--
    }
    if (slot === undefined) {
      stats.abandoned++
      return
    }
    stats.active++
    const { item: sequence, release } = slot
    let chat: LlamaChat | undefined
    const started = Date.now()
    try {
      await sequence.clearHistory()
      const meter = { input: sequence.tokenMeter.usedInputTokens, output: sequence.tokenMeter.usedOutputTokens }
      chat = new LlamaChat({ contextSequence: sequence, autoDisposeSequence: false })
      const sampling = request.temperature === undefined ? LLAMA_CPP_DEFAULTS : { temperature: request.temperature }
      const penalty = repeatPenalty(request)
      if (streamed) {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
        chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }])
      }
      // a plain-text stream is relayed as it is generated; a tool reply is parsed whole first
      const relay = streamed && offered.tools.length === 0
      const result = await chat.generateResponse(history, {
        maxTokens: request.max_completion_tokens ?? request.max_tokens ?? opts.defaultMaxTokens ?? 256,
        ...sampling,
        ...(request.top_p !== undefined ? { topP: request.top_p } : {}),
        ...(request.top_k !== undefined ? { topK: request.top_k } : {}),
        ...(request.min_p !== undefined ? { minP: request.min_p } : {}),
        ...(request.seed !== undefined && request.seed !== null ? { seed: request.seed } : {}),
        ...(penalty !== undefined ? { repeatPenalty: penalty } : {}),
        ...(request.stop !== undefined ? { customStopTriggers: (Array.isArray(request.stop) ? request.stop : [request.stop]).filter((s) => s !== '') } : {}),
        ...(grammar ? { grammar } : {}),
        ...(relay ? { onTextChunk: (text: string) => chunk([{ index: 0, delta: { content: text }, finish_reason: null }]) } : {}),
        signal,
        stopOnAbortSignal: true,
      })
      if (signal.aborted) {
        stats.abandoned++
        return
      }
      const usage = { prompt_tokens: sequence.tokenMeter.usedInputTokens - meter.input, completion_tokens: sequence.tokenMeter.usedOutputTokens - meter.output }
      stats.completions++
      stats.prompt_tokens += usage.prompt_tokens
      stats.completion_tokens += usage.completion_tokens
      stats.generation_ms += Date.now() - started
      const text = result.response
      let finishReason: string = result.metadata.stopReason === 'maxTokens' ? 'length' : 'stop'
      let message: Record<string, unknown> = { role: 'assistant', content: text }
      if (offered.tools.length > 0) {
        const reply = parseReply(text)
        if (reply !== undefined && 'tool' in reply) {
          const call = { id: `call_${served}`, type: 'function', function: { name: reply.tool, arguments: JSON.stringify(reply.arguments) } }
          message = { role: 'assistant', content: null, tool_calls: [call] }
          finishReason = 'tool_calls'
        } else if (reply !== undefined) message = { role: 'assistant', content: reply.answer }
      }
      const totals = { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens }
      if (!streamed) {
        sendJson(res, 200, { id, object: 'chat.completion', created, model: name, choices: [{ index: 0, message, finish_reason: finishReason, logprobs: null }], usage: totals })
        return
      }
      if (!relay) {
        const calls = message['tool_calls'] as { id: string; type: string; function: unknown }[] | undefined
        const delta = calls ? { tool_calls: calls.map((c, index) => ({ index, ...c })) } : { content: message['content'] }
        chunk([{ index: 0, delta, finish_reason: null }])
      }
      chunk([{ index: 0, delta: {}, finish_reason: finishReason }])
      if (request.stream_options?.include_usage === true) chunk([], { usage: totals })
      res.end('data: [DONE]\n\n')
    } finally {
      stats.active--
      chat?.dispose({ disposeSequence: false })
      release()
    }
  }

  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0] ?? ''
    if (keyBytes !== undefined && !authorized(req, keyBytes)) {
      req.resume()
      return sendError(res, 401, 'invalid API key for the local model server', 'invalid_request_error')
    }
    // without a key, only requests addressed to an IP address or localhost: a web page the user
    // visits could otherwise use the model through DNS rebinding (core/host-header.ts)
    if (keyBytes === undefined && !hostAllowed(req.headers.host)) {
      req.resume()
      return sendError(
        res,
        403,
        `the local model server has no API key, so it answers only requests addressed to an IP address or localhost, not "${req.headers.host ?? ''}" (set FORGE_MODEL_SERVER_KEY to serve it by name)`,
        'permission_error',
      )
    }
    if (req.method === 'GET' && path === '/health') {
      req.resume()
      return sendJson(res, 200, { status: 'ok', model: name, path: opts.modelPath, parallel, context_size: context.contextSize, ...stats, rss_bytes: process.memoryUsage.rss() })
    }
    if (req.method === 'GET' && path === '/v1/models') {
      req.resume()
      return sendJson(res, 200, { object: 'list', data: [{ id: name, object: 'model', created: 0, owned_by: 'forge' }] })
    }
    if (req.method !== 'POST' || (path !== '/v1/chat/completions' && path !== '/chat/completions')) {
      req.resume()
      return sendError(res, 404, `the local model server serves POST /v1/chat/completions, GET /v1/models and GET /health, not ${req.method ?? '?'} ${path}`, 'not_found')
    }
    // the client went away (its attempt ended): stop waiting or generating for it
    const gone = new AbortController()
    res.on('close', () => {
      if (!res.writableFinished) gone.abort(new Error('the client closed the connection'))
    })
    const call = readJson(req)
      .then((request) => complete(request, res, gone.signal))
      .catch((error: unknown) => {
        if (res.headersSent) return void res.destroy()
        if (error instanceof BadRequest || error instanceof SyntaxError) sendError(res, 400, error.message, 'invalid_request_error')
        else sendError(res, 500, error instanceof Error ? error.message : String(error), 'server_error')
      })
      .finally(() => running.delete(call))
    running.add(call)
  })
  server.keepAliveTimeout = 5_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
  const { port } = server.address() as AddressInfo

  let closed: Promise<void> | undefined
  return {
    baseURL: `http://${opts.host ?? '127.0.0.1'}:${port}/v1`,
    port,
    name,
    parallel,
    stats,
    close() {
      closed ??= (async () => {
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()))
        server.closeAllConnections()
        await Promise.allSettled([...running])
        await stopped
        await context.dispose()
        await model.dispose()
        await llama.dispose()
      })()
      return closed
    },
  }
}

/** OpenAI's penalties (−2…2) as llama.cpp's repeat penalty (frequency and presence 0…1 there). */
function repeatPenalty(request: ChatRequest): { penalty?: number; frequencyPenalty?: number; presencePenalty?: number } | undefined {
  const clamp = (value: number): number => Math.min(1, Math.max(0, value))
  if (request.repeat_penalty === undefined && request.frequency_penalty === undefined && request.presence_penalty === undefined) return undefined
  return {
    ...(request.repeat_penalty !== undefined ? { penalty: request.repeat_penalty } : {}),
    ...(request.frequency_penalty !== undefined ? { frequencyPenalty: clamp(request.frequency_penalty) } : {}),
    ...(request.presence_penalty !== undefined ? { presencePenalty: clamp(request.presence_penalty) } : {}),
  }
}

interface Slot<T> {
  item: T
  release(): void
}

/** Items handed out one holder at a time, in arrival order; a waiter whose signal aborts leaves the queue. */
class Slots<T> {
  private readonly free: T[]
  private readonly waiting: { grant: (slot: Slot<T> | undefined) => void }[] = []
  constructor(items: T[]) {
    this.free = [...items]
  }

  acquire(signal: AbortSignal): Promise<Slot<T> | undefined> {
    if (signal.aborted) return Promise.resolve(undefined)
    const item = this.free.shift()
    if (item !== undefined) return Promise.resolve(this.slot(item))
    return new Promise((grant) => {
      const waiter = { grant }
      this.waiting.push(waiter)
      signal.addEventListener(
        'abort',
        () => {
          const at = this.waiting.indexOf(waiter)
          if (at >= 0) {
            this.waiting.splice(at, 1)
            grant(undefined)
          }
        },
        { once: true },
      )
    })
  }

  private slot(item: T): Slot<T> {
    let released = false
    return {
      item,
      release: () => {
        if (released) return
        released = true
        const next = this.waiting.shift()
        if (next) next.grant(this.slot(item))
        else this.free.push(item)
      },
    }
  }
}

/** Grammars are compiled once per distinct text (tool sets repeat across attempts). */
class GrammarCache {
  private readonly cache = new Map<string, Promise<LlamaGrammar>>()
  constructor(private readonly llama: Llama) {}

  gbnf(grammar: string): Promise<LlamaGrammar> {
    return this.get(`gbnf:${grammar}`, () => this.llama.createGrammar({ grammar }))
  }
  jsonSchema(schema: Record<string, unknown>): Promise<LlamaGrammar> {
    return this.get(`schema:${JSON.stringify(schema)}`, () => this.llama.createGrammarForJsonSchema(schema as never))
  }
  json(): Promise<LlamaGrammar> {
    return this.get('json', () => this.llama.getGrammarFor('json'))
  }

  private get(key: string, make: () => Promise<LlamaGrammar>): Promise<LlamaGrammar> {
    let grammar = this.cache.get(key)
    if (grammar === undefined) {
      if (this.cache.size >= 256) this.cache.delete(this.cache.keys().next().value!)
      grammar = make()
      // a grammar that does not compile is the request's problem, not the next one's
      grammar.catch(() => this.cache.delete(key))
      this.cache.set(key, grammar)
    }
    return grammar.catch((error: unknown) => {
      throw new BadRequest(`the reply format cannot be turned into a grammar: ${error instanceof Error ? error.message : String(error)}`)
    })
  }
}

function authorized(req: IncomingMessage, key: Buffer): boolean {
  const header = req.headers['authorization']
  const presented = Buffer.from(typeof header === 'string' && header.startsWith('Bearer ') ? header.slice(7).trim() : '')
  return presented.length === key.length && timingSafeEqual(presented, key)
}

async function readJson(req: IncomingMessage): Promise<ChatRequest> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    size += (chunk as Buffer).length
    if (size > MAX_BODY_BYTES) throw new BadRequest(`the body is larger than ${MAX_BODY_BYTES} bytes`)
    chunks.push(chunk as Buffer)
  }
  const body = Buffer.concat(chunks).toString('utf8')
  const parsed: unknown = body === '' ? {} : JSON.parse(body)
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new BadRequest('the body must be a JSON object')
  return parsed as ChatRequest
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}

function sendError(res: ServerResponse, status: number, message: string, type: string): void {
  sendJson(res, status, { error: { message, type, code: null, param: null } })
}
