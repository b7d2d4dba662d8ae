/**
 * FORGE_BENCH_ONLY=e2e (issue 15): `forge run` end to end against Forge's own engine in one process,
 * on the same workload in the same bench run — the smoke suite's 5 tasks × (attempts / 5), the mock
 * agent, the tasks' graders, concurrency 100. `forge run` runs on a warm stack once with its worker
 * started for it, then WARM_RUNS times on the warm worker (the cold run left it, and it serves run after
 * run), each warm run paired with an in-process loop next to it (in turn before and after it), and each
 * measurement starts once the stack is idle (untilStackIdle: the merges and inserts a run leaves
 * behind are not the next measurement's). The ratio is the median of the pairs' ratios: a shared
 * machine's speed drifts by ±30 % over a bench, and a ratio of two figures measured a minute apart
 * (the loop first and last, as the bench did until 4 December) swung from 1.27× to 2.43× for the same code.
 * Targets: forge run ≥ 500 attempts/s (the median warm run), and within 1.5× of the in-process loop.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { runSuite, type RunConfigInput } from '../app/run.js'
import { readSetting, resolveConfig, type ForgeConfig } from '../config/index.js'
import { stackDown, stackUp } from '../stack/local-stack.js'
import { warmCliPid } from '../stack/warm-cli.js'
import { stopWarmWorkers, waitForWarmWorkers, warmWorkers } from '../stack/warm-workers.js'
import { describeForgeRun, measureForgeRun, stackSampler, type ForgeRunMeasurement } from './forge-run.js'
import { inProcessEngineLoop, type InProcessReport } from './in-process.js'
import { atLeast, cpuBound, describeTarget, fixed, median, ratioTarget } from './measure.js'

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
  /** workers started for the run (no warm worker waiting) */
  coldRun: ForgeRunMeasurement
  /** the warm runs in the order they ran, each with the in-process loop measured next to it */
  pairs: EngineRunPair[]
}

/** A warm `forge run` and the in-process loop measured right before or after it. */
export interface EngineRunPair {
  run: ForgeRunMeasurement
  inProcess: InProcessReport
  /** the loop ran first */
  inProcessFirst: boolean
}

/** Lets the warm workers the last run left finish loading (their start-up is not the next measurement's). */
async function settleWarmWorkers(config: ForgeConfig, workers: number): Promise<void> {
  const count = Math.min(readSetting('warmWorkers'), workers)
  if (count > 0 && !(await waitForWarmWorkers(config.home, count, 60_000))) throw new Error(`no warm worker came up in ${config.home}/warm; see ${config.home}/logs/worker-0.log`)
}

/**
 * Waits until the stack's processes, warm workers and the warm CLI together use under `share` of one
 * core over a `windowMs` window (the ingester's merges after a run, a warm worker or the next warm CLI
 * loading), for at most `timeoutMs`; false when they never went quiet (the measurement then starts
 * anyway, and the bench says so). Whatever is measured next — Forge or a peer — gets the machine alone.
 */
export async function untilStackIdle(config: ForgeConfig, share = 0.1, windowMs = 500, timeoutMs = 15_000): Promise<boolean> {
  const sampler = stackSampler(config, { withThisProcess: false })
  for (const warm of warmWorkers(config.home)) sampler.watch(`worker ${warm.slot}`, warm.pid)
  sampler.watch('warm CLI', warmCliPid(config.home))
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    sampler.markCpu()
    await new Promise((resolve) => setTimeout(resolve, windowMs))
    sampler.sample()
    const used = [...sampler.cpuUsed().values()].reduce((sum, s) => sum + s, 0)
    if (used < (share * windowMs) / 1000) return true
  }
  return false
}

