/**
 * The cost of the fault wrapper in the tool proxy, in process: the same tool calls with no profile
 * (the fault-free path: one optional check), with a profile whose rate is 0 (every call gets a
 * seeded decision that never fires) and with 20 % of calls failing at once (500).
 */
import { FaultProfile, Task } from '../core/contracts/index.js'
import { attemptFaults } from '../engine/faults.js'
import { createToolBox } from '../engine/tool-proxy.js'
import { oneTaskSuite } from './one-task-suite.js'

const task = Task.parse({
  id: 'bench',
  instruction: 'x',
  input: {},
  tools: ['echo'],
  budget: { max_tool_calls: 10_000_000, max_retries_per_tool: 10_000_000, max_duration_ms: 600_000 },
  outcome_graders: [{ type: 'exact', expected: 'x' }],
})
const suite = oneTaskSuite(task, { name: 'echo', description: '', input_schema: { type: 'object', properties: { value: { type: 'string' } } }, run: (args) => args['value'] })

async function nsPerCall(profile: FaultProfile | undefined, calls: number): Promise<number> {
  const faults = profile === undefined ? undefined : attemptFaults(profile, { runSeed: 'bench', configId: 'c', taskId: 'bench', attempt: 0 })
  const box = createToolBox({ task, suite, attemptUid: 'r/c/bench/0', budget: task.budget, startedAt: Date.now(), ...(faults ? { faults } : {}) })
  const started = process.hrtime.bigint()
  for (let i = 0; i < calls; i += 1) await box.call('echo', { value: 'v' })
  return Number(process.hrtime.bigint() - started) / calls
}

export async function faultWrapperBench(calls = 50_000, rounds = 7): Promise<void> {
  const cases: [string, FaultProfile | undefined][] = [
    ['no fault profile (the fault-free path)', undefined],
    ['profile at rate ~0 (a decision per call, none fires)', FaultProfile.parse({ rules: [{ rate: 0.000001, kinds: ['500'] }] })],
    ['profile at rate 0.2, kind 500', FaultProfile.parse({ rules: [{ rate: 0.2, kinds: ['500'] }] })],
  ]
  // warm-up: JIT
  for (const [, profile] of cases) await nsPerCall(profile, 20_000)
  // interleaved rounds, best of each: garbage collection and heap growth hit every case alike
  const best = cases.map(() => Infinity)
  for (let round = 0; round < rounds; round += 1) {
    for (const [i, [, profile]] of cases.entries()) best[i] = Math.min(best[i]!, await nsPerCall(profile, calls))
  }
  console.log(`fault wrapper: ${calls.toLocaleString('en-US')} tool calls through the tool proxy per measurement, best of ${rounds} interleaved rounds`)
  const baseline = best[0]!
  for (const [i, [label, profile]] of cases.entries()) {
    const ns = best[i]!
    console.log(`  ${label.padEnd(52)} ${(ns / 1000).toFixed(2).padStart(7)} µs/call${profile === undefined ? '' : ` (${ns >= baseline ? '+' : ''}${((ns - baseline) / 1000).toFixed(2)} µs)`}`)
  }
}
