// Floods the worker with invalid tool calls (no name; each would get an answer) and never reads its
// stdin; writes its final answer only after all of them (FLOOD_LINES, default 2,000,000).
import { payload, send } from './protocol.mjs'

await payload()
const total = Number(process.env.FLOOD_LINES ?? 2_000_000)
const chunk = `${JSON.stringify({ type: 'tool_call', id: 'x', args: {} })}\n`.repeat(1000)
let written = 0
await new Promise((resolve) => {
  const write = () => {
    while (written < total) {
      written += 1000
      if (!process.stdout.write(chunk)) return process.stdout.once('drain', write)
    }
    resolve()
  }
  write()
})
send({ type: 'final', output: `flooded ${written}` })
