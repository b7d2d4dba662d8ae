#!/usr/bin/env node
/**
 * An example agent service for the `http` adapter. It listens on 127.0.0.1 (PORT, default 8787):
 *
 *   POST /reset   forget everything of earlier attempts (here: the attempt counter)
 *   POST /invoke  {protocol, payload, tools: {url, token}} → {output, self_report}
 *
 * During an invoke it calls the attempt's tools through the harness's endpoint given in the body.
 *
 *   node examples/agents/agent-service.mjs &
 *   forge run --suite smoke --adapter http --adapter-config '{"base_url":"http://127.0.0.1:8787"}'
 */
import { createServer } from 'node:http'

let attemptsSinceReset = 0

async function solve({ payload, tools: endpoint }) {
  const headers = { authorization: `Bearer ${endpoint.token}`, 'content-type': 'application/json' }
  let previous
  for (const tool of payload.tools) {
    const args = {}
    for (const [name, schema] of Object.entries(tool.input_schema.properties ?? {})) {
      if (name in payload.input) args[name] = payload.input[name]
      else if (previous !== undefined) args[name] = schema.type === 'string' && typeof previous !== 'string' ? String(previous) : previous
    }
    const res = await fetch(`${endpoint.url}/${encodeURIComponent(tool.name)}`, { method: 'POST', headers, body: JSON.stringify(args) })
    const reply = await res.json()
    if (!reply.ok) return { output: null, self_report: `${tool.name} failed: ${reply.error}` }
    previous = reply.result
  }
  return { output: previous ?? null, self_report: `attempt ${attemptsSinceReset} since the last reset` }
}

export function startAgentService(port = 0) {
  const server = createServer((req, res) => {
    const chunks = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', async () => {
      const reply = (status, body) => {
        res.writeHead(status, { 'content-type': 'application/json' })
        res.end(JSON.stringify(body))
      }
      try {
        if (req.method === 'POST' && req.url === '/reset') {
          attemptsSinceReset = 0
          return reply(200, { reset: true })
        }
        if (req.method === 'POST' && req.url === '/invoke') {
          attemptsSinceReset += 1
          return reply(200, await solve(JSON.parse(Buffer.concat(chunks).toString('utf8'))))
        }
        reply(404, { error: 'not found' })
      } catch (error) {
        reply(500, { error: String(error) })
      }
    })
  })
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)))
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const server = await startAgentService(Number(process.env.PORT ?? 8787))
  console.log(`agent service on http://127.0.0.1:${server.address().port}`)
}
