// Reads its payload, complains on stderr and exits with code 3.
import { payload } from './protocol.mjs'

await payload()
console.error('agent: something went badly wrong')
process.exit(3)
