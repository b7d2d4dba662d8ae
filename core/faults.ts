/**
 * Fault decisions, pure and seeded: whether and how one call fails is a function of the run seed,
 * the attempt key (config/task/attempt — not the run id, so the same seed reproduces the same faults
 * in a new run, on any worker, after retries and on replay), the call's target and tool, and the
 * call's index among that tool's calls in the attempt. Never `Math.random`.
 *
 * Uniform: call i of a tool fails when u(i) < rate. Burst: call j opens a window when
 * u(j) < s, and calls j … j+window−1 fail; s = 1 − (1 − rate)^(1/window), so `rate` stays the
 * long-run fraction of failing calls and windows that overlap merge into one longer outage. The
 * kind of a window is drawn at the call that opened it, so one outage has one kind.
 *
 * Because u(i) does not depend on the rate, the calls that fail at rate 0.1 also fail at 0.2: the
 * points of a recovery curve are nested, which keeps the curve monotone in what was injected.
 */
import type { FaultKind, FaultMode, FaultProfile, FaultProfileInput, FaultRule, FaultTarget } from './contracts/index.js'
import { createRng, seedFromString } from './random.js'

/** Every fault kind, in a fixed order (weights and reports follow it). */
export const FAULT_KINDS: readonly FaultKind[] = ['timeout', '500', 'garbage', 'rate_limit', 'slow']

/** The kinds after which the call's answer is unusable (`slow` still answers correctly). */
export const DISRUPTIVE_FAULT_KINDS: ReadonlySet<string> = new Set(['timeout', '500', 'garbage', 'rate_limit'])

/** The model gateway's stand-in tool name: completions form one sequence of calls. */
export const MODEL_TOOL = 'model'

/** What locates one call for a fault decision. */
export interface FaultCallKey {
  runSeed: string
  /** `config_id/task_id/attempt`: the attempt without its run id */
  attemptKey: string
  taskId: string
  target: FaultTarget
  /** the tool's name; MODEL_TOOL for completions */
  tool: string
  /** the call's index among this tool's calls in the attempt (0-based) */
  index: number
}

export interface FaultDecision {
  kind: FaultKind
  /** the index of the rule that hit, in the profile */
  rule: number
  rule_name: string
  /** a seeded number in [0, 1) that picks the fault's details (which garbage, …) */
  detail: number
  /** burst: the call index that opened the window this call is in */
  window_start?: number
}

const FNV_OFFSET_BASIS = 0x811c9dc5
const FNV_PRIME = 0x01000193

/** FNV-1a over a string's UTF-16 code units, continuing from `hash`: no allocation on the hot path. */
function fnv(hash: number, text: string): number {
  let h = hash
  for (let i = 0; i < text.length; i += 1) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, FNV_PRIME)
  }
  return h >>> 0
}

/** The hash of a call stream (seed, attempt, target, tool, rule): computed once per decision. */
function streamHash(parts: readonly (string | number)[]): number {
  let h = FNV_OFFSET_BASIS
  for (const part of parts) h = fnv(fnv(h, String(part)), '\u0000')
  return h
}

/** A seeded uniform number in [0, 1) for call `index` of a stream and a purpose (`hit`, `start`, `kind`, `detail`). */
function unit(stream: number, index: number, purpose: string): number {
  return createRng(fnv(fnv(stream, String(index)), purpose))()
}

const globCache = new Map<string, RegExp>()
/** `*` matches any run of characters; everything else literally. */
export function globMatches(pattern: string, value: string): boolean {
  let re = globCache.get(pattern)
  if (re === undefined) {
    re = new RegExp(`^${pattern.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`)
    globCache.set(pattern, re)
  }
  return re.test(value)
}

/** Does a rule's scope include this call? */
export function ruleApplies(rule: FaultRule, key: Pick<FaultCallKey, 'target' | 'tool' | 'taskId'>): boolean {
  if (rule.target !== key.target) return false
  if (rule.tools !== undefined && !rule.tools.includes(key.tool)) return false
  if (rule.tasks !== undefined && !rule.tasks.some((pattern) => globMatches(pattern, key.taskId))) return false
  return rule.rate > 0
}

