/**
 * The mock agent: a deterministic fake of the outside world's agent, seeded from the attempt
 * (ctx.seed), so a rerun reproduces it exactly. It sees only the invocation payload and its
 * context — never graders, expected values or goldens — and solves a task the way a naive agent
 * would: call the allowlisted tools in order, filling each tool's arguments from the input fields
 * of the same name, or from the previous tool's result. With seeded noise it fails the way real
 * agents do, so every failure bucket and every downstream statistic has something to chew on.
 */
import { existsSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { z } from 'zod'
import type { InvocationPayload, ToolSpec } from '../../core/contracts/index.js'
import type { AdapterContext, AdapterOutput, AgentAdapter, ToolBox } from '../../core/plugins.js'
import { createRng, pick } from '../../core/random.js'
import { harnessConfigShape, parseAdapterConfig } from './config-schema.js'

/** The ways the mock fails, each a realistic agent failure. */
export const MOCK_FAILURE_MODES = [
  /** solves the task, then answers something else */
  'wrong_answer',
  /** does the work and never answers */
  'no_answer',
  /** declines: "I can't help with that" */
  'refusal',
  /** calls a tool it was not given (or one it was told not to use) and gives up */
  'hallucinated_tool',
  /** calls a tool with arguments of the wrong type and gives up */
  'malformed_call',
  /** retries a failing call until the harness's retry budget stops it */
  'retry_loop',
  /** repeats the same call until the tool-call budget stops it */
  'call_loop',
  /** sends an input the tool rejects and gives up on the error */
  'tool_error',
] as const
export type MockFailureMode = (typeof MOCK_FAILURE_MODES)[number]

const probability = z.number().min(0).max(1)

/** ctx.config of the mock adapter; every field optional. */
export const MockConfig = z
  .strictObject({
    skill: probability.default(0.8).describe('Probability of a clean attempt (0..1).'),
    task_skill: z.record(z.string(), probability).default({}).describe('Per-task override of skill: task id → probability.'),
    delay_ms: z.number().int().nonnegative().default(0).describe('How long the mock "thinks" before answering, in ms.'),
    step_delay_ms: z.number().int().nonnegative().default(0).describe('How long the mock "thinks" before each tool call (each step of the attempt), in ms: a latency-bound agent.'),
    retries: z.number().int().min(0).max(10).default(0).describe('Retry a failed tool call up to this many times before giving up (recovery under injected faults).'),
    failure_modes: z
      .partialRecord(z.enum(MOCK_FAILURE_MODES), z.number().nonnegative())
      .optional()
      .describe(`Relative weights of the failure modes (${MOCK_FAILURE_MODES.join(', ')}); default: all equal.`),
    hold_file: z
      .string()
      .min(1)
      .optional()
      .describe('A test gate: while this file exists, attempts numbered hold_from or higher wait before they act (the chaos tests hold a run at a known point).'),
    hold_from: z.number().int().nonnegative().default(0).describe('The first attempt number hold_file holds.'),
    ...harnessConfigShape,
  })
  .describe('Config of the mock adapter (--adapter-config).')
export type MockConfig = z.output<typeof MockConfig>

/** Parses a mock config; throws with the offending field named. */
export function parseMockConfig(config: Record<string, unknown>): MockConfig {
  return parseAdapterConfig('mock', MockConfig, config)
}

/** Which way the attempt goes: clean, or one failure mode. A pure function of the seed. */
export function chooseMockBehaviour(seed: number, taskId: string, config: MockConfig): 'clean' | MockFailureMode {
  const rng = createRng(seed)
  const skill = config.task_skill[taskId] ?? config.skill
  if (rng() < skill) return 'clean'
  const weights = MOCK_FAILURE_MODES.map((mode) => config.failure_modes?.[mode] ?? (config.failure_modes ? 0 : 1))
  const total = weights.reduce((a, b) => a + b, 0)
  if (total <= 0) return pick(rng, MOCK_FAILURE_MODES)
  let target = rng() * total
  for (const [i, mode] of MOCK_FAILURE_MODES.entries()) {
    target -= weights[i] ?? 0
    if (target < 0) return mode
  }
  return MOCK_FAILURE_MODES[MOCK_FAILURE_MODES.length - 1] as MockFailureMode
}

const INVENTED_TOOLS = ['search', 'web_browse', 'python', 'lookup', 'database_query', 'calculator_v2']
const REFUSAL = "I can't help with that."
// a hard stop for the loop modes in case a budget was configured absurdly high
const MAX_LOOP_CALLS = 10_000

type Step = { ok: true; value: unknown } | { ok: false; error: string }

class MockRun {
  calls = 0
  readonly notes: string[] = []

  constructor(
    readonly payload: InvocationPayload,
    readonly tools: ToolBox,
    readonly signal: AbortSignal,
    readonly rng: () => number,
    readonly retries = 0,
    readonly stepDelayMs = 0,
  ) {}

  async call(name: string, args: unknown): Promise<Step> {
    if (this.stepDelayMs > 0) await think(this.stepDelayMs, this.signal)
    this.calls += 1
    const outcome = await this.tools.call(name, args)
    this.notes.push(`${name}: ${outcome.ok ? 'ok' : `failed (${outcome.error})`}`)
    return outcome.ok ? { ok: true, value: outcome.result } : { ok: false, error: outcome.error }
  }

  /** the naive plan: every allowlisted tool in order, chaining results */
  async solve(): Promise<Step> {
    let previous: { value: unknown } | undefined
    for (const spec of this.payload.tools) {
      if (this.signal.aborted || this.tools.exhausted) return { ok: false, error: 'stopped' }
      const args = fillArgs(spec, this.payload.input, previous)
      let step = await this.call(spec.name, args)
      for (let retry = 0; !step.ok && retry < this.retries && !this.signal.aborted && !this.tools.exhausted; retry += 1) step = await this.call(spec.name, args)
      if (!step.ok) return step
      previous = { value: step.value }
    }
    return { ok: true, value: previous?.value }
  }

  /** the first tool with a string parameter and args that make it choke ('' for every string) */
  corruptedCall(): { name: string; args: Record<string, unknown> } | undefined {
    for (const spec of this.payload.tools) {
      const params = parameters(spec)
      const strings = params.filter((p) => p.type === 'string')
      if (strings.length === 0) continue
      const args = fillArgs(spec, this.payload.input, undefined)
      for (const p of strings) args[p.name] = ''
      return { name: spec.name, args }
    }
    return undefined
  }

  /** the first tool with every parameter given a value of the wrong type */
  malformedCall(): { name: string; args: unknown } | undefined {
    const spec = this.payload.tools[0]
    if (spec === undefined) return undefined
    const params = parameters(spec)
    if (params.length === 0) return { name: spec.name, args: 'please run' }
    const args: Record<string, unknown> = {}
    for (const p of params) args[p.name] = p.type === 'string' ? 12_345 : p.type === 'number' || p.type === 'integer' ? 'a lot' : 'yes'
    return { name: spec.name, args }
  }

  async loop(name: string, args: unknown): Promise<void> {
    for (let i = 0; i < MAX_LOOP_CALLS && !this.tools.exhausted && !this.signal.aborted; i += 1) {
      await this.call(name, args)
    }
  }
}

async function behave(run: MockRun, behaviour: 'clean' | MockFailureMode): Promise<Pick<AdapterOutput, 'output' | 'refused'>> {
  const { payload, rng } = run
  switch (behaviour) {
    case 'clean': {
      const step = await run.solve()
      return { output: step.ok ? step.value : `I could not finish: ${step.error}` }
    }
    case 'wrong_answer': {
      const step = await run.solve()
      return { output: perturb(step.ok ? step.value : undefined, rng) }
    }
    case 'no_answer': {
      await run.solve()
      return { output: rng() < 0.5 ? '' : null }
    }
    case 'refusal':
      return { output: REFUSAL, refused: true }
    case 'hallucinated_tool': {
      const given = new Set(payload.tools.map((t) => t.name))
      const invented = INVENTED_TOOLS.filter((name) => !given.has(name))
      const name =
        payload.disallowed_tools.length > 0 && rng() < 0.3 ? pick(rng, payload.disallowed_tools) : pick(rng, invented.length > 0 ? invented : ['search_everything'])
      await run.call(name, { ...payload.input })
      return { output: 'The tool I needed did not work, so I cannot answer.' }
    }
    case 'malformed_call': {
      const call = run.malformedCall()
      if (call === undefined) return { output: perturb(undefined, rng) }
      const step = await run.call(call.name, call.args)
      return { output: step.ok ? perturb(step.value, rng) : 'The tool rejected my request.' }
    }
    case 'retry_loop': {
      const call = run.corruptedCall() ?? run.malformedCall()
      if (call === undefined) return { output: null }
      await run.loop(call.name, call.args)
      return { output: null }
    }
    case 'call_loop': {
      const spec = payload.tools[0]
      if (spec === undefined) return { output: null }
      await run.loop(spec.name, fillArgs(spec, payload.input, undefined))
      return { output: null }
    }
    case 'tool_error': {
      const call = run.corruptedCall()
      if (call === undefined) {
        const step = await run.solve()
        return { output: perturb(step.ok ? step.value : undefined, rng) }
      }
      const step = await run.call(call.name, call.args)
      return { output: step.ok ? perturb(step.value, rng) : `The ${call.name} tool failed: ${step.error}` }
    }
  }
}

/** Sleeps `ms` unless the attempt is stopped first (its deadline: the harness records the budget, the mock just stops). */
async function think(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return
  try {
    await sleep(ms, undefined, { signal })
  } catch {
    // aborted
  }
}

/** Waits while `hold_file` exists when this attempt's number is hold_from or higher (a test gate; nothing else changes). */
async function holdAtGate(config: MockConfig, ctx: AdapterContext): Promise<void> {
  if (config.hold_file === undefined) return
  const attempt = Number(ctx.attemptUid.slice(ctx.attemptUid.lastIndexOf('/') + 1))
  if (!(attempt >= config.hold_from)) return
  while (existsSync(config.hold_file) && !ctx.signal.aborted) await sleep(20)
}

/** The mock adapter; behaviour is a pure function of ctx.seed, the payload and ctx.config. */
export const mockAdapter: AgentAdapter = {
  name: 'mock',
  async invoke(payload: InvocationPayload, ctx: AdapterContext): Promise<AdapterOutput> {
    const config = parseMockConfig(ctx.config)
    await holdAtGate(config, ctx)
    const behaviour = chooseMockBehaviour(ctx.seed, ctx.taskId, config)
    // a second stream for the details, so the choice of behaviour stays stable if they change
    const rng = createRng((ctx.seed ^ 0x9e3779b9) >>> 0)
    const run = new MockRun(payload, ctx.tools, ctx.signal, rng, config.retries, config.step_delay_ms)
    const { output, refused } = await behave(run, behaviour)
    if (config.delay_ms > 0) await think(config.delay_ms, ctx.signal)

    const promptTokens = Math.ceil(JSON.stringify(payload).length / 4)
    const answerTokens = Math.ceil(textOf(output).length / 4)
    return {
      output,
      refused: refused ?? false,
      usage: {
        input_tokens: promptTokens * (run.calls + 1) + Math.floor(rng() * 40),
        output_tokens: 12 + 24 * run.calls + answerTokens + Math.floor(rng() * 16),
      },
      self_report: run.notes.length === 0 ? 'Answered without calling tools.' : `Called ${run.notes.join('; ')}.`,
    }
  },
}

interface Parameter {
  name: string
  type: string | undefined
  required: boolean
}

function parameters(spec: ToolSpec): Parameter[] {
  const schema = spec.input_schema
  const properties = isRecord(schema['properties']) ? schema['properties'] : {}
  const required = Array.isArray(schema['required']) ? schema['required'].filter((r): r is string => typeof r === 'string') : []
  const names = [...new Set([...Object.keys(properties), ...required])]
  return names.map((name) => {
    const property = properties[name]
    const type = isRecord(property) && typeof property['type'] === 'string' ? property['type'] : undefined
    return { name, type, required: required.includes(name) }
  })
}

/** Arguments by name from the input; a required one missing there comes from the previous result. */
function fillArgs(spec: ToolSpec, input: Record<string, unknown>, previous: { value: unknown } | undefined): Record<string, unknown> {
  const args: Record<string, unknown> = {}
  for (const p of parameters(spec)) {
    if (Object.hasOwn(input, p.name)) args[p.name] = input[p.name]
    else if (p.required && previous !== undefined) {
      const value = previous.value
      args[p.name] = isRecord(value) && Object.hasOwn(value, p.name) ? value[p.name] : value
    }
  }
  return args
}

/** A plausible wrong answer near the right one: never equal to it, never containing it. */
function perturb(value: unknown, rng: () => number): unknown {
  if (typeof value === 'number') {
    const delta = (1 + Math.floor(rng() * 9)) * (rng() < 0.5 ? -1 : 1)
    return value + delta
  }
  if (typeof value === 'boolean') return !value
  if (value === null || value === undefined) return pick(rng, ['unknown', 'I am not sure.', 'n/a'])
  const text = typeof value === 'string' ? value : textOf(value)
  if (text.length <= 1) return text === 'x' ? 'y' : 'x'
  // dropping a character (never appending) so the answer neither equals nor contains the right one
  return rng() < 0.5 ? text.slice(1) : text.slice(0, -1)
}

function textOf(value: unknown): string {
  if (value === null || value === undefined) return ''
  if (typeof value === 'string') return value
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
