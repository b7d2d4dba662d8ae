import { benchConfig, warmUp, smokeWorkload } from './dist/bench/throughput-bench.js'
import { measureForgeRun } from './dist/bench/forge-run.js'
import { stackDown } from './dist/stack/local-stack.js'
const n = Number(process.argv[2] ?? 3)
const { config } = benchConfig('forge-qb-')
await warmUp(config, 1)
const rows = []
for (let i = 0; i < n; i++) {
  const m = await measureForgeRun(config, smokeWorkload(1000, 1, 'qb' + i))
  const cpu = Object.fromEntries([...m.cpu_s].map(([k, v]) => [k.split(' ')[0], +(v).toFixed(2)]))
  const tot = [...m.cpu_s.values()].reduce((a, b) => a + b, 0)
  console.log(`wall ${(m.report.wall_ms/1000).toFixed(2)} s ${m.report.attempts_per_second.toFixed(0)}/s ready ${(m.workers_ready_ms/1000).toFixed(2)} reported ${(m.until_reported_ms/1000).toFixed(2)} cpu total ${tot.toFixed(2)} ${JSON.stringify(cpu)} rows ${m.report.attempts}`)
}
await stackDown(config)
