// Answers echo_greeting with half a UTF-16 surrogate pair in its tool call's arguments (the echo tool
// returns it), its output and its self-report: JSON "\ud800" and "\udc00" escapes on the wire.
import { callTool, payload, send } from './protocol.mjs'

await payload()
const reply = await callTool('echo', { message: 'half \ud800 pair' })
send({ type: 'final', output: reply.ok ? reply.result : 'no reply', self_report: 'low \udc00 half' })
