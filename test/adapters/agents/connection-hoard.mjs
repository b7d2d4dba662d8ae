// Opens many connections to its LLM gateway and holds them, then answers with how many are still
// open once at most LIMIT are (or after 15 s): HOARD (default 1,000) connections.
import { connect } from 'node:net'
import { payload, send } from './protocol.mjs'

await payload()
const { hostname, port } = new URL(process.env.OPENAI_BASE_URL)
const sockets = []
for (let i = 0; i < Number(process.env.HOARD ?? 1000); i++) {
  const socket = connect(Number(port), hostname)
  socket.on('error', () => undefined)
  sockets.push(socket)
}
await Promise.all(sockets.map((s) => new Promise((resolve) => { s.once('connect', resolve); s.once('close', resolve) })))
// the harness closes what it will not serve: wait until at most LIMIT are open, or 15 s
const stillOpen = () => sockets.filter((s) => !s.destroyed && s.readyState === 'open').length
const limit = Number(process.env.LIMIT ?? 64)
for (let waited = 0; stillOpen() > limit && waited < 15_000; waited += 100) await new Promise((resolve) => setTimeout(resolve, 100))
const open = stillOpen()
for (const s of sockets) s.destroy()
send({ type: 'final', output: `open ${open}` })
