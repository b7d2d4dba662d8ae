// Sends a tool_call without a name, then one with a name, then answers.
import { payload, receive, send } from './protocol.mjs'

await payload()
send({ type: 'tool_call', id: 'bad', args: {} })
const bad = await receive()
send({ type: 'tool_call', id: 'good', name: 'upper', args: { value: 'ok' } })
const good = await receive()
send({ type: 'final', output: JSON.stringify([bad, good]) })
