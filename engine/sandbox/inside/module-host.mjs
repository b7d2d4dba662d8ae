// Runs a `module` adapter agent inside the agent sandbox: a child process per attempt that speaks
// the JSON-lines agent protocol (core/agent-protocol.ts) on stdio, like any subprocess agent.
//
//   node module-host.mjs <module file> <export, or - for default/agent> <isolation>
//
// It reads the payload, imports the agent module, makes the agent (an object with invoke, or a
// factory of one), calls invoke(payload, tools, context) with tools that send tool_call lines and
// await their tool_result, and writes the answer as the final line. context.llm() is the attempt's
// LLM gateway (OPENAI_BASE_URL / OPENAI_API_KEY, taken out of the environment before the agent
// module loads); context.signal aborts on SIGTERM. It also serves the sandbox's forwards itself
// (FORGE_SANDBOX_FORWARDS), saving a forwarder process. Imports only Node's own modules.
import { createInterface } from 'node:readline'
import { pathToFileURL } from 'node:url'
import { parseForwardSpecs, startForwarders } from './forwarder.mjs'

const [file, exportName, isolation] = process.argv.slice(2)
const llmEndpoint = process.env.OPENAI_BASE_URL === undefined ? undefined : { baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY ?? '' }
const seed = Number(process.env.FORGE_AGENT_SEED ?? '0')
const forwards = process.env.FORGE_SANDBOX_FORWARDS
for (const name of ['OPENAI_BASE_URL', 'OPENAI_API_KEY', 'FORGE_AGENT_SEED', 'FORGE_SANDBOX_FORWARDS']) delete process.env[name]
if (forwards) await startForwarders(parseForwardSpecs(forwards.split(',')))

const write = (message) => process.stdout.write(`${JSON.stringify(message)}\n`)
const fail = (message) => {
  process.stderr.write(`module adapter: ${message}\n`)
  process.exit(2)
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })
const pending = new Map()
let payloadMessage
const gotPayload = new Promise((resolve) => (payloadMessage = resolve))
lines.on('line', (line) => {
  let message
  try {
    message = JSON.parse(line)
  } catch {
    return
  }
  if (message?.type === 'payload') payloadMessage(message)
  else if (message?.type === 'tool_result' && pending.has(message.id)) {
    const settle = pending.get(message.id)
    pending.delete(message.id)
    settle(message.ok ? { ok: true, result: message.result } : { ok: false, error: String(message.error) })
  }
})
lines.on('close', () => {
  for (const settle of pending.values()) settle({ ok: false, error: 'the harness closed the tool channel' })
  pending.clear()
})

const controller = new AbortController()
process.on('SIGTERM', () => controller.abort(new Error('the attempt was stopped')))

const describe = (value) => (value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object without invoke()' : typeof value)
const isAgent = (value) => typeof value === 'object' && value !== null && typeof value.invoke === 'function'
const isClass = (fn) => typeof fn === 'function' && /^class[\s{]/.test(Function.prototype.toString.call(fn))

const first = await gotPayload
const url = pathToFileURL(file).href
let namespace
try {
  namespace = await import(url)
} catch (error) {
  fail(`cannot import ${url}: ${error instanceof Error ? error.message : String(error)}`)
}
let exported
let where
if (exportName !== undefined && exportName !== '-') {
  if (!(exportName in namespace)) fail(`${url} has no export "${exportName}" (it exports: ${Object.keys(namespace).join(', ') || 'nothing'})`)
  exported = namespace[exportName]
  where = `export "${exportName}" of ${url}`
} else {
  const name = ['default', 'agent'].find((candidate) => namespace[candidate] !== undefined)
  if (name === undefined) fail(`${url} exports neither "default" nor "agent" (it exports: ${Object.keys(namespace).join(', ') || 'nothing'}); name one with config.export`)
  exported = namespace[name]
  where = `export "${name}" of ${url}`
}
let agent = exported
if (!isAgent(exported)) {
  if (typeof exported !== 'function') fail(`${where} is ${describe(exported)}, not an agent ({ invoke(payload, tools) }) or a factory of one`)
  agent = isClass(exported) ? new exported() : await exported()
  if (!isAgent(agent)) fail(`the factory ${where} returned ${describe(agent)}, not an object with an invoke(payload, tools) method`)
}
void isolation // one process per attempt: "module" and "factory" isolation are both fresh here

let nextId = 0
const tools = {
  specs: structuredClone(first.payload.tools),
  call(name, args) {
    const id = `m${++nextId}`
    return new Promise((resolve) => {
      pending.set(id, resolve)
      write({ type: 'tool_call', id, name, args: args ?? {} })
    })
  },
}
const context = {
  signal: controller.signal,
  seed,
  llm: async () => {
    if (llmEndpoint === undefined) throw new Error('no LLM gateway for this agent: the module adapter config says "llm": false')
    return { ...llmEndpoint }
  },
}
const returned = await agent.invoke(first.payload, tools, context)
const final = { type: 'final' }
if (typeof returned === 'object' && returned !== null && !Array.isArray(returned) && Object.hasOwn(returned, 'output')) {
  final.output = returned.output
  if (typeof returned.self_report === 'string') final.self_report = returned.self_report
  if (typeof returned.refused === 'boolean') final.refused = returned.refused
} else {
  final.output = returned
}
write(final)
process.exit(0)
