/**
 * The wire protocol between the harness and an out-of-process agent, as zod schemas. Kept apart
 * from contracts.ts because it is the agent's side of the boundary — what a program in any
 * language reads and writes — and is documented for agent authors in the README.
 *
 * JSON lines on stdio (one JSON object per line, UTF-8):
 *   harness → agent, first line:   {"type":"payload","protocol":1,"payload":InvocationPayload}
 *   agent → harness:               {"type":"tool_call","id":"1","name":"echo","args":{...}}
 *   harness → agent:               {"type":"tool_result","id":"1","ok":true,"result":...}
 *                                  {"type":"tool_result","id":"1","ok":false,"error":"..."}
 *   agent → harness, last:         {"type":"final","output":...,"self_report":"..."}
 * Any other stdout line is free text: when the agent exits without a `final` line, that text
 * (through the fallback output parser) is its answer.
 */
import { z } from 'zod'
import { InvocationPayload } from './contracts/index.js'
import { parseUntrustedJson } from './untrusted-json.js'

export const AGENT_PROTOCOL_VERSION = 1

/** Correlates a tool call with its result; the agent picks it, the harness echoes it back. */
export const ToolCallId = z.union([z.string().max(200), z.number()])

export const PayloadMessage = z.object({
  type: z.literal('payload'),
  protocol: z.literal(AGENT_PROTOCOL_VERSION),
  payload: InvocationPayload,
})
export type PayloadMessage = z.infer<typeof PayloadMessage>

export const ToolCallMessage = z.object({
  type: z.literal('tool_call'),
  id: ToolCallId,
  name: z.string().min(1).max(200),
  /** named arguments; omitted means `{}` */
  args: z.unknown().optional(),
})
export type ToolCallMessage = z.infer<typeof ToolCallMessage>

export const ToolResultMessage = z.discriminatedUnion('ok', [
  z.object({ type: z.literal('tool_result'), id: ToolCallId, ok: z.literal(true), result: z.unknown() }),
  z.object({ type: z.literal('tool_result'), id: ToolCallId, ok: z.literal(false), error: z.string() }),
])
export type ToolResultMessage = z.infer<typeof ToolResultMessage>

export const FinalMessage = z.object({
  type: z.literal('final'),
  output: z.unknown(),
  self_report: z.string().optional(),
  refused: z.boolean().optional(),
})
export type FinalMessage = z.infer<typeof FinalMessage>

/** One line an agent wrote, classified. */
export type AgentLine =
  | { kind: 'tool_call'; message: ToolCallMessage }
  | { kind: 'final'; message: FinalMessage }
  /** a line that claims to be a protocol message but is not a valid one */
  | { kind: 'invalid'; type: string; id: z.infer<typeof ToolCallId> | undefined; problem: string }
  | { kind: 'text'; text: string }

/**
 * Classifies one line of an agent's stdout. Only JSON objects whose `type` is `tool_call` or
 * `final` are protocol messages; everything else (prose, a JSON answer printed plainly) is text.
 */
export function parseAgentLine(line: string): AgentLine {
  const trimmed = line.trim()
  if (!trimmed.startsWith('{')) return { kind: 'text', text: line }
  let value: unknown
  try {
    value = parseUntrustedJson(trimmed)
  } catch {
    return { kind: 'text', text: line }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { kind: 'text', text: line }
  const type = (value as Record<string, unknown>)['type']
  if (type !== 'tool_call' && type !== 'final') return { kind: 'text', text: line }
  const schema = type === 'tool_call' ? ToolCallMessage : FinalMessage
  const parsed = schema.safeParse(value)
  if (parsed.success) {
    return type === 'tool_call'
      ? { kind: 'tool_call', message: parsed.data as ToolCallMessage }
      : { kind: 'final', message: parsed.data as FinalMessage }
  }
  const rawId = ToolCallId.safeParse((value as Record<string, unknown>)['id'])
  const problem = parsed.error.issues.map((i) => `${i.path.map(String).join('.') || '(message)'}: ${i.message}`).join('; ')
  return { kind: 'invalid', type, id: rawId.success ? rawId.data : undefined, problem }
}

/** The body an HTTP agent service receives on `POST <invoke_path>`. */
export const HttpInvokeRequest = z.object({
  protocol: z.literal(AGENT_PROTOCOL_VERSION),
  payload: InvocationPayload,
  /** where the service calls tools during this attempt: `GET {url}` lists them, `POST {url}/<name>` calls one */
  tools: z.object({ url: z.string(), token: z.string() }),
})
export type HttpInvokeRequest = z.infer<typeof HttpInvokeRequest>

/** What an HTTP agent service answers; a body without `output` is taken whole as the output. */
export const HttpInvokeResponse = z.object({
  output: z.unknown(),
  self_report: z.string().optional(),
  refused: z.boolean().optional(),
})
export type HttpInvokeResponse = z.infer<typeof HttpInvokeResponse>
