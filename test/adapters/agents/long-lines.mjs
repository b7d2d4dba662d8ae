// Writes lines of a megabyte to stdout as fast as the pipe takes them, for ever (until it is stopped):
// KIND=json lines that parse only to the last byte, deep a megabyte of `{`, anything else plain text.
import { payload } from './protocol.mjs'

await payload()
const kind = process.env.KIND
const size = 1_000_000
const line = kind === 'json' ? `{"type":"final","output":"${'x'.repeat(size)}"` : kind === 'deep' ? '{'.repeat(size) : 'y'.repeat(size)
const chunk = `${line}\n`
const write = () => {
  while (process.stdout.write(chunk));
  process.stdout.once('drain', write)
}
write()
