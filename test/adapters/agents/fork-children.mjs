// Misbehaving agent: forks children and a grandchild that outlive it (one ignores SIGTERM), answers, exits.
import { spawn } from 'node:child_process'
import { payload, send } from './protocol.mjs'

await payload()
const sleeper = 'setInterval(() => {}, 1 << 30)'
const stubborn = "process.on('SIGTERM', () => {}); setInterval(() => {}, 1 << 30)"
// the middle child forks a grandchild and prints its pid
const parent = `const c = require('child_process').spawn(process.execPath, ['-e', ${JSON.stringify(sleeper)}], { stdio: 'ignore' }); console.log(c.pid); setInterval(() => {}, 1 << 30)`
const kids = [
  spawn(process.execPath, ['-e', sleeper], { stdio: 'ignore' }),
  spawn(process.execPath, ['-e', stubborn], { stdio: 'ignore' }),
  spawn(process.execPath, ['-e', parent], { stdio: ['ignore', 'pipe', 'ignore'] }),
]
const grandchild = await new Promise((resolve) => kids[2].stdout.once('data', (d) => resolve(Number(String(d).trim()))))
for (const kid of kids) kid.unref()
kids[2].stdout.destroy()
// give the stubborn one time to install its handler
await new Promise((resolve) => setTimeout(resolve, 150))
send({ type: 'final', output: 'done', self_report: JSON.stringify({ pgid: process.pid, pids: [...kids.map((k) => k.pid), grandchild] }) })
process.exit(0)
