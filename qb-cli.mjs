// usage: node qb-cli.mjs ATTEMPTS ROUNDS dirA dirB — interleaved forge run A/B (process wall + run clock), a home per side
import { spawnSync } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
const [attempts, rounds, ...dirs] = process.argv.slice(2)
const homes = dirs.map((d, i) => mkdtempSync(join(tmpdir(), `qb-cli-home-${i}-`)))
const env = (i) => ({ ...process.env, FORGE_HOME: homes[i], FORGE_TEMPORAL_ADDRESS: '', FORGE_NATS_URL: '', FORGE_CLICKHOUSE_URL: '' })
const args = ['bin/run.js', 'run', '--suite', 'smoke', '--adapter', 'mock', '--adapter-config', '{"skill":1}', '--attempts', attempts, '--concurrency', '100', '--max-in-flight', '100', '--json']
for (const [i, d] of dirs.entries()) { const r = spawnSync(process.execPath, [...args.slice(0, 8), '--attempts', '2', '--json'], { cwd: d, env: env(i), encoding: 'utf8' }); if (r.status !== 0) { console.error(r.stderr); process.exit(1) } }
const res = dirs.map(() => ({ wall: [], clock: [] }))
const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
for (let r = 0; r < Number(rounds); r++) {
  for (const [i, d] of dirs.entries()) {
    sleep(4000)
    const t = performance.now()
    const out = spawnSync(process.execPath, args, { cwd: d, env: env(i), encoding: 'utf8' })
    const wall = performance.now() - t
    if (out.status !== 0) { console.error(d, out.status, out.stderr.slice(-2000)); continue }
    const rep = JSON.parse(out.stdout)
    res[i].wall.push(wall); res[i].clock.push(rep.wall_ms)
    console.log(`round ${r} ${d}: process ${(wall / 1000).toFixed(2)} s, run clock ${(rep.wall_ms / 1000).toFixed(2)} s, stored ${rep.attempts}`)
  }
}
const mean = (a) => a.reduce((x, y) => x + y, 0) / a.length
for (const [i, d] of dirs.entries()) console.log(`${d}: process mean ${(mean(res[i].wall) / 1000).toFixed(2)} s (${(Number(attempts) * 5 / (mean(res[i].wall) / 1000)).toFixed(0)}/s), run clock mean ${(mean(res[i].clock) / 1000).toFixed(2)} s (${(Number(attempts) * 5 / (mean(res[i].clock) / 1000)).toFixed(0)}/s)`)
for (const [i, d] of dirs.entries()) spawnSync(process.execPath, ['bin/run.js', 'stack', 'down'], { cwd: d, env: env(i) })
