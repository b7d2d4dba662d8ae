// Misbehaving agent: takes its payload and never answers; with IGNORE_TERM=1 it also ignores SIGTERM.
import { payload } from './protocol.mjs'

if (process.env.IGNORE_TERM === '1') process.on('SIGTERM', () => undefined)
await payload()
setInterval(() => undefined, 1 << 30)
