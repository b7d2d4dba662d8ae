/**
 * Entry point of the stack's model server process (stack/model-server.ts starts it): one GGUF model
 * served OpenAI-compatibly on 127.0.0.1 for every worker's LLM gateway. Configured through
 * FORGE_MODEL_* variables set by the stack; logs one JSON line when it is ready. On a fleet, run it
 * on one host for every worker: FORGE_MODEL_PATH, FORGE_MODEL_NAME, FORGE_MODEL_PORT, FORGE_MODEL_HOST
 * (default 127.0.0.1), FORGE_MODEL_SERVER_KEY, FORGE_MODEL_PARALLEL / _CONTEXT / _THREADS; workers
 * then get FORGE_LOCAL_MODEL_URL and FORGE_LOCAL_MODEL_KEY.
 */
import { startLocalModelServer } from '../engine/llm/local/server.js'

const env = process.env
const fail = (message: string): never => {
  console.error(message)
  process.exit(2)
}
const whole = (name: string, min: number): number | undefined => {
  const raw = env[name]
  if (raw === undefined || raw === '') return undefined
  const value = Number(raw)
  return Number.isInteger(value) && value >= min ? value : fail(`${name} must be a whole number ≥ ${min}, got "${raw}"`)
}

const modelPath = env['FORGE_MODEL_PATH'] || fail('FORGE_MODEL_PATH is not set')
const parallel = whole('FORGE_MODEL_PARALLEL', 1)
const contextSize = whole('FORGE_MODEL_CONTEXT', 256)
const threads = whole('FORGE_MODEL_THREADS', 1)
const port = whole('FORGE_MODEL_PORT', 0)
const started = Date.now()

const server = await startLocalModelServer({
  modelPath,
  name: env['FORGE_MODEL_NAME'] || 'local',
  ...(parallel !== undefined ? { parallel } : {}),
  ...(contextSize !== undefined ? { contextSize } : {}),
  ...(threads !== undefined ? { threads } : {}),
  ...(port !== undefined ? { port } : {}),
  // a fleet's shared model server listens beyond loopback: set a key too (FORGE_MODEL_SERVER_KEY)
  ...(env['FORGE_MODEL_HOST'] ? { host: env['FORGE_MODEL_HOST'] } : {}),
  ...(env['FORGE_MODEL_SERVER_KEY'] ? { apiKey: env['FORGE_MODEL_SERVER_KEY'] } : {}),
}).catch((error: unknown) => fail(`the model server could not load ${modelPath}: ${error instanceof Error ? error.message : String(error)}`))

console.log(JSON.stringify({ msg: 'model server ready', model: server.name, path: modelPath, url: server.baseURL, parallel: server.parallel, load_ms: Date.now() - started }))

const stop = (): void => {
  void server.close().then(
    () => process.exit(0),
    () => process.exit(1),
  )
}
process.once('SIGTERM', stop)
process.once('SIGINT', stop)
