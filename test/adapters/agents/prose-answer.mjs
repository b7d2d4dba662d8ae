// Answers in prose on stdout, without the protocol's final message.
import { callTool, payload } from './protocol.mjs'

const { payload: p } = await payload()
const reply = await callTool('upper', { value: p.input.value })
console.log('Let me think about this.')
console.log('```json')
console.log(JSON.stringify({ answer: reply.result }))
console.log('```')
process.exit(0)
