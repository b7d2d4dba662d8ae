// A tiny client of Forge's JSON-lines stdio protocol, shared by the test agents in this directory.
import { createInterface } from 'node:readline'

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })[Symbol.asyncIterator]()
export const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`)

export async function receive() {
  const { value, done } = await lines.next()
  if (done) return undefined
  return JSON.parse(value)
}

let nextId = 0
export async function callTool(name, args) {
  const id = `c${++nextId}`
  send({ type: 'tool_call', id, name, args })
  for (;;) {
    const message = await receive()
    if (message === undefined) return { ok: false, error: 'stdin closed' }
    if (message.type === 'tool_result' && message.id === id) return message
  }
}

export async function payload() {
  const first = await receive()
  if (first?.type !== 'payload') throw new Error(`expected the payload first, got ${JSON.stringify(first)}`)
  return first
}
