/**
 * The stored form of an attempt's trace: the full trace with what it was graded on (grades,
 * invariants, the environment view), kept under one message's size. What had to be cut is named
 * in `truncated`, so a regrade knows what it cannot reproduce.
 */
import type { AgentTrace, AttemptResult, StoredTrace } from '../core/contracts/index.js'
import type { EnvironmentView, EnvState } from '../core/env-diff.js'
import { attemptKeyOf } from '../core/identity.js'
import { compactToolCall, truncateText, truncateValue } from './attempt-runner.js'

/** Under NATS's default max_payload (1 MiB), with room for headers. */
export const STORED_TRACE_MAX_BYTES = 960 * 1024

const size = (value: unknown): number => Buffer.byteLength(JSON.stringify(value), 'utf8')

/** The workspace file texts of a state dropped (digests and sizes stay). */
function withoutTexts(state: EnvState): EnvState {
  return Object.fromEntries(
    Object.entries(state).map(([name, fixture]) => [
      name,
      fixture.kind === 'workspace' ? { ...fixture, files: Object.fromEntries(Object.entries(fixture.files).map(([path, file]) => [path, { sha256: file.sha256, size: file.size }])) } : fixture,
    ]),
  )
}

/** The stored trace of an attempt, cut step by step until it fits `maxBytes` (Infinity: whole, its size never computed). */
export function storedTraceOf(result: AttemptResult, trace: AgentTrace, env: EnvironmentView | undefined, storedAt: number, maxBytes = STORED_TRACE_MAX_BYTES): StoredTrace {
  const stored: StoredTrace = Object.assign(attemptKeyOf(result), {
    outcome: result.outcome,
    validity: result.validity,
    failure_bucket: result.failure_bucket,
    grades: result.grades,
    invariants: result.invariants,
    // JSON has no undefined: a trace without an answer (the adapter threw) is stored with output null, or no store would accept it
    trace: trace.output === undefined ? { ...trace, output: null } : trace,
    env: env ?? null,
    truncated: [] as string[],
    stored_at: storedAt,
  })
  const cuts: [string, (s: StoredTrace) => StoredTrace][] = [
    ['tool_calls', (s) => ({ ...s, trace: { ...s.trace, tool_calls: s.trace.tool_calls.map(compactToolCall) } })],
    ['span_attributes', (s) => ({ ...s, trace: { ...s.trace, spans: s.trace.spans.map((span) => ({ ...span, attributes: {} })) } })],
    ['env_start_text', (s) => (s.env === null ? s : { ...s, env: { ...(s.env as EnvironmentView), start: withoutTexts((s.env as EnvironmentView).start) } })],
    ['output', (s) => ({ ...s, trace: { ...s.trace, output: truncateValue(s.trace.output, 64 * 1024) } })],
    ['env', (s) => ({ ...s, env: null })],
    ['state_snapshots', (s) => ({ ...s, trace: { ...s.trace, state_snapshots: [] } })],
    ['spans', (s) => ({ ...s, trace: { ...s.trace, spans: [] } })],
    ['errors', (s) => ({ ...s, trace: { ...s.trace, errors: s.trace.errors.slice(0, 20).map((e) => ({ kind: e.kind, message: truncateText(e.message, 1024) })) } })],
    // a budget of hundreds of calls: keep the start of the run, which tier 2 needs most
    ['tool_call_list', (s) => ({ ...s, trace: { ...s.trace, tool_calls: s.trace.tool_calls.slice(0, 150) } })],
  ]
  let current = stored
  for (const [label, cut] of cuts) {
    if (maxBytes === Number.POSITIVE_INFINITY || size(current) <= maxBytes) break
    current = { ...cut(current), truncated: [...current.truncated, label] }
  }
  return current
}
