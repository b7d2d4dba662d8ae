/**
 * The module adapter: an agent written as a JavaScript module. By default it runs in the agent
 * sandbox: a child process per attempt (engine/sandbox/inside/module-host.mjs) imports the module
 * and speaks the subprocess protocol, so the agent sees neither the worker's memory nor its files.
 * With `sandbox: false` it runs in the worker's own process — an explicit opt-in that marks every
 * attempt degraded (the agent can read the worker and its suite). The module exports (as
 * `default`, or the export named in config) either
 *
 * - an agent object `{ invoke(payload, tools, context) }`, or
 * - a factory (a function or class) that makes one, called once per attempt.
 *
 * Sandboxed, every attempt is a new process. In-process, every attempt gets a fresh instance so
 * module-level state cannot leak between attempts: by default the module itself is imported anew per attempt (a unique `?attempt=` query makes Node
 * evaluate it again), so even its top-level variables start over. `isolation: "factory"` imports
 * it once and relies on the factory for a fresh instance — no per-attempt module memory, for long
 * sweeps, at the price of shared top-level state. Modules the agent module imports itself are
 * evaluated once per worker either way.
 *
 * `invoke` returns `{ output, self_report?, refused? }`, or any other value, which is taken as
 * the output itself.
 */
import { existsSync } from 'node:fs'
import { dirname, isAbsolute, join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { z } from 'zod'
import type { InvocationPayload, ToolSpec } from '../../core/contracts/index.js'
import type { AdapterContext, AdapterOutput, AgentAdapter, LlmEndpoint } from '../../core/plugins.js'
import { taintProcess } from '../process-taint.js'
import { sandboxConfigShape, unsandboxedNote } from '../sandbox/config.js'
import { SANDBOX_LIB_DIR } from '../sandbox/layout.js'
import { gatewayConfigShape, harnessConfigShape, parseAdapterConfig } from './config-schema.js'
import { parseSubprocessConfig, runSubprocessAgent } from './subprocess.js'

/** ctx.config of the module adapter. */
export const ModuleConfig = z
  .strictObject({
    path: z.string().min(1).describe("The agent's module file; relative paths resolve against the worker's working directory."),
    export: z.string().min(1).optional().describe('The export holding the agent or its factory; default: `default`, else `agent`.'),
    isolation: z
      .enum(['module', 'factory'])
      .default('module')
      .describe('In-process only (sandbox: false) — module: a fresh module evaluation per attempt; factory: one module, a fresh instance per attempt from its factory.'),
    llm: z.boolean().default(true).describe("Sandboxed: start the attempt's LLM gateway for context.llm() (false saves it for agents that call no model)."),
    kill_grace_ms: z.number().int().nonnegative().max(10_000).default(500).describe("Sandboxed: after SIGTERM, how long the agent's process gets before SIGKILL, in ms."),
    ...sandboxConfigShape,
    ...harnessConfigShape,
    ...gatewayConfigShape,
  })
  .describe('Config of the module adapter (--adapter-config).')
export type ModuleConfig = z.output<typeof ModuleConfig>

/** The tools handed to a module agent: the attempt's tool box, nothing else of the harness. */
export interface ModuleAgentTools {
  specs: ToolSpec[]
  call(name: string, args?: unknown): Promise<{ ok: true; result: unknown } | { ok: false; error: string }>
}

/** What else a module agent may use: the abort signal, the attempt's seed, the LLM gateway. */
export interface ModuleAgentContext {
  signal: AbortSignal
  seed: number
  llm(): Promise<LlmEndpoint>
}

/** The shape a module agent has. */
export interface ModuleAgent {
  invoke(payload: InvocationPayload, tools: ModuleAgentTools, context: ModuleAgentContext): unknown
}

export function parseModuleConfig(config: Record<string, unknown>): ModuleConfig {
  return parseAdapterConfig('module', ModuleConfig, config)
}

/** The module's file URL; `attempt` adds a query that makes Node evaluate a fresh copy. */
export function moduleUrl(path: string, attempt?: string): string {
  const file = pathToFileURL(isAbsolute(path) ? path : resolve(process.cwd(), path)).href
  return attempt === undefined ? file : `${file}?attempt=${encodeURIComponent(attempt)}`
}

function isAgent(value: unknown): value is ModuleAgent {
  return typeof value === 'object' && value !== null && typeof (value as { invoke?: unknown }).invoke === 'function'
}

function isClass(fn: unknown): boolean {
  return typeof fn === 'function' && /^class[\s{]/.test(Function.prototype.toString.call(fn))
}

/** The agent a module export stands for: the object itself, or what its factory makes. */
async function instantiate(exported: unknown, where: string): Promise<ModuleAgent> {
  if (isAgent(exported)) return exported
  if (typeof exported === 'function') {
    const made: unknown = isClass(exported)
      ? new (exported as new () => unknown)()
      : await (exported as () => unknown)()
    if (isAgent(made)) return made
    throw new Error(`module adapter: the factory ${where} returned ${describe(made)}, not an object with an invoke(payload, tools) method`)
  }
  throw new Error(`module adapter: ${where} is ${describe(exported)}, not an agent ({ invoke(payload, tools) }) or a factory of one`)
}

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value === 'object' ? 'an object without invoke()' : typeof value
}

function pickExport(namespace: Record<string, unknown>, name: string | undefined, url: string): { value: unknown; where: string } {
  const file = url.replace(/\?.*$/, '')
  if (name !== undefined) {
    if (!(name in namespace)) throw new Error(`module adapter: ${file} has no export "${name}" (it exports: ${Object.keys(namespace).join(', ') || 'nothing'})`)
    return { value: namespace[name], where: `export "${name}" of ${file}` }
  }
  for (const candidate of ['default', 'agent']) {
    if (namespace[candidate] !== undefined) return { value: namespace[candidate], where: `export "${candidate}" of ${file}` }
  }
  throw new Error(`module adapter: ${file} exports neither "default" nor "agent" (it exports: ${Object.keys(namespace).join(', ') || 'nothing'}); name one with config.export`)
}

/** Output of a module agent's invoke: `{ output, … }` as given, anything else as the output itself. */
export function toAdapterOutput(returned: unknown): AdapterOutput {
  if (typeof returned === 'object' && returned !== null && !Array.isArray(returned) && Object.hasOwn(returned, 'output')) {
    const r = returned as Record<string, unknown>
    const out: AdapterOutput = { output: r['output'] }
    if (typeof r['self_report'] === 'string') out.self_report = r['self_report']
    if (typeof r['refused'] === 'boolean') out.refused = r['refused']
    return out
  }
  return { output: returned }
}

/** The nearest node_modules directory at or above `dir`, which the module's imports resolve from. */
export function nearestNodeModules(dir: string): string | undefined {
  for (let at = resolve(dir); ; at = dirname(at)) {
    const candidate = join(at, 'node_modules')
    if (existsSync(candidate)) return candidate
    if (dirname(at) === at) return undefined
  }
}

export const moduleAdapter: AgentAdapter = {
  name: 'module',
  stopGraceMs: 3_000,
  async invoke(payload: InvocationPayload, ctx: AdapterContext): Promise<AdapterOutput> {
    const config = parseModuleConfig(ctx.config)
    if (config.sandbox !== false) return invokeSandboxed(payload, ctx, config)
    const url = moduleUrl(config.path, config.isolation === 'module' ? ctx.attemptUid : undefined)
    // from its first line on, the agent's code can alter this worker for good: every later attempt here is degraded too
    taintProcess(`a module agent, ${url.replace(/\?.*$/, '')}, ran inside it unsandboxed (sandbox: false)`)
    let namespace: Record<string, unknown>
    try {
      namespace = (await import(url)) as Record<string, unknown>
    } catch (error) {
      throw new Error(`module adapter: cannot import ${url.replace(/\?.*$/, '')}: ${error instanceof Error ? error.message : String(error)}`, { cause: error })
    }
    const { value, where } = pickExport(namespace, config.export, url)
    const agent = await instantiate(value, where)
    // the agent gets the tool box's door and nothing more of the harness
    const tools: ModuleAgentTools = {
      specs: structuredClone(ctx.tools.specs),
      call: (name, args) => ctx.tools.call(name, args ?? {}),
    }
    const context: ModuleAgentContext = { signal: ctx.signal, seed: ctx.seed, llm: () => ctx.llm() }
    return { ...toAdapterOutput(await agent.invoke(payload, tools, context)), isolation_degraded: unsandboxedNote('module') }
  },
}

/** A sandboxed module agent: the module host runs it in a child process, as a subprocess agent. */
async function invokeSandboxed(payload: InvocationPayload, ctx: AdapterContext, config: ModuleConfig): Promise<AdapterOutput> {
  const file = isAbsolute(config.path) ? config.path : resolve(process.cwd(), config.path)
  if (!existsSync(file)) throw new Error(`module adapter: cannot import ${pathToFileURL(file).href}: no such file`)
  const nodeModules = nearestNodeModules(dirname(file))
  const host = parseSubprocessConfig({
    command: [process.execPath, `${SANDBOX_LIB_DIR}/module-host.mjs`, file, config.export ?? '-', config.isolation],
    env: { FORGE_AGENT_SEED: String(ctx.seed) },
    llm: config.llm,
    kill_grace_ms: config.kill_grace_ms,
    sandbox: config.sandbox,
  })
  return runSubprocessAgent(payload, ctx, host, 'module', { forwarder: 'agent', ...(nodeModules !== undefined ? { readOnly: [nodeModules] } : {}) })
}