/** The kinds of a rule with their weights, in FAULT_KINDS order. */
export function ruleKinds(rule: FaultRule): { kind: FaultKind; weight: number }[] {
  if (rule.kinds === undefined) return FAULT_KINDS.map((kind) => ({ kind, weight: 1 }))
  if (Array.isArray(rule.kinds)) {
    const listed = new Set<string>(rule.kinds)
    return FAULT_KINDS.filter((kind) => listed.has(kind)).map((kind) => ({ kind, weight: 1 }))
  }
  const weights = rule.kinds
  return FAULT_KINDS.filter((kind) => (weights[kind] ?? 0) > 0).map((kind) => ({ kind, weight: weights[kind] ?? 0 }))
}

function pickKind(rule: FaultRule, u: number): FaultKind {
  const kinds = ruleKinds(rule)
  const total = kinds.reduce((sum, k) => sum + k.weight, 0)
  let target = u * total
  for (const { kind, weight } of kinds) {
    target -= weight
    if (target < 0) return kind
  }
  return kinds[kinds.length - 1]?.kind ?? 'timeout'
}

/** Burst: the probability a call opens a window, so that `rate` of all calls fall inside one. */
export function burstStartProbability(rate: number, window: number): number {
  if (rate <= 0) return 0
  if (rate >= 1) return 1
  return 1 - Math.pow(1 - rate, 1 / window)
}

/** The default burst window (calls) when a rule gives none. */
export const DEFAULT_BURST_WINDOW = 5

function ruleHit(rule: FaultRule, ruleIndex: number, key: FaultCallKey): FaultDecision | undefined {
  const stream = streamHash([key.runSeed, key.attemptKey, key.target, key.tool, ruleIndex])
  const name = rule.name ?? `rule ${ruleIndex + 1}`
  if (rule.mode === 'uniform') {
    if (unit(stream, key.index, 'hit') >= rule.rate) return undefined
    return { kind: pickKind(rule, unit(stream, key.index, 'kind')), rule: ruleIndex, rule_name: name, detail: unit(stream, key.index, 'detail') }
  }
  const window = rule.window ?? DEFAULT_BURST_WINDOW
  const start = burstStartProbability(rule.rate, window)
  // the latest call that opened a window still covering this one
  for (let j = key.index; j >= 0 && j > key.index - window; j -= 1) {
    if (unit(stream, j, 'start') < start) {
      return {
        kind: pickKind(rule, unit(stream, j, 'kind')),
        rule: ruleIndex,
        rule_name: name,
        detail: unit(stream, key.index, 'detail'),
        window_start: j,
      }
    }
  }
  return undefined
}

/** Whether and how one call fails: the first rule (in profile order) whose scope includes it and that hits. */
export function decideFault(profile: FaultProfile, key: FaultCallKey): FaultDecision | undefined {
  for (const [i, rule] of profile.rules.entries()) {
    if (!ruleApplies(rule, key)) continue
    const hit = ruleHit(rule, i, key)
    if (hit !== undefined) return hit
  }
  return undefined
}

/** The fault schedule of one attempt: numbers each tool's calls and decides each one's fault. */
export interface FaultSchedule {
  /** the fault of the next call of `tool` (undefined: the call goes through untouched) */
  next(target: FaultTarget, tool: string): FaultDecision | undefined
  /** injected faults so far, by kind */
  readonly injected: Readonly<Record<string, number>>
}

export function createFaultSchedule(profile: FaultProfile, base: Pick<FaultCallKey, 'runSeed' | 'attemptKey' | 'taskId'>): FaultSchedule {
  const counters = new Map<string, number>()
  const injected: Record<string, number> = {}
  return {
    next(target, tool) {
      const counter = `${target}\u0000${tool}`
      const index = counters.get(counter) ?? 0
      counters.set(counter, index + 1)
      // an explicit literal, not a spread: one object shape keeps the hot path fast (a spread costs ~2 µs a call)
      const decision = decideFault(profile, { runSeed: base.runSeed, attemptKey: base.attemptKey, taskId: base.taskId, target, tool, index })
      if (decision !== undefined) injected[decision.kind] = (injected[decision.kind] ?? 0) + 1
      return decision
    },
    injected,
  }
}

/** `uniform`, `burst` or `mixed`: how a profile's rules fail calls. */
export function profileMode(profile: FaultProfile): FaultMode | 'mixed' {
  const modes = new Set(profile.rules.map((rule) => rule.mode))
  return modes.size === 1 ? [...modes][0]! : 'mixed'
}

