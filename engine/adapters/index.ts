/**
 * The agent adapters, registered by name: a run names one and the worker looks it up here. Each
 * registers a one-line description and its config schema (strict zod, every field described), so
 * `forge adapters list` can show them and a run's `--adapter-config` is checked before it starts.
 */
import { z } from 'zod'
import type { AgentAdapter } from '../../core/plugins.js'
import { withSecretRefsAsText } from '../../core/secret-refs.js'
import { UnknownAdapterError } from '../errors.js'
import { configProblems } from './config-schema.js'
import { httpAdapter, HttpConfig } from './http.js'
import { langgraphAdapter } from './langgraph.js'
import { mockAdapter, MockConfig } from './mock.js'
import { ModelAdapterConfig } from './model-config.js'
import { moduleAdapter, ModuleConfig } from './module.js'
import { oracleAdapter, OracleConfig } from './oracle.js'
import { pydanticAiAdapter, PydanticAiConfig } from './pydantic-ai.js'
import { reactAdapter } from './react.js'
import { replayAdapter, ReplayConfig } from './replay.js'
import { singleShotAdapter } from './single-shot.js'
import { subprocessAdapter, SubprocessConfig } from './subprocess.js'

/** An adapter with what a user needs to choose and configure it. */
export interface AdapterRegistration {
  adapter: AgentAdapter
  /** one line: what the agent is and how it runs */
  description: string
  /** the adapter's `--adapter-config`: strict (an unknown key is an error), every field described */
  configSchema: z.ZodType<Record<string, unknown>>
}

/** Every adapter, in the order `forge adapters list` shows them. */
export const adapterRegistrations: readonly AdapterRegistration[] = [
  {
    adapter: mockAdapter,
    description: 'A deterministic fake agent seeded from the attempt: solves tasks with the allowlisted tools, failing in every realistic way at a set rate.',
    configSchema: MockConfig,
  },
  {
    adapter: singleShotAdapter,
    description: 'One chat completion without tools through the LLM gateway: the baseline of a model without an agent loop.',
    configSchema: ModelAdapterConfig,
  },
  {
    adapter: reactAdapter,
    description: 'A tool-calling loop (OpenAI function calling) against any OpenAI-compatible server, through the LLM gateway.',
    configSchema: ModelAdapterConfig,
  },
  {
    adapter: langgraphAdapter,
    description: 'A LangGraph JS agent/tools graph built anew per attempt, its chat model behind the LLM gateway.',
    configSchema: ModelAdapterConfig,
  },
  {
    adapter: pydanticAiAdapter,
    description: 'A PydanticAI agent in a Python process per attempt, tools over JSON-lines stdio, the model behind the LLM gateway.',
    configSchema: PydanticAiConfig,
  },
  {
    adapter: subprocessAdapter,
    description: 'Any program as the agent, sandboxed in a new process group per attempt, tools over JSON-lines stdio (or an HTTP tool endpoint).',
    configSchema: SubprocessConfig,
  },
  {
    adapter: moduleAdapter,
    description: "A JavaScript module's agent, run sandboxed in a child process per attempt (in the worker's own process only with sandbox: false).",
    configSchema: ModuleConfig,
  },
  {
    adapter: httpAdapter,
    description: 'An agent service: reset, then invoke over HTTP per attempt, tools through a per-attempt endpoint.',
    configSchema: HttpConfig,
  },
  {
    adapter: replayAdapter,
    description: 'Plays back stored traces, re-issuing their tool calls through the tool proxy, so they are graded as if made now.',
    configSchema: ReplayConfig,
  },
  {
    adapter: oracleAdapter,
    description: "Replays each task's golden trace through the real tools: proves every task solvable as written.",
    configSchema: OracleConfig,
  },
]

export const adapters: ReadonlyMap<string, AgentAdapter> = new Map(adapterRegistrations.map(({ adapter }) => [adapter.name, adapter]))

/** The adapter registered under `name`; throws UnknownAdapterError listing the known names. */
export function getAdapter(name: string): AgentAdapter {
  const adapter = adapters.get(name)
  if (adapter === undefined) throw new UnknownAdapterError(name, [...adapters.keys()].sort())
  return adapter
}

/** The names of every adapter, in registration order (for flag help and options). */
export function adapterNames(): string[] {
  return adapterRegistrations.map(({ adapter }) => adapter.name)
}

/** What `forge adapters list --json` shows of one adapter. */
export interface AdapterInfo {
  name: string
  description: string
  /** the config's JSON Schema (draft 2020-12, the input side: defaults shown, nothing required that has one) */
  config_schema: Record<string, unknown>
}

/** Every adapter's name, description and config JSON Schema. */
export function describeAdapters(): AdapterInfo[] {
  return adapterRegistrations.map(({ adapter, description, configSchema }) => ({
    name: adapter.name,
    description,
    config_schema: z.toJSONSchema(configSchema, { io: 'input' }) as Record<string, unknown>,
  }))
}

export type AdapterConfigCheck = { ok: true } | { ok: false; message: string; problems: string[] }

/**
 * Checks a run's adapter config against the adapter's schema before anything starts. Not ok names
 * every wrong field: `invalid --adapter-config for adapter "mock": skill: Too big: …`.
 */
export function validateAdapterConfig(name: string, config: Record<string, unknown>): AdapterConfigCheck {
  const registration = adapterRegistrations.find(({ adapter }) => adapter.name === name)
  if (registration === undefined) {
    const message = `unknown adapter "${name}" (known adapters: ${adapterNames().join(', ')})`
    return { ok: false, message, problems: [message] }
  }
  // secrets given by reference are resolved on the worker; here they stand for strings
  const parsed = registration.configSchema.safeParse(withSecretRefsAsText(config))
  if (parsed.success) return { ok: true }
  const problems = configProblems(registration.configSchema, parsed.error)
  return { ok: false, message: `invalid --adapter-config for adapter "${name}": ${problems.join('; ')}`, problems }
}