/** forge run cold, then WARM_RUNS warm runs each paired with an in-process loop: on a stack that is up and warm */
export async function measureEngineVsRun(config: ForgeConfig, attemptsTotal: number, workers: number, onBusy: (what: string) => void = () => undefined): Promise<EngineVsRun> {
  const idle = async (what: string) => {
    if (!(await untilStackIdle(config))) onBusy(what)
  }
  await stopWarmWorkers(config.home)
  await idle('the cold run')
  const coldRun = await measureForgeRun(config, smokeWorkload(attemptsTotal, workers, 'bench-cold'))
  const pairs: EngineRunPair[] = []
  const inProcess = async () => {
    await settleWarmWorkers(config, workers)
    await idle('an in-process loop')
    return inProcessEngineLoop(config, smokeWorkload(attemptsTotal, 1, 'bench'))
  }
  const warmRun = async () => {
    await settleWarmWorkers(config, workers)
    await idle('a warm run')
    return measureForgeRun(config, smokeWorkload(attemptsTotal, workers, 'bench'))
  }
  for (let i = 0; i < WARM_RUNS; i++) {
    const inProcessFirst = i % 2 === 0
    if (inProcessFirst) {
      const loop = await inProcess()
      pairs.push({ inProcess: loop, run: await warmRun(), inProcessFirst })
    } else {
      const run = await warmRun()
      pairs.push({ run, inProcess: await inProcess(), inProcessFirst })
    }
  }
  return { coldRun, pairs }
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

/** in-process ÷ forge run, attempts/s, of one pair */
export const pairRatio = (pair: EngineRunPair): number => pair.inProcess.attempts_per_second / pair.run.report.attempts_per_second

export function describeEngineVsRun(m: EngineVsRun): string[] {
  const runs = m.pairs.map((p) => p.run)
  const medianWarm = medianRun(runs)
  const medianPair = m.pairs[runs.indexOf(medianWarm)]!
  const run = medianWarm.report.attempts_per_second
  const ratio = median(m.pairs.map(pairRatio))
  const engine = median(m.pairs.map((p) => p.inProcess.attempts_per_second))
  const inProcessLine = (label: string, r: InProcessReport) =>
    `${label}: ${r.attempts} attempts, concurrency ${r.concurrency}, wall ${(r.wall_ms / 1000).toFixed(2)} s → ${fixed(r.attempts_per_second)} attempts/s, CPU ${((r.cpu_s * 1000) / r.attempts).toFixed(2)} ms/attempt (${r.published.messages} messages, ${(r.published.bytes / r.attempts / 1024).toFixed(1)} KiB per attempt; outcomes ${JSON.stringify(r.outcomes)})`
  const pairLine = (p: EngineRunPair, i: number) =>
    `  pair ${i + 1} (${p.inProcessFirst ? 'loop, then run' : 'run, then loop'}): in-process ${fixed(p.inProcess.attempts_per_second)}, forge run ${fixed(p.run.report.attempts_per_second)} attempts/s → ${fixed(pairRatio(p))}×`
  return [
    ...describeForgeRun(m.coldRun, 'forge run (stack up, workers started for it)'),
    ...describeForgeRun(medianWarm, `forge run (stack up, on the warm worker the run before left or served; the median of ${runs.length} in a row: ${runs.map((r) => fixed(r.report.attempts_per_second)).join(', ')} attempts/s)`),
    inProcessLine('in-process engine loop (the median run\'s pair)', medianPair.inProcess),
    'each warm run and the in-process loop measured next to it, both started on an idle stack:',
    ...m.pairs.map(pairLine),
    `forge run ${fixed(run)} attempts/s (median); in-process ÷ forge run = ${fixed(ratio)}× (the median of the pairs; in-process median ${fixed(engine)} attempts/s)`,
    `  ${describeTarget(atLeast('forge run', run, 500, 'attempts/s'))}`,
    `  ${describeTarget(ratioTarget('forge run vs in-process', 1, ratio, 1.5, 'within'))}`,
    ...describeCpuBound(medianWarm, medianPair.inProcess.attempts_per_second, availableParallelism()),
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
    const measured = await measureEngineVsRun(config, attemptsTotal, workers, (what) => console.log(`  (the stack did not go idle before ${what} within 15 s: measured anyway)`))
    console.log(`end to end: smoke × ${Math.ceil(attemptsTotal / SMOKE_TASKS)}, mock agent, concurrency ${BENCH_CONCURRENCY}, ${workers} worker(s)`)
    for (const line of describeEngineVsRun(measured)) console.log(line)
  } finally {
    await stackDown(config)
    rmSync(home, { recursive: true, force: true })
  }
}
