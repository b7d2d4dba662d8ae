// Answers with everything it can see: env, argv, cwd and its files, the stdin payload line.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { receive, send } from './protocol.mjs'

const first = await receive()
function files(dir, depth = 0) {
  const out = {}
  for (const name of readdirSync(dir)) {
    const p = join(dir, name)
    const st = statSync(p)
    if (st.isDirectory() && depth < 3) out[name] = files(p, depth + 1)
    else if (st.isFile() && st.size < 100_000) out[name] = readFileSync(p, 'utf8')
  }
  return out
}
const dump = { env: process.env, argv: process.argv, execArgv: process.execArgv, cwd: process.cwd(), files: files(process.cwd()), stdin: first }
send({ type: 'final', output: JSON.stringify(dump) })
