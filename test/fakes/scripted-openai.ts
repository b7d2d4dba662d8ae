/**
 * A deterministic, scripted OpenAI-compatible server on 127.0.0.1: a fake of the outside (the
 * model provider), so tests can assert exact traces. Each reply is chosen by the conversation's
 * turn — the number of assistant messages in the request — so concurrent conversations each get
 * the same script. Every request is recorded with the Authorization header it came with.
 * `"stream": true` gets the reply as server-sent chunks.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface ScriptedToolCall {
  name: string
  /** a JSON string as a model sends it, or an object to be stringified */
  arguments: string | Record<string, unknown>
}

export interface ScriptedReply {
  content?: string | null
  tool_calls?: ScriptedToolCall[]
  /** default: prompt 10 × (turn + 1), completion 5 */
  usage?: { prompt_tokens: number; completion_tokens: number } | null
  /** answer with this HTTP status and an OpenAI-style error instead */
  status?: number
  /** the `model` field of the response (default: the requested model) */
  model?: string
  /** wait this long before answering (a slow model) */
  delay_ms?: number
}

export interface ChatRequest {
  model: string
  messages: { role: string; content?: unknown; tool_calls?: unknown[]; tool_call_id?: string }[]
  tools?: { type: string; function: { name: string; description?: string; parameters?: Record<string, unknown> } }[]
  [key: string]: unknown
}

export type Script = ScriptedReply[] | ((request: ChatRequest, turn: number) => ScriptedReply)

export interface RecordedRequest {
  method: string
  path: string
  authorization: string | undefined
  body: ChatRequest
}

export interface ScriptedOpenAI {
  /** e.g. http://127.0.0.1:PORT/v1 */
  baseURL: string
  readonly requests: RecordedRequest[]
  close(): Promise<void>
}

export async function startScriptedOpenAI(script: Script): Promise<ScriptedOpenAI> {
  const requests: RecordedRequest[] = []
  let served = 0
  const server = createServer((req, res) => {
    readJson(req).then(
      async (body) => {
        const path = (req.url ?? '').split('?')[0] ?? ''
        requests.push({ method: req.method ?? '', path, authorization: req.headers['authorization'], body })
        const send = (status: number, payload: unknown): void => {
          res.writeHead(status, { 'content-type': 'application/json' })
          res.end(JSON.stringify(payload))
        }
        if (req.method !== 'POST' || path !== '/v1/chat/completions') return send(404, { error: { message: `no route ${path}`, type: 'not_found' } })
        const turn = body.messages.filter((m) => m.role === 'assistant').length
        const reply = typeof script === 'function' ? script(body, turn) : script[turn]
        if (reply === undefined) return send(500, { error: { message: `the script has no reply for turn ${turn}`, type: 'server_error' } })
        if (reply.delay_ms !== undefined) await new Promise((resolve) => setTimeout(resolve, reply.delay_ms))
        if (reply.status !== undefined) return send(reply.status, { error: { message: reply.content ?? 'scripted error', type: 'server_error', code: null } })
        served += 1
        const toolCalls = (reply.tool_calls ?? []).map((call, i) => ({
          id: `call_${turn}_${i}`,
          type: 'function',
          function: { name: call.name, arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments) },
        }))
        const usage = reply.usage === undefined ? { prompt_tokens: 10 * (turn + 1), completion_tokens: 5 } : reply.usage
        if (body['stream'] === true) {
          const options = body['stream_options'] as { include_usage?: boolean } | undefined
          return streamReply(res, { id: `chatcmpl-scripted-${served}`, model: reply.model ?? body.model, content: reply.content ?? null, toolCalls, usage: options?.include_usage ? usage : null })
        }
        send(200, {
          id: `chatcmpl-scripted-${served}`,
          object: 'chat.completion',
          created: 1_700_000_000,
          model: reply.model ?? body.model,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: reply.content ?? null, refusal: null, ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) },
              finish_reason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
              logprobs: null,
            },
          ],
          ...(usage === null ? {} : { usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } }),
        })
      },
      (error: unknown) => {
        res.writeHead(400, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ error: { message: String(error), type: 'invalid_request_error' } }))
      },
    )
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}

/**
 * A script that solves tasks the way a naive agent would: call every offered tool in order, each
 * with the input fields of the same names (a later tool's first parameter gets the previous
 * tool's result), then answer with the last result. It reads the input from the `Input:` JSON
 * block of the user turn that the react adapter writes.
 */
export function naiveSolver(request: ChatRequest, turn: number): ScriptedReply {
  const tools = request.tools ?? []
  const results = request.messages.filter((m) => m.role === 'tool').map((m) => String(m.content))
  const tool = tools[turn]
  if (tool === undefined) return { content: results[results.length - 1] ?? 'no tools, no answer' }
  const user = request.messages.find((m) => m.role === 'user')
  const marker = typeof user?.content === 'string' ? user.content.indexOf('Input:\n') : -1
  const input = marker >= 0 ? (JSON.parse(String(user?.content).slice(marker + 'Input:\n'.length)) as Record<string, unknown>) : {}
  const properties = Object.keys((tool.function.parameters?.['properties'] as Record<string, unknown> | undefined) ?? {})
  const args: Record<string, unknown> = {}
  for (const [i, name] of properties.entries()) {
    const previous = results[results.length - 1]
    args[name] = turn > 0 && i === 0 && previous !== undefined ? previous : input[name]
  }
  return { tool_calls: [{ name: tool.function.name, arguments: args }] }
}

/** A reply as server-sent chunks, the way OpenAI streams: role, content in pieces, tool-call deltas, finish, usage when asked, [DONE]. */
function streamReply(
  res: ServerResponse,
  reply: {
    id: string
    model: string
    content: string | null
    toolCalls: { id: string; type: string; function: { name: string; arguments: string } }[]
    usage: { prompt_tokens: number; completion_tokens: number } | null
  },
): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' })
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}): void => {
    res.write(`data: ${JSON.stringify({ id: reply.id, object: 'chat.completion.chunk', created: 1_700_000_000, model: reply.model, choices, ...extra })}\n\n`)
  }
  const delta = (d: Record<string, unknown>, finish: string | null = null): void => chunk([{ index: 0, delta: d, finish_reason: finish, logprobs: null }])
  delta({ role: 'assistant', content: '' })
  if (reply.content !== null) {
    const half = Math.ceil(reply.content.length / 2)
    delta({ content: reply.content.slice(0, half) })
    delta({ content: reply.content.slice(half) })
  }
  reply.toolCalls.forEach((call, index) => {
    delta({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] })
    delta({ tool_calls: [{ index, function: { arguments: call.function.arguments } }] })
  })
  delta({}, reply.toolCalls.length > 0 ? 'tool_calls' : 'stop')
  if (reply.usage !== null) chunk([], { usage: { ...reply.usage, total_tokens: reply.usage.prompt_tokens + reply.usage.completion_tokens } })
  res.end('data: [DONE]\n\n')
}

async function readJson(req: IncomingMessage): Promise<ChatRequest> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  const text = Buffer.concat(chunks).toString('utf8')
  return (text === '' ? {} : JSON.parse(text)) as ChatRequest
}
