// Misbehaving agent: retries a failing tool forever, ignoring every error and refusal.
import { callTool, payload } from './protocol.mjs'

await payload()
for (;;) await callTool('flaky', { value: 'again' })
