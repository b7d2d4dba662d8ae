/**
 * The stack's model server: one process per stack (not per worker) that loads a `local` model once
 * and serves it OpenAI-compatibly to every worker's LLM gateway (workers/model-server-main.ts). It is
 * started on demand — when a run or its judge asks for a `local` model — recorded in stack.json
 * like the other components, restarted when its pid went stale, shown by `forge stack status` and
 * stopped by `forge stack down`.
 *
 *   FORGE_MODEL_PARALLEL   completions generated at once (default 2); further requests queue
 *   FORGE_MODEL_CONTEXT    context tokens per parallel sequence (default 4096)
 *   FORGE_MODEL_THREADS    CPU threads (default: half the cores)
 *   FORGE_LOCAL_MODEL_URL  use this OpenAI-compatible server for `local` models instead (nothing is started);
 *                          FORGE_LOCAL_MODEL_KEY its key, if it needs one
 */
import { readSetting } from '../config/index.js'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { ForgeConfig } from './config.js'
import { ConfigError, StackStartError } from './errors.js'
import { freePorts, isAlive, readStackState, spawnDetached, waitForPort, withLock, writeStackState, type ModelServerEntry } from './local-stack.js'
import { distEntry } from './paths.js'

/** What the workers' gateways need to reach the model server. */
export interface ModelServerEndpoint {
  /** OpenAI-compatible base URL ending in /v1 */
  url: string
  key?: string
  /** the model it serves (unknown for an external server) */
  model?: string
  pid?: number
  /** completions it generates at once */
  parallel?: number
}

export interface ModelServerSettings {
  parallel: number
  contextSize?: number
  threads?: number
  externalUrl?: string
  externalKey?: string
}

/** The model server's settings from FORGE_MODEL_* / FORGE_LOCAL_MODEL_* (bad values name the variable). */
export function modelServerSettings(env: NodeJS.ProcessEnv = process.env): ModelServerSettings {
  const externalUrl = readSetting('localModelUrl', env)
  const contextSize = readSetting('modelContext', env)
  const threads = readSetting('modelThreads', env)
  const externalKey = readSetting('localModelKey', env)
  return {
    parallel: readSetting('modelParallel', env),
    ...(contextSize !== undefined ? { contextSize } : {}),
    ...(threads !== undefined ? { threads } : {}),
    ...(externalUrl ? { externalUrl } : {}),
    ...(externalKey ? { externalKey } : {}),
  }
}

/**
 * The stack's model server for `model` (a resolved `local` model): the running one when it serves
 * that file, else a new one. A server already running another model is an error (one model per
 * stack): `forge stack down` stops it, and the next run starts the one it asks for.
 */
export async function ensureModelServer(
  config: ForgeConfig,
  model: { name: string; path: string },
  log: (line: string) => void = () => undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ModelServerEndpoint> {
  const settings = modelServerSettings(env)
  if (settings.externalUrl) return { url: settings.externalUrl, ...(settings.externalKey ? { key: settings.externalKey } : {}) }
  return withLock(config.home, async () => {
    const state = readStackState(config.home)
    if (isAlive(state.model)) {
      if (state.model.path !== model.path) {
        throw new ConfigError(
          `the stack's model server already serves ${state.model.model} (${state.model.path}), not ${model.name} (${model.path}): ` +
            'one model per stack. Stop it with `forge stack down` (stored results stay) and run again.',
        )
      }
      return endpointOf(state.model)
    }
    log(`starting the model server (${model.name}, ${settings.parallel} parallel)…`)
    state.model = await startModelServer(config, model, settings)
    writeStackState(config.home, state)
    return endpointOf(state.model)
  })
}

/** The running model server of this stack, if any (external when FORGE_LOCAL_MODEL_URL is set). */
export function currentModelServer(config: ForgeConfig, env: NodeJS.ProcessEnv = process.env): ModelServerEndpoint | undefined {
  const settings = modelServerSettings(env)
  if (settings.externalUrl) return { url: settings.externalUrl, ...(settings.externalKey ? { key: settings.externalKey } : {}) }
  const state = readStackState(config.home)
  return isAlive(state.model) ? endpointOf(state.model) : undefined
}

/** The environment a worker needs to forward `local` models to this server. */
export function modelServerWorkerEnv(endpoint: ModelServerEndpoint): Record<string, string> {
  return { FORGE_LOCAL_MODEL_URL: endpoint.url, ...(endpoint.key ? { FORGE_LOCAL_MODEL_KEY: endpoint.key } : {}) }
}

function endpointOf(entry: ModelServerEntry): ModelServerEndpoint {
  return { url: entry.url, key: entry.key, model: entry.model, pid: entry.pid, parallel: entry.parallel }
}

async function startModelServer(config: ForgeConfig, model: { name: string; path: string }, settings: ModelServerSettings): Promise<ModelServerEntry> {
  const entry = distEntry('workers/model-server-main.js')
  if (!existsSync(entry)) throw new StackStartError(`the model server is not built (${entry} is missing): run npm run build`)
  const [port = 0] = await freePorts(1)
  // gateways present it; an agent that found the port cannot use the model unmetered
  const key = `forge-model-${randomBytes(18).toString('hex')}`
  mkdirSync(join(config.home, 'logs'), { recursive: true })
  const log = join(config.home, 'logs', 'model-server.log')
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    FORGE_MODEL_PATH: model.path,
    FORGE_MODEL_NAME: model.name,
    FORGE_MODEL_PORT: String(port),
    FORGE_MODEL_PARALLEL: String(settings.parallel),
    FORGE_MODEL_SERVER_KEY: key,
    ...(settings.contextSize !== undefined ? { FORGE_MODEL_CONTEXT: String(settings.contextSize) } : {}),
    ...(settings.threads !== undefined ? { FORGE_MODEL_THREADS: String(settings.threads) } : {}),
  }
  const pid = spawnDetached(process.execPath, [entry], log, env)
  // it listens only once the model is loaded
  await waitForPort(port, 120_000, pid, log, 'the model server')
  return { pid, marker: 'model-server-main', log, url: `http://127.0.0.1:${port}/v1`, model: model.name, path: model.path, parallel: settings.parallel, key }
}
