/**
 * Keeps a published AttemptResult under the bus's max_payload. NATS refuses a bigger message, and a
 * refused result is a lost attempt; so fields are cut step by step, each with a marker
 * (`…[truncated N bytes]`, or a list shortened to its start while its count stays), never dropped.
 */
import type { AttemptResult } from '../core/contracts/index.js'
import { MESSAGE_HEADROOM_BYTES, RESULT_INSTRUCTION_BYTES } from '../core/message-size.js'
import { truncateText, truncateValue } from './attempt-runner.js'

const sizeOf = (value: unknown): number => Buffer.byteLength(JSON.stringify(value), 'utf8')

type Cut = (r: AttemptResult) => AttemptResult

/** A record kept when small, else `{ truncated: "<its JSON, cut>" }` (the packet's input must stay a record). */
function fitRecord(record: Record<string, unknown>, bytes: number): Record<string, unknown> {
  const cut = truncateValue(record, bytes)
  return cut === record ? record : { truncated: cut }
}

const detail = <T extends { detail: string }>(items: T[], bytes: number): T[] => items.map((item) => ({ ...item, detail: truncateText(item.detail, bytes) }))

function packetCut(r: AttemptResult, fn: (packet: NonNullable<NonNullable<AttemptResult['judgement']>['review_packet']>) => typeof packet): AttemptResult {
  const packet = r.judgement?.review_packet
  if (r.judgement === undefined || packet === undefined || packet === null) return r
  return { ...r, judgement: { ...r.judgement, review_packet: fn(packet) } }
}

const cuts: Cut[] = [
  (r) => packetCut({ ...r, instruction: truncateText(r.instruction, RESULT_INSTRUCTION_BYTES) }, (p) => ({
    ...p,
    instruction: truncateText(p.instruction, RESULT_INSTRUCTION_BYTES),
    input: fitRecord(p.input, RESULT_INSTRUCTION_BYTES),
  })),
  (r) => ({
    ...r,
    grades: detail(r.grades, 2048),
    invariants: detail(r.invariants, 2048),
    ...(r.metrics !== undefined ? { metrics: detail(r.metrics, 1024) } : {}),
  }),
  (r) => packetCut(r, (p) => ({ ...p, steps: p.steps.slice(0, 100).map((s) => truncateText(s, 1024)), output: truncateText(p.output, 4096) })),
  // tool_call_count keeps the true number: the list is visibly its start
  (r) => ({ ...r, tool_calls: r.tool_calls.slice(0, 150) }),
  (r) => packetCut({ ...r, instruction: truncateText(r.instruction, 4096), tool_calls: r.tool_calls.slice(0, 20) }, (p) => ({
    ...p,
    instruction: truncateText(p.instruction, 4096),
    input: fitRecord(p.input, 4096),
    steps: p.steps.slice(0, 20),
  })),
]

/** The result as published: unchanged when it fits `maxPayload` (minus headroom), else cut until it does. */
export function fitAttemptResult(result: AttemptResult, maxPayload: number): AttemptResult {
  const limit = Math.max(16 * 1024, maxPayload - MESSAGE_HEADROOM_BYTES)
  let current = result
  for (const cut of cuts) {
    if (sizeOf(current) <= limit) return current
    current = cut(current)
  }
  return current
}
