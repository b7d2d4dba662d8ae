/**
 * The agent sandbox's cost per attempt (issue 10): the same attempts of the smoke suite run one at a
 * time through the subprocess adapter (the JavaScript example agent, over stdio and over the HTTP tool
 * endpoint) and the module adapter, sandbox on and off; plus the bare set-up of one sandbox around
 * `/bin/true` against spawning it. Latency is the attempt's agent time (spawn to stop).
 */
import { spawn } from 'node:child_process'
import { moduleAdapter } from '../engine/adapters/module.js'
import { subprocessAdapter } from '../engine/adapters/subprocess.js'
import { runAttempt } from '../engine/attempt-runner.js'
import { SandboxSettings } from '../engine/sandbox/config.js'
import { openSandbox } from '../engine/sandbox/host.js'
import { loadSuite } from '../engine/suite-loader.js'
import type { AgentAdapter } from '../core/plugins.js'
import { mean, median } from './measure.js'

function run(argv: string[], env: Record<string, string>, cwd: string | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { env, ...(cwd !== undefined ? { cwd } : {}), stdio: ['ignore', 'ignore', 'ignore', 'pipe'] })
    child.once('error', reject)
    child.once('close', () => resolve())
  })
}

export async function sandboxOverhead(attempts: number): Promise<void> {
  const smoke = await loadSuite('smoke')
  const task = smoke.tasks.find((t) => t.id === 'reverse_shout')!
  const cases: Array<[string, AgentAdapter, Record<string, unknown>]> = [
    ['subprocess, stdio', subprocessAdapter, { command: ['node', 'examples/agents/echo-agent.mjs'] }],
    ['subprocess, http tools', subprocessAdapter, { command: ['node', 'examples/agents/http-tools-agent.mjs'], protocol: 'http' }],
    ['module', moduleAdapter, { path: 'examples/agents/module-agent.mjs' }],
  ]
  console.log(`sandbox overhead: ${attempts} attempts each, one at a time (smoke/${task.id}; agent time per attempt, ms)`)
  for (const [label, adapter, config] of cases) {
    const latency = async (sandbox: boolean): Promise<number[]> => {
      const out: number[] = []
      // one warm-up attempt each: the probe, the page cache
      for (let i = 0; i <= attempts; i += 1) {
        const { result } = await runAttempt({ suite: smoke, task, adapter, runId: 'bench', configId: 'c0', attempt: i, runSeed: 'b', adapterConfig: { ...config, ...(sandbox ? {} : { sandbox: false }) }, workerId: 'bench' })
        if (result.outcome !== 'pass') throw new Error(`${label} (sandbox ${sandbox ? 'on' : 'off'}) failed: ${result.error}`)
        if (i > 0) out.push(result.latency_ms)
      }
      return out
    }
    const off = await latency(false)
    const on = await latency(true)
    console.log(
      `  ${label.padEnd(24)} off: median ${median(off).toFixed(0).padStart(4)}, mean ${mean(off).toFixed(0).padStart(4)}` +
        `   on: median ${median(on).toFixed(0).padStart(4)}, mean ${mean(on).toFixed(0).padStart(4)}   overhead ≈ ${(median(on) - median(off)).toFixed(0)} ms`,
    )
  }
  const bare: number[] = []
  const sandboxed: number[] = []
  const settings = SandboxSettings.parse({})
  for (let i = 0; i <= attempts; i += 1) {
    let started = performance.now()
    await run(['/bin/true'], { PATH: '/usr/bin:/bin' }, undefined)
    if (i > 0) bare.push(performance.now() - started)
    started = performance.now()
    const sandbox = await openSandbox({ command: ['/bin/true'], env: { PATH: '/usr/bin:/bin' }, settings, protectedPaths: [], ports: [] })
    await run(sandbox.argv, sandbox.env, sandbox.spawnCwd)
    await sandbox.close()
    if (i > 0) sandboxed.push(performance.now() - started)
  }
  console.log(`  /bin/true                 spawned: median ${median(bare).toFixed(1)} ms   in a sandbox (set-up, run, clean-up): median ${median(sandboxed).toFixed(1)} ms`)
}
