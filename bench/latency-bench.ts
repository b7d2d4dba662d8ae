/**
 * FORGE_BENCH_ONLY=latency (issue 15): a latency-bound agent should scale with attempt slots
 * (workers × concurrency) until the harness, not the agent, is the limit. The mock agent thinks
 * 200 ms per attempt (its `delay_ms`: one think after its tool calls — the mock has no per-step
 * delay), so N slots allow at most N × 5 attempts/s. Each point is one `forge run` (runSuite) of the
 * smoke suite with ~20 rounds of attempts for its slots on a warm stack; the curve doubles the slots
 * (1, 2, 4, …) until a point falls below half its ideal rate or doubling gains under 10 %
 * (`harnessLimited`), at most 512 slots. FORGE_BENCH_WORKERS sets the worker processes (slots are
 * spread over them as --concurrency).
 */
import { rmSync } from 'node:fs'
import { runSuite } from '../app/run.js'
import { stackDown, stackUp } from '../stack/local-stack.js'
import { doublings, fixed, formatTable, harnessLimited, idealRate, perSecond, steadyRate, type CurvePoint } from './measure.js'
import { inProcessEngineLoop } from './in-process.js'
import { followFinishes } from './progress.js'
import { benchConfig, SMOKE_TASKS } from './throughput-bench.js'

/** the mock's think time per attempt */
export const THINK_MS = 200
/** rounds of attempts per slot at each point: enough for a steady middle between start-up and the tail */
const ROUNDS = 20
const MAX_SLOTS = 512

/** attempts per task for a point with `slots` slots: ROUNDS rounds of every slot, at least one attempt of each task */
export function latencyAttemptsPerTask(slots: number): number {
  return Math.max(1, Math.ceil((slots * ROUNDS) / SMOKE_TASKS))
}

export async function latencyCurve(workers: number): Promise<void> {
  const { config, home } = benchConfig('forge-bench-latency-')
  const started = performance.now()
  console.log(`latency-bound scaling: mock agent thinking ${THINK_MS} ms per attempt, smoke suite, ${workers} worker process(es); ideal = slots × ${1000 / THINK_MS} attempts/s`)
  try {
    await stackUp(config)
    await runSuite(config, { suite: 'smoke', adapter: 'mock', attempts: 2, workers, concurrency: 10, seed: 'warm', adapter_config: { delay_ms: THINK_MS } })
    const points: CurvePoint[] = []
    const rows: (string | number)[][] = []
    for (const slots of doublings(MAX_SLOTS)) {
      if (slots < workers) continue
      const concurrency = Math.ceil(slots / workers)
      const finishes = followFinishes()
      const report = await runSuite(
        config,
        {
          suite: 'smoke',
          adapter: 'mock',
          adapter_config: { delay_ms: THINK_MS },
          attempts: latencyAttemptsPerTask(slots),
          workers,
          concurrency,
          max_in_flight: Math.min(500, workers * concurrency),
          seed: `latency-${slots}`,
        },
        () => undefined,
        undefined,
        finishes.observe,
      )
      const steady = steadyRate(finishes.times) ?? perSecond(report.expected_attempts, report.wall_ms)
      const ideal = idealRate(workers * concurrency, THINK_MS)
      // the same attempts and slots in one process, no Temporal/NATS/ClickHouse: what the engine alone allows
      const engine = await inProcessEngineLoop(config, {
        suite: 'smoke',
        adapter: 'mock',
        adapter_config: { delay_ms: THINK_MS },
        attempts: latencyAttemptsPerTask(slots),
        workers: 1,
        concurrency: workers * concurrency,
        seed: `latency-${slots}`,
      })
      points.push({ slots: workers * concurrency, attemptsPerSecond: steady })
      rows.push([
        String(workers * concurrency),
        `${workers} × ${concurrency}`,
        String(report.expected_attempts),
        report.wall_ms / 1000,
        report.attempts_per_second,
        steady,
        engine.attempts_per_second,
        ideal,
        `${((100 * steady) / ideal).toFixed(0)} %`,
      ])
      console.log(
        `  ${workers * concurrency} slots: ${report.expected_attempts} attempts in ${(report.wall_ms / 1000).toFixed(1)} s; steady ${fixed(steady)} attempts/s, in-process ${fixed(engine.attempts_per_second)}, ideal ${fixed(ideal)}`,
      )
      if (harnessLimited(points, THINK_MS)) break
    }
    console.log(formatTable(['slots', 'workers × conc.', 'attempts', 'wall s', 'forge run (wall)', 'forge run (steady)', 'in-process', 'ideal', 'steady of ideal'], rows))
    console.log(
      `  attempts/s. steady: between 10 % and 90 % of finishes (live progress); wall: the run's own figure, worker start-up and the wait for storage included; in-process: the same attempts through the worker's activity in this process, no Temporal/NATS/ClickHouse. Total ${((performance.now() - started) / 1000).toFixed(0)} s.`,
    )
  } finally {
    await stackDown(config)
    rmSync(home, { recursive: true, force: true })
  }
}
