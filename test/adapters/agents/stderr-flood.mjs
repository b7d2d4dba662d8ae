// Writes to stderr as fast as the pipe takes it, for ever (until it is stopped).
import { payload } from './protocol.mjs'

await payload()
const chunk = 'e'.repeat(65_536)
const write = () => {
  while (process.stderr.write(chunk));
  process.stderr.once('drain', write)
}
write()
