/**
 * FORGE_BENCH_ONLY=e2e (issue 15): `forge run` end to end against Forge's own engine in one process,
 * on the same workload in the same bench run — the smoke suite's 5 tasks × (attempts / 5), the mock
 * agent, the tasks' graders, concurrency 100. The in-process loop runs first and last (their mean is
 * the reference; the two apart show drift on a shared machine), `forge run` in between on a warm stack:
 * once with its worker started for it, then WARM_RUNS times in a row on the warm worker (the cold run
 * left it, and it serves run after run) — the median is the figure: one run varies by ±10 % on a
 * shared machine, and the worker gets quicker over its first runs as V8 compiles its hot code.
 * Targets: forge run ≥ 500 attempts/s, and within 1.5× of the in-process loop.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { runSuite, type RunConfigInput } from '../app/run.js'
import { readSetting, resolveConfig, type ForgeConfig } from '../config/index.js'
import { stackDown, stackUp } from '../stack/local-stack.js'
import { stopWarmWorkers, waitForWarmWorkers } from '../stack/warm-workers.js'
import { describeForgeRun, measureForgeRun, type ForgeRunMeasurement } from './forge-run.js'
import { inProcessEngineLoop, type InProcessReport } from './in-process.js'
import { atLeast, cpuBound, describeTarget, fixed, mean, ratioTarget } from './measure.js'

export const SMOKE_TASKS = 5
export const BENCH_CONCURRENCY = 100

/** The bench's workload of `attemptsTotal` attempts (smoke × attemptsTotal / 5, mock, concurrency 100). */
export function smokeWorkload(attemptsTotal: number, workers: number, seed: string): RunConfigInput {
  return { suite: 'smoke', adapter: 'mock', attempts: Math.ceil(attemptsTotal / SMOKE_TASKS), workers, concurrency: BENCH_CONCURRENCY, seed, max_in_flight: BENCH_CONCURRENCY }
}

/** A config whose embedded stack lives in a new temporary FORGE_HOME (nothing external). */
export function benchConfig(prefix: string): { config: ForgeConfig; home: string } {
  const home = mkdtempSync(join(tmpdir(), prefix))
  return { home, config: resolveConfig({ ...process.env, FORGE_HOME: home, FORGE_TEMPORAL_ADDRESS: '', FORGE_NATS_URL: '', FORGE_CLICKHOUSE_URL: '' }) }
}

/** Brings the stack up and warms both paths (JIT, the workflow bundle, SQLite pages, the suite cache). */
export async function warmUp(config: ForgeConfig, workers: number): Promise<void> {
  await stackUp(config)
  await runSuite(config, { ...smokeWorkload(10, workers, 'warm'), attempts: 2 })
  await inProcessEngineLoop(config, smokeWorkload(100, 1, 'warm'))
}

export interface EngineVsRun {
  inProcess: [InProcessReport, InProcessReport]
  /** workers started for the run (no warm worker waiting) */
  coldRun: ForgeRunMeasurement
  /** on the warm worker(s) the cold run left (stack/warm-workers.ts): what a user's next run gets */
  /** the warm runs, in the order they ran */
  warmRuns: ForgeRunMeasurement[]
}

/** Lets the warm workers the last run left finish loading (their start-up is not the next measurement's). */
async function settleWarmWorkers(config: ForgeConfig, workers: number): Promise<void> {
  const count = Math.min(readSetting('warmWorkers'), workers)
  if (count > 0 && !(await waitForWarmWorkers(config.home, count, 60_000))) throw new Error(`no warm worker came up in ${config.home}/warm; see ${config.home}/logs/worker-0.log`)
}

/** in-process, forge run cold, forge run on warm workers, in-process: on a stack that is up and warm */
export async function measureEngineVsRun(config: ForgeConfig, attemptsTotal: number, workers: number): Promise<EngineVsRun> {
  await settleWarmWorkers(config, workers)
  const first = await inProcessEngineLoop(config, smokeWorkload(attemptsTotal, 1, 'bench'))
  await stopWarmWorkers(config.home)
  const coldRun = await measureForgeRun(config, smokeWorkload(attemptsTotal, workers, 'bench-cold'))
  const warmRuns: ForgeRunMeasurement[] = []
  for (let i = 0; i < WARM_RUNS; i++) {
    await settleWarmWorkers(config, workers)
    warmRuns.push(await measureForgeRun(config, smokeWorkload(attemptsTotal, workers, 'bench')))
  }
  await settleWarmWorkers(config, workers)
  const last = await inProcessEngineLoop(config, smokeWorkload(attemptsTotal, 1, 'bench'))
  return { inProcess: [first, last], coldRun, warmRuns }
}