/** The nominal fail rate of a profile: its highest rule rate. */
export function nominalRate(profile: FaultProfile): number {
  return Math.max(0, ...profile.rules.map((rule) => rule.rate))
}

/** The profile at one point of a recovery curve: every rule's rate set to `rate`, the sweep list dropped. */
export function profileAtRate(profile: FaultProfile, rate: number): FaultProfile {
  if (!(rate >= 0 && rate <= 1)) throw new RangeError(`a fail rate must be between 0 and 1, got ${rate}`)
  const { sweep: _sweep, ...rest } = profile
  return { ...rest, rules: profile.rules.map((rule) => ({ ...rule, rate })) }
}

/** JSON with object keys sorted: the same profile always hashes the same. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

/** A profile's identity for hashing: what changes the faults (name, description and editor hint left out). */
export function profileIdentity(profile: FaultProfile): string {
  const { $schema: _schema, name: _name, description: _description, ...rest } = profile
  return canonicalJson(rest)
}

/** The one-off profile behind `--fault-rate P [--fault-kinds …] [--fault-mode burst] [--fault-window N] [--fault-target …]`. */
export interface FaultShorthand {
  rate: number
  kinds?: FaultKind[]
  mode?: FaultMode
  window?: number
  /** `tools` (default), `model` or both */
  targets?: FaultTarget[]
}

export function profileFromShorthand(s: FaultShorthand): FaultProfileInput {
  const targets = s.targets ?? ['tools']
  return {
    name: 'command-line',
    rules: targets.map((target) => ({
      target,
      mode: s.mode ?? 'uniform',
      rate: s.rate,
      ...(s.mode === 'burst' ? { window: s.window ?? DEFAULT_BURST_WINDOW } : {}),
      ...(s.kinds !== undefined ? { kinds: [...s.kinds] } : {}),
    })),
  }
}

// ---------------------------------------------------------------------------------------------
// What a faulted call looks like. The agent must not be able to tell an injected fault from a real
// one: messages read like the failures of real services.

/** The error a failing injected fault gives the agent for a tool call. */
export function toolFaultError(kind: FaultKind, tool: string, profile: Pick<FaultProfile, 'timeout_ms' | 'retry_after_ms'>): string {
  switch (kind) {
    case 'timeout':
      return `timeout: tool "${tool}" did not answer within ${profile.timeout_ms} ms`
    case '500':
      return `500 Internal Server Error: the service behind tool "${tool}" failed to handle the request`
    case 'rate_limit':
      return `429 Too Many Requests: tool "${tool}" is rate limited; retry after ${Math.ceil(profile.retry_after_ms / 1000)} s (${profile.retry_after_ms} ms)`
    case 'garbage':
    case 'slow':
      return ''
  }
}

export const GARBAGE_FLAVOURS = ['truncated_json', 'wrong_types', 'binary_noise', 'html_error_page'] as const
export type GarbageFlavour = (typeof GARBAGE_FLAVOURS)[number]

function flavourOf(detail: number): GarbageFlavour {
  return GARBAGE_FLAVOURS[Math.min(GARBAGE_FLAVOURS.length - 1, Math.floor(detail * GARBAGE_FLAVOURS.length))]!
}

/** Seeded bytes 0–255 as a string (control characters and replacement characters included). */
export function binaryNoise(detail: number, length = 48): string {
  const rng = createRng(seedFromString(`noise:${detail}`))
  let out = ''
  for (let i = 0; i < length; i += 1) {
    const byte = Math.floor(rng() * 256)
    out += byte >= 0xd800 ? '\uFFFD' : String.fromCharCode(byte)
  }
  return out
}

/** An HTML error page, as a proxy in front of a broken service returns it. */
export function htmlErrorPage(status = 502): string {
  const title = status === 502 ? '502 Bad Gateway' : status === 503 ? '503 Service Unavailable' : `${status} Error`
  return `<!DOCTYPE html>\n<html><head><title>${title}</title></head><body><center><h1>${title}</h1></center><hr><center>nginx</center></body></html>\n`
}

