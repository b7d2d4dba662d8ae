#!/usr/bin/env node
/**
 * An example Forge agent speaking the JSON-lines protocol on stdio (see README, "Writing an agent
 * in any language"). It has no model: it calls every allowlisted tool in order, filling each
 * argument from the input field of the same name, else from the previous tool's result, and
 * answers with the last result — enough to solve the smoke suite.
 *
 *   forge run --suite smoke --adapter subprocess \
 *     --adapter-config '{"command":["node","examples/agents/echo-agent.mjs"]}'
 */
import { createInterface } from 'node:readline'

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })[Symbol.asyncIterator]()
const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`)

/** The next protocol message from the harness. */
async function receive() {
  const { value, done } = await lines.next()
  if (done) throw new Error('the harness closed stdin')
  return JSON.parse(value)
}

let nextId = 0
/** Calls a tool through the harness and waits for its result. */
async function callTool(name, args) {
  const id = String(++nextId)
  send({ type: 'tool_call', id, name, args })
  for (;;) {
    const message = await receive()
    if (message.type === 'tool_result' && message.id === id) return message
  }
}

const first = await receive()
if (first.type !== 'payload') throw new Error(`expected the payload first, got ${first.type}`)
const { input, tools } = first.payload

let previous
for (const tool of tools) {
  const args = {}
  for (const [name, schema] of Object.entries(tool.input_schema.properties ?? {})) {
    if (name in input) args[name] = input[name]
    else if (previous !== undefined) args[name] = schema.type === 'string' && typeof previous !== 'string' ? String(previous) : previous
  }
  const reply = await callTool(tool.name, args)
  if (!reply.ok) {
    send({ type: 'final', output: null, self_report: `${tool.name} failed: ${reply.error}` })
    process.exit(0)
  }
  previous = reply.result
}
send({ type: 'final', output: previous ?? null, self_report: `called ${tools.map((t) => t.name).join(', ') || 'no tools'}` })
process.exit(0)
