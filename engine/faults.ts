/**
 * The worker's fault wrapper: applies the pure, seeded decisions of core/faults.ts to real calls.
 * The tool proxy calls `runToolCall` between its checks and the suite's tool, and the LLM gateway
 * calls `answerModelFault` before forwarding a completion, so every adapter — in process, a
 * subprocess, a service, Python over the gateway — meets the same faults without knowing it.
 * Without a profile neither is reached: the fault-free path is the code that ran before.
 */
import type { ServerResponse } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import type { AgentTrace, FaultKind, FaultProfile, Span, ToolCall } from '../core/contracts/index.js'
import {
  DISRUPTIVE_FAULT_KINDS,
  FAULT_KINDS,
  createFaultSchedule,
  garbageCompletion,
  garbageToolResult,
  modelFaultResponse,
  toolFaultError,
  type FaultDecision,
  type FaultSchedule,
} from '../core/faults.js'

/** One attempt's faults: the profile and the schedule that numbers its calls. */
export interface AttemptFaults {
  profile: FaultProfile
  schedule: FaultSchedule
}

/** The faults of one attempt; the key leaves the run id out so the same seed reproduces them in a new run. */
export function attemptFaults(profile: FaultProfile, key: { runSeed: string; configId: string; taskId: string; attempt: number }): AttemptFaults {
  return {
    profile,
    schedule: createFaultSchedule(profile, { runSeed: key.runSeed, attemptKey: `${key.configId}/${key.taskId}/${key.attempt}`, taskId: key.taskId }),
  }
}

export type ToolCallOutcome = { ok: true; result: unknown } | { ok: false; error: string }

/** Waits `ms`, or less when the attempt is stopped (its deadline): never longer than the attempt. */
async function wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (ms <= 0) return
  try {
    await sleep(ms, undefined, signal ? { signal } : {})
  } catch {
    // aborted: the attempt ended; the call fails or returns as it would have
  }
}

/**
 * Runs one tool call under an injected fault. `timeout`: hangs for the profile's per-call timeout,
 * then fails as a timeout (the tool is never reached); `500`, `rate_limit`: fail at once; `garbage`:
 * the tool runs (its side effects happen) and its answer comes back malformed; `slow`: the tool
 * runs after the added latency and answers correctly.
 */
export async function runToolCall(
  fault: FaultDecision,
  profile: FaultProfile,
  tool: string,
  run: () => Promise<unknown>,
  signal?: AbortSignal,
): Promise<ToolCallOutcome> {
  switch (fault.kind) {
    case 'timeout':
      await wait(profile.timeout_ms, signal)
      return { ok: false, error: toolFaultError('timeout', tool, profile) }
    case '500':
    case 'rate_limit':
      return { ok: false, error: toolFaultError(fault.kind, tool, profile) }
    case 'garbage': {
      let result: unknown = null
      try {
        result = await run()
      } catch {
        // the service failed and its error page came back garbled: garbage all the same
      }
      return { ok: true, result: garbageToolResult(result, fault.detail).value }
    }
    case 'slow':
      await wait(profile.slow_ms, signal)
      try {
        return { ok: true, result: await run() }
      } catch (error) {
        return { ok: false, error: error instanceof Error ? error.message : String(error) }
      }
  }
}

/**
 * Answers one completion request under an injected fault, in place of the model: `500`,
 * `rate_limit` (429 with retry-after), `timeout` (504 after the per-call timeout) or `garbage` (a
 * malformed completion with status 200). Returns false for `slow`, after its latency: forward as usual.
 */
export async function answerModelFault(
  fault: FaultDecision,
  profile: FaultProfile,
  request: { model: string; stream: boolean },
  res: ServerResponse,
  signal?: AbortSignal,
): Promise<{ answered: boolean; status?: number; flavour?: string }> {
  const kind: FaultKind = fault.kind
  if (kind === 'slow') {
    await wait(profile.slow_ms, signal)
    return { answered: false }
  }
  if (kind === 'timeout') await wait(profile.timeout_ms, signal)
  const failing = modelFaultResponse(kind, profile)
  const garbage = failing === undefined ? garbageCompletion(fault.detail, request) : undefined
  const answer = failing ?? garbage!
  if (!res.headersSent && !res.destroyed) {
    res.writeHead(answer.status, answer.headers)
    res.end(answer.body)
  }
  return { answered: true, status: answer.status, ...(garbage !== undefined ? { flavour: garbage.flavour } : {}) }
}

/**
 * The injected faults an attempt met (tool calls, then model calls): how many, and their kinds —
 * one entry per fault, so the store can count calls per kind (`countEqual`) and attempts per kind (`arrayDistinct`).
 */
export function countInjectedFaults(trace: Pick<AgentTrace, 'tool_calls' | 'spans'>): { injected_faults: number; injected_fault_kinds: string[] } {
  const kinds = [
    ...trace.tool_calls.map((call) => call.injected_fault),
    ...trace.spans.filter((span) => span.category === 'model').map((span) => span.attributes['injected_fault']),
  ].filter((kind): kind is string => typeof kind === 'string' && (FAULT_KINDS as readonly string[]).includes(kind))
  return { injected_faults: kinds.length, injected_fault_kinds: kinds }
}

/** Did the attempt meet a fault that left a call's answer unusable (anything but `slow`)? */
export function metDisruptiveFault(calls: readonly ToolCall[], modelSpans: readonly Span[]): boolean {
  const disrupted = (kind: unknown): boolean => typeof kind === 'string' && DISRUPTIVE_FAULT_KINDS.has(kind)
  return calls.some((call) => disrupted(call.injected_fault)) || modelSpans.some((span) => disrupted(span.attributes['injected_fault']))
}