/** A value of the same shape with every leaf of the wrong type. */
export function wrongTypes(value: unknown): unknown {
  if (value === null || value === undefined) return 0
  if (typeof value === 'number') return Number.isFinite(value) ? `${value}`.split('').reverse().join('') + '?' : 'NaN'
  if (typeof value === 'string') return value.length
  if (typeof value === 'boolean') return value ? 'yes' : 'no'
  if (Array.isArray(value)) return Object.fromEntries(value.map((item, i) => [String(i), wrongTypes(item)]))
  if (typeof value === 'object') return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, wrongTypes(v)]))
  return null
}

/** The first part of a JSON text, cut mid-value (at least the opening, never the whole). */
export function truncatedJson(value: unknown, detail: number): string {
  let text: string
  try {
    text = JSON.stringify({ result: value ?? null }) ?? '{"result":null}'
  } catch {
    text = '{"result":null}'
  }
  const cut = Math.max(2, Math.floor(text.length * (0.3 + 0.4 * detail)))
  return text.slice(0, Math.min(cut, text.length - 1))
}

/** The malformed answer a `garbage` fault hands back in place of a tool's real result. */
export function garbageToolResult(result: unknown, detail: number): { flavour: GarbageFlavour; value: unknown } {
  const flavour = flavourOf(detail)
  switch (flavour) {
    case 'truncated_json':
      return { flavour, value: truncatedJson(result, detail) }
    case 'wrong_types':
      return { flavour, value: wrongTypes(result) }
    case 'binary_noise':
      return { flavour, value: binaryNoise(detail) }
    case 'html_error_page':
      return { flavour, value: htmlErrorPage(502) }
  }
}

/** An HTTP answer the LLM gateway sends in place of forwarding a completion. */
export interface ModelFaultResponse {
  status: number
  headers: Record<string, string>
  body: string
}

function openAiError(message: string, type: string, code: string): string {
  return JSON.stringify({ error: { message, type, code, param: null } })
}

/** The answer of an injected model fault that fails at once (500, rate_limit) or after the timeout (timeout). */
export function modelFaultResponse(kind: FaultKind, profile: Pick<FaultProfile, 'timeout_ms' | 'retry_after_ms'>): ModelFaultResponse | undefined {
  const json = { 'content-type': 'application/json' }
  switch (kind) {
    case '500':
      return { status: 500, headers: json, body: openAiError('The server had an error while processing your request. Sorry about that!', 'server_error', 'internal_error') }
    case 'rate_limit':
      return {
        status: 429,
        headers: { ...json, 'retry-after': String(Math.ceil(profile.retry_after_ms / 1000)), 'retry-after-ms': String(profile.retry_after_ms) },
        body: openAiError(`Rate limit reached for requests. Please try again in ${profile.retry_after_ms}ms.`, 'requests', 'rate_limit_exceeded'),
      }
    case 'timeout':
      return { status: 504, headers: json, body: openAiError(`The model did not answer within ${profile.timeout_ms} ms.`, 'timeout', 'upstream_timeout') }
    case 'garbage':
    case 'slow':
      return undefined
  }
}

/** A malformed completion (HTTP 200): cut-off JSON, wrong types, noise or an HTML page; streamed as a broken event stream. */
export function garbageCompletion(detail: number, request: { model: string; stream: boolean }): ModelFaultResponse & { flavour: GarbageFlavour } {
  const flavour = flavourOf(detail)
  const complete = {
    id: 'chatcmpl-forge',
    object: request.stream ? 'chat.completion.chunk' : 'chat.completion',
    created: 0,
    model: request.model,
    choices: [{ index: 0, message: { role: 'assistant', content: 'Here is the answer you asked for.' }, finish_reason: 'stop' }],
  }
  let payload: string
  switch (flavour) {
    case 'truncated_json':
      payload = truncatedJson(complete, detail).slice('{"result":'.length)
      break
    case 'wrong_types':
      payload = JSON.stringify({ id: 7, object: request.stream ? 'chat.completion.chunk' : 'chat.completion', model: request.model, choices: 'unavailable', usage: 'n/a' })
      break
    case 'binary_noise':
      payload = binaryNoise(detail)
      break
    case 'html_error_page':
      return { flavour, status: 200, headers: { 'content-type': 'text/html' }, body: htmlErrorPage(503) }
  }
  if (request.stream) return { flavour, status: 200, headers: { 'content-type': 'text/event-stream' }, body: `data: ${payload}\n\n` }
  return { flavour, status: 200, headers: { 'content-type': 'application/json' }, body: payload }
}
