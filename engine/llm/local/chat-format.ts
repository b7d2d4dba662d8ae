/**
 * How an OpenAI chat-completion request meets a small local model (pure: no I/O).
 *
 * A 135M model does not do OpenAI function calling by itself, so when a request offers tools the
 * model is asked for one JSON object — `{"tool": NAME, "arguments": {…}}` or `{"answer": "…"}` —
 * and decoding is constrained by a GBNF grammar built from the tools' JSON Schemas: every reply
 * parses, names an offered tool and carries arguments of the declared shape. Which tool, which
 * arguments and whether to answer stay the model's own choices. A `response_format` JSON Schema
 * (what a judge asks for) becomes a JSON-schema grammar the same way.
 */

export interface ChatMessage {
  role: string
  content?: unknown
  tool_calls?: { id: string; function: { name: string; arguments: string } }[]
}

export interface ChatTool {
  type: string
  function: { name: string; description?: string; parameters?: Record<string, unknown> }
}

export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } }

/** node-llama-cpp's chat history items (kept structural so this module imports nothing). */
export type HistoryItem = { type: 'system'; text: string } | { type: 'user'; text: string } | { type: 'model'; response: string[] }

/** The tools a reply may call, after `tool_choice`; `answer` says whether a plain answer is allowed. */
export function offeredTools(tools: ChatTool[] | undefined, choice: unknown): { tools: ChatTool[]; answer: boolean } {
  const functions = (tools ?? []).filter((t) => t.type === 'function')
  if (functions.length === 0 || choice === 'none') return { tools: [], answer: true }
  if (choice === 'required') return { tools: functions, answer: false }
  if (typeof choice === 'object' && choice !== null) {
    const name = (choice as { function?: { name?: unknown } }).function?.name
    const named = functions.filter((t) => t.function.name === name)
    if (named.length > 0) return { tools: named, answer: false }
  }
  return { tools: functions, answer: true }
}

/** OpenAI messages as chat history; tool traffic is written in the JSON reply format the grammar enforces. */
export function toHistory(messages: ChatMessage[], tools: ChatTool[], answer = true): HistoryItem[] {
  const history: HistoryItem[] = []
  const system = messages.filter((m) => m.role === 'system' || m.role === 'developer').map((m) => textOf(m.content))
  if (tools.length > 0) system.push(toolInstructions(tools, answer))
  if (system.length > 0) history.push({ type: 'system', text: system.join('\n\n') })
  for (const message of messages) {
    if (message.role === 'user') history.push({ type: 'user', text: textOf(message.content) })
    else if (message.role === 'tool') history.push({ type: 'user', text: `Tool result: ${textOf(message.content)}` })
    else if (message.role === 'assistant') {
      const calls = (message.tool_calls ?? []).map((c) => `{"tool":${JSON.stringify(c.function.name)},"arguments":${c.function.arguments || '{}'}}`)
      const said = textOf(message.content)
      history.push({ type: 'model', response: [calls.length > 0 ? calls.join('\n') : tools.length > 0 ? JSON.stringify({ answer: said }) : said] })
    }
  }
  return history
}

export function toolInstructions(tools: ChatTool[], answer = true): string {
  const lines = tools.map((t) => `- ${t.function.name}: ${t.function.description ?? ''} Arguments: ${JSON.stringify(t.function.parameters?.['properties'] ?? {})}`)
  return [
    'Tools:',
    ...lines,
    answer
      ? 'Reply with one JSON object: {"tool": "<name>", "arguments": {...}} to call a tool, or {"answer": "<final answer>"} when done.'
      : 'Reply with one JSON object: {"tool": "<name>", "arguments": {...}} to call a tool.',
  ].join('\n')
}

/**
 * A GBNF grammar for the reply: compact JSON (no whitespace to spend tokens on), either a call of one
 * of the offered tools with arguments shaped by its schema (every property, in order) or, when
 * allowed, an answer.
 */
export function replyGrammar(tools: ChatTool[], answer = true): string {
  const rules: string[] = []
  const alternatives = tools.map((tool, i) => {
    rules.push(`args${i} ::= ${objectRule(tool.function.parameters ?? {})}`)
    return `${literal(`{"tool":${JSON.stringify(tool.function.name)},"arguments":`)} args${i} "}"`
  })
  if (answer || alternatives.length === 0) alternatives.push(`${literal('{"answer":')} string "}"`)
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

/** The grammar-shaped reply, or undefined when the text is not one (a reply cut at max_tokens). */
export function parseReply(text: string): { tool: string; arguments: unknown } | { answer: string } | undefined {
  try {
    const parsed: unknown = JSON.parse(text)
    if (typeof parsed !== 'object' || parsed === null) return undefined
    const reply = parsed as Record<string, unknown>
    if (typeof reply['tool'] === 'string') return { tool: reply['tool'], arguments: reply['arguments'] ?? {} }
    if (reply['answer'] !== undefined) return { answer: typeof reply['answer'] === 'string' ? reply['answer'] : JSON.stringify(reply['answer']) }
    return undefined
  } catch {
    return undefined
  }
}

/** The text of a message's content (a string, or an array of text parts). */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content
  if (Array.isArray(content)) return content.map((part) => (typeof part === 'object' && part !== null ? String((part as Record<string, unknown>)['text'] ?? '') : String(part))).join('')
  return content === undefined || content === null ? '' : JSON.stringify(content)
}

/**
 * A `response_format` JSON Schema reduced to what node-llama-cpp's JSON grammar expresses: types,
 * enums and consts, objects (every property required, nothing else allowed), arrays, `oneOf`;
 * small integer ranges become enums and strings are capped, so a small model closes its JSON
 * within a few dozen tokens. What it writes inside that shape is still its own choice.
 */
export function jsonReplySchema(schema: Record<string, unknown>): Record<string, unknown> {
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
