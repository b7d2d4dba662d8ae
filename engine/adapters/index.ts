/** The agent adapters, registered by name: a run names one and the worker looks it up here. */
import type { AgentAdapter } from '../../core/plugins.js'
import { UnknownAdapterError } from '../errors.js'
import { mockAdapter } from './mock.js'
import { replayAdapter } from './replay.js'
import { reactAdapter } from './react.js'
import { singleShotAdapter } from './single-shot.js'
import { langgraphAdapter } from './langgraph.js'
import { pydanticAiAdapter } from './pydantic-ai.js'
import { subprocessAdapter } from './subprocess.js'
import { moduleAdapter } from './module.js'
import { httpAdapter } from './http.js'
import { oracleAdapter } from './oracle.js'

export const adapters: ReadonlyMap<string, AgentAdapter> = new Map([mockAdapter, replayAdapter, reactAdapter, singleShotAdapter, langgraphAdapter, pydanticAiAdapter, subprocessAdapter, moduleAdapter, httpAdapter, oracleAdapter].map((adapter) => [adapter.name, adapter]))

/** The adapter registered under `name`; throws UnknownAdapterError listing the known names. */
export function getAdapter(name: string): AgentAdapter {
  const adapter = adapters.get(name)
  if (adapter === undefined) throw new UnknownAdapterError(name, [...adapters.keys()].sort())
  return adapter
}
