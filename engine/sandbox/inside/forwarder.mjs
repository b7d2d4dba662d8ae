// Runs inside the agent sandbox (engine/sandbox/layout.ts): serves each 127.0.0.1 port of the
// attempt's tool endpoint and LLM gateway by piping its connections to a Unix socket the worker
// bridges to the real one. Usage: node forwarder.mjs PORT=SOCKET... ; writes "ready" to fd 4
// once every port listens. Imports nothing but Node's own modules (it runs from /run/forge/lib).
import { closeSync, writeSync } from 'node:fs'
import { connect, createServer } from 'node:net'

/** Listens on 127.0.0.1:port for every spec and pipes each connection to its socket. */
export async function startForwarders(specs) {
  await Promise.all(
    specs.map(
      ({ port, socket }) =>
        new Promise((resolve, reject) => {
          const server = createServer((inbound) => {
            const outbound = connect(socket)
            inbound.on('error', () => outbound.destroy())
            outbound.on('error', () => inbound.destroy())
            inbound.pipe(outbound)
            outbound.pipe(inbound)
          })
          server.once('error', reject)
          server.listen(port, '127.0.0.1', () => resolve(server))
        }),
    ),
  )
}

/** PORT=SOCKET arguments as specs. */
export function parseForwardSpecs(args) {
  return args.map((arg) => {
    const at = arg.indexOf('=')
    const port = Number(arg.slice(0, at))
    if (at < 0 || !Number.isInteger(port) || port <= 0 || port > 65535) throw new Error(`forwarder: bad spec ${JSON.stringify(arg)} (want PORT=SOCKET)`)
    return { port, socket: arg.slice(at + 1) }
  })
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    await startForwarders(parseForwardSpecs(process.argv.slice(2)))
    writeSync(4, 'ready')
    closeSync(4)
  } catch (error) {
    process.stderr.write(`forge-sandbox: ${error instanceof Error ? error.message : String(error)}\n`)
    process.exit(1)
  }
}
