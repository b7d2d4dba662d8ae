// Starts HOGS processes that each allocate HOG_MB and hold it for HOLD_MS, then answers with how many held to the end.
import { spawn } from 'node:child_process'
import { payload, send } from './protocol.mjs'

await payload()
const [hogs, mb, hold] = [Number(process.env.HOGS ?? 3), Number(process.env.HOG_MB ?? 80), Number(process.env.HOLD_MS ?? 3000)]
const hog = `const keep = []; for (let mb = 0; mb < ${mb}; mb += 8) keep.push(Buffer.alloc(8 * 1024 * 1024, 1)); setTimeout(() => console.log('held'), ${hold})`
const held = await Promise.all(
  Array.from({ length: hogs }, () => new Promise((resolve) => {
    const child = spawn(process.execPath, ['-e', hog], { stdio: ['ignore', 'pipe', 'ignore'] })
    let out = ''
    child.stdout.on('data', (chunk) => (out += chunk))
    child.on('error', () => resolve(false))
    child.on('close', () => resolve(out.includes('held')))
  })),
)
send({ type: 'final', output: `${held.filter(Boolean).length} of ${hogs} held` })
process.exit(0)
