/**
 * Entry point of the stack's model server process (stack/model-server.ts starts it): one GGUF model
 * served OpenAI-compatibly on 127.0.0.1 for every worker's LLM gateway. Configured through
 * FORGE_MODEL_* variables set by the stack; logs one JSON line when it is ready. On a fleet, run it
 * on one host for every worker: FORGE_MODEL_PATH, FORGE_MODEL_NAME, FORGE_MODEL_PORT, FORGE_MODEL_HOST
 * (default 127.0.0.1), FORGE_MODEL_SERVER_KEY, FORGE_MODEL_PARALLEL / _CONTEXT / _THREADS; workers
 * then get FORGE_LOCAL_MODEL_URL and FORGE_LOCAL_MODEL_KEY.
 */
import { loadSettings } from '../config/settings.js'
import { ConfigError } from '../core/errors.js'
import { startLocalModelServer } from '../engine/llm/local/server.js'

const fail = (message: string): never => {
  console.error(message)
  process.exit(2)
}
const settings = (() => {
  try {
    return loadSettings()
  } catch (error) {
    return fail(error instanceof ConfigError ? error.message : String(error))
  }
})()
const modelPath = settings.modelPath ?? fail('FORGE_MODEL_PATH is not set')
const parallel = settings.modelParallel
const contextSize = settings.modelContext
const threads = settings.modelThreads
const port = settings.modelPort
const started = Date.now()

const server = await startLocalModelServer({
  modelPath,
  name: settings.modelName,
  parallel,
  ...(contextSize !== undefined ? { contextSize } : {}),
  ...(threads !== undefined ? { threads } : {}),
  ...(port !== undefined ? { port } : {}),
  // a fleet's shared model server listens beyond loopback: set a key too (FORGE_MODEL_SERVER_KEY)
  ...(settings.modelHost !== undefined ? { host: settings.modelHost } : {}),
  ...(settings.modelServerKey !== undefined ? { apiKey: settings.modelServerKey } : {}),
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
