// Answers with everything it can see: env, argv, cwd and its files, the stdin payload line, the tool list.
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
// in http mode, what the tool endpoint lists as well
const listed = process.env.FORGE_TOOL_URL
  ? await (await fetch(process.env.FORGE_TOOL_URL, { headers: { authorization: `Bearer ${process.env.FORGE_TOOL_TOKEN}` } })).json()
  : null
const dump = { env: process.env, argv: process.argv, execArgv: process.execArgv, cwd: process.cwd(), files: files(process.cwd()), stdin: first, listed }
send({ type: 'final', output: JSON.stringify(dump) })
