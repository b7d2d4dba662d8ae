// Misbehaving agent: calls a working tool forever and never answers.
import { callTool, payload } from './protocol.mjs'

await payload()
for (let i = 0; ; i += 1) await callTool('upper', { value: `v${i}` })
