#!/usr/bin/env node
/**
 * An example Forge agent that calls its tools over HTTP (`"protocol": "http"`): the harness puts
 * the attempt's tool endpoint in FORGE_TOOL_URL and its bearer token in FORGE_TOOL_TOKEN. The
 * payload still arrives as the first stdin line, and the answer is the last stdout line —
 * here plain text ("Final answer: …"), which the harness's fallback parser reads.
 *
 *   forge run --suite smoke --adapter subprocess \
 *     --adapter-config '{"command":["node","examples/agents/http-tools-agent.mjs"],"protocol":"http"}'
 */
import { createInterface } from 'node:readline'

const url = process.env.FORGE_TOOL_URL
const headers = { authorization: `Bearer ${process.env.FORGE_TOOL_TOKEN}`, 'content-type': 'application/json' }

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })
const first = JSON.parse(await new Promise((resolve) => lines.once('line', resolve)))
const { input } = first.payload

// the tool list from the endpoint (the same specs as in the payload)
const { tools } = await (await fetch(url, { headers })).json()

let previous
for (const tool of tools) {
  const args = {}
  for (const [name, schema] of Object.entries(tool.input_schema.properties ?? {})) {
    if (name in input) args[name] = input[name]
    else if (previous !== undefined) args[name] = schema.type === 'string' && typeof previous !== 'string' ? String(previous) : previous
  }
  const reply = await (await fetch(`${url}/${encodeURIComponent(tool.name)}`, { method: 'POST', headers, body: JSON.stringify(args) })).json()
  if (!reply.ok) {
    console.log(`The ${tool.name} tool failed: ${reply.error}`)
    process.exit(0)
  }
  previous = reply.result
}
console.log(`I called ${tools.length} tool(s).`)
console.log(`Final answer: ${previous}`)
process.exit(0)
