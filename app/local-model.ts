/**
 * `forge run --model local` and `--judge-model local`: resolve the `local` model names of a run to
 * one GGUF file (recorded under its canonical name, `local:<name>`, so the configuration id and the
 * stored model say which model ran), and bring up the stack's model server for the workers.
 */
import type { JudgeSettingsInput } from '../core/contracts/index.js'
import { isLocalModel, LocalModelError, resolveLocalModel, type LocalModel } from '../engine/llm/local/models.js'
import type { ForgeConfig } from '../stack/config.js'
import { ConfigError } from '../stack/errors.js'
import { ensureModelServer, modelServerSettings, modelServerWorkerEnv } from '../stack/model-server.js'

export interface RunModels {
  adapterConfig: Record<string, unknown>
  judge: JudgeSettingsInput | undefined
  /** the model the stack's model server must serve; 'external' when FORGE_LOCAL_MODEL_URL names a server; undefined: no local model */
  local: LocalModel | 'external' | undefined
}

/** Rewrites `local` model names of the adapter config and the judge to their canonical names; starts nothing. */
export function resolveRunModels(adapterConfig: Record<string, unknown>, judge: JudgeSettingsInput | undefined, env: NodeJS.ProcessEnv = process.env): RunModels {
  // an explicit base_url sends the model elsewhere: nothing local about it
  const agentModel = adapterConfig['base_url'] === undefined && isLocalModel(adapterConfig['model']) ? adapterConfig['model'] : undefined
  const judgeModel = isLocalModel(judge?.model) ? judge.model : undefined
  if (agentModel === undefined && judgeModel === undefined) return { adapterConfig, judge, local: undefined }
  if (modelServerSettings(env).externalUrl) return { adapterConfig, judge, local: 'external' }
  const resolve = (spec: string, flag: string): LocalModel => {
    try {
      return resolveLocalModel(spec, env)
    } catch (error) {
      if (error instanceof LocalModelError) throw new ConfigError(`${flag}: ${error.message}`, { cause: error })
      throw error
    }
  }
  const agent = agentModel === undefined ? undefined : resolve(agentModel, '--model')
  const judged = judgeModel === undefined ? undefined : resolve(judgeModel, '--judge-model')
  if (agent && judged && agent.path !== judged.path) {
    throw new ConfigError(`--model ${agent.name} and --judge-model ${judged.name} are different local models; the stack's model server serves one model: use the same one for both`)
  }
  return {
    adapterConfig: agent ? { ...adapterConfig, model: agent.name } : adapterConfig,
    judge: judged && judge ? { ...judge, model: judged.name } : judge,
    local: agent ?? judged,
  }
}

export interface RunModelServer {
  /** what the workers need to reach it (empty without a local model) */
  env: Record<string, string>
  /** completions it generates at once (unknown for an external server) */
  parallel?: number
}

/** Brings up the model server a run needs. */
export async function startRunModelServer(config: ForgeConfig, local: RunModels['local'], log: (line: string) => void): Promise<RunModelServer> {
  if (local === undefined) return { env: {} }
  const settings = modelServerSettings()
  if (local === 'external') return { env: modelServerWorkerEnv({ url: settings.externalUrl!, ...(settings.externalKey ? { key: settings.externalKey } : {}) }) }
  const server = await ensureModelServer(config, local, log)
  return { env: modelServerWorkerEnv(server), ...(server.parallel !== undefined ? { parallel: server.parallel } : {}) }
}

/**
 * Attempts each worker runs at once against the stack's model server: at most twice what it
 * generates at once, over all workers. More would only wait in its queue, and that wait counts
 * against each attempt's max_duration_ms — the harness would be measuring its own queue.
 */
export function localModelConcurrency(requested: number, workers: number, parallel: number | undefined, agentModel: unknown): number {
  // a judge-only local model leaves the attempts alone: the judge queue has its own concurrency
  if (parallel === undefined || !isLocalModel(agentModel)) return requested
  return Math.min(requested, Math.max(1, Math.ceil((2 * parallel) / workers)))
}
