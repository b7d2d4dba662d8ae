// Writes short lines to stdout as fast as the pipe takes them, for ever (until it is stopped).
import { payload } from './protocol.mjs'

await payload()
const chunk = 'x\n'.repeat(32_768)
const write = () => {
  while (process.stdout.write(chunk));
  process.stdout.once('drain', write)
}
write()