/**
 * warm `forge run`s measured, one after another; the median one is the bench's figure. The first
 * claims the warm worker the cold run left; each later one the warm worker that served the run before
 * (workers/worker-process.ts), as a user's runs in a row get.
 */
export const WARM_RUNS = 5

/** The warm run of median throughput. */
export function medianRun(runs: readonly ForgeRunMeasurement[]): ForgeRunMeasurement {
  const sorted = [...runs].sort((a, b) => a.report.attempts_per_second - b.report.attempts_per_second)
  return sorted[Math.floor(sorted.length / 2)]!
}

export function describeEngineVsRun(m: EngineVsRun): string[] {
  const [first, last] = m.inProcess
  const engine = mean([first.attempts_per_second, last.attempts_per_second])
  const median = medianRun(m.warmRuns)
  const run = median.report.attempts_per_second
  const inProcessLine = (label: string, r: InProcessReport) =>
    `${label}: ${r.attempts} attempts, concurrency ${r.concurrency}, wall ${(r.wall_ms / 1000).toFixed(2)} s → ${fixed(r.attempts_per_second)} attempts/s, CPU ${((r.cpu_s * 1000) / r.attempts).toFixed(2)} ms/attempt (${r.published.messages} messages, ${(r.published.bytes / r.attempts / 1024).toFixed(1)} KiB per attempt; outcomes ${JSON.stringify(r.outcomes)})`
  return [
    inProcessLine('in-process engine loop (first)', first),
    ...describeForgeRun(m.coldRun, 'forge run (stack up, workers started for it)'),
    ...describeForgeRun(median, `forge run (stack up, on the warm worker the run before left or served; the median of ${m.warmRuns.length} in a row: ${m.warmRuns.map((r) => fixed(r.report.attempts_per_second)).join(', ')} attempts/s)`),
    inProcessLine('in-process engine loop (last)', last),
    `forge run ${fixed(run)} attempts/s; in-process ${fixed(engine)} attempts/s (mean of ${fixed(first.attempts_per_second)} and ${fixed(last.attempts_per_second)}); in-process ÷ forge run = ${fixed(engine / run)}×`,
    `  ${describeTarget(atLeast('forge run', run, 500, 'attempts/s'))}`,
    `  ${describeTarget(ratioTarget('forge run vs in-process', run, engine, 1.5, 'within'))}`,
    ...describeCpuBound(median, engine, availableParallelism()),
  ]
}

/**
 * Why the ratio is what it is: the CPU the median run's processes spent per attempt, the most that
 * allows on this machine's cores, and the ratio to the in-process loop at that ceiling. A faster
 * engine lowers the worker's share and the in-process loop's time alike, so the harness's own share
 * (everything but the worker) decides the ratio.
 */
export function describeCpuBound(m: ForgeRunMeasurement, inProcessPerSecond: number, cores: number): string[] {
  const attempts = Math.max(m.report.expected_attempts, 1)
  const perAttempt = [...m.cpu_s].map(([name, s]) => [name, (s * 1000) / attempts] as const).filter(([, ms]) => ms > 0)
  const total = perAttempt.reduce((sum, [, ms]) => sum + ms, 0)
  if (total === 0) return []
  const harness = perAttempt.filter(([name]) => !name.startsWith('worker')).reduce((sum, [, ms]) => sum + ms, 0)
  const { ceiling, best_ratio } = cpuBound(total, cores, inProcessPerSecond)
  return [
    `  CPU: the median run spent ${total.toFixed(2)} ms per attempt in all (${perAttempt.map(([name, ms]) => `${name.replace(' (this process)', '')} ${ms.toFixed(2)}`).join(', ')}; ${harness.toFixed(2)} of it outside the workers); ` +
      `on ${cores} core(s) that allows at most ${fixed(ceiling)} attempts/s (the run reached ${fixed((m.report.attempts_per_second / ceiling) * 100)} % of it), ${fixed(best_ratio)}× the in-process loop at best`,
  ]
}

/** The e2e part: a fresh stack, warm-up, in-process / forge run / in-process, targets; the stack goes down after. */
export async function engineVsForgeRun(attemptsTotal: number, workers: number): Promise<void> {
  const { config, home } = benchConfig('forge-bench-')
  try {
    await warmUp(config, workers)
    const measured = await measureEngineVsRun(config, attemptsTotal, workers)
    console.log(`end to end: smoke × ${Math.ceil(attemptsTotal / SMOKE_TASKS)}, mock agent, concurrency ${BENCH_CONCURRENCY}, ${workers} worker(s)`)
    for (const line of describeEngineVsRun(measured)) console.log(line)
  } finally {
    await stackDown(config)
    rmSync(home, { recursive: true, force: true })
  }
}
