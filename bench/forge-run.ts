/**
 * One measured `forge run` on a local stack that is already up (runSuite, the use case the CLI calls):
 * wall time and attempts/s as the run reports them, worker start-up, and per process (temporal,
 * nats-server, ingester, this process, each worker) peak RSS and the CPU seconds used during the run.
 */
import { runSuite, type RunConfigInput, type RunReport } from '../app/run.js'
import type { ForgeConfig } from '../config/index.js'
import { readStackState } from '../stack/local-stack.js'
import { warmWorkers } from '../stack/warm-workers.js'
import { fetchClockSplit, describeClockSplit, type ClockSplit } from './clock-split.js'
import { fixed, mib } from './measure.js'
import { ProcessSampler, threadCpuSeconds } from './proc.js'

export interface ForgeRunMeasurement {
  report: RunReport
  /** from the start of the run's wall clock until every worker said it is ready */
  workers_ready_ms: number
  /** from the start of the run's wall clock until the report was in hand (every row stored, stats read) */
  until_reported_ms: number
  /** peak RSS in KiB by process */
  peak_rss_kib: Map<string, number>
  /** CPU seconds by process during the run */
  cpu_s: Map<string, number>
  /** of the ingester's, what the embedded store's background merges used (absent with a ClickHouse server) */
  merge_cpu_s?: number
  /** where the run's clock went, from its workflow histories (bench/clock-split.ts), or why that is not known */
  clock?: ClockSplit | string
}

/** The stack's processes (temporal, nats-server, ingester) and, unless told not to, this one, watched by a new sampler. */
export function stackSampler(config: ForgeConfig, { withThisProcess = true } = {}): ProcessSampler {
  const state = readStackState(config.home)
  const sampler = new ProcessSampler()
  sampler.watch('temporal', state.temporal?.pid)
  sampler.watch('nats-server', state.nats?.pid)
  sampler.watch('ingester', state.ingester?.pid)
  if (withThisProcess) sampler.watch('cli (this process)', process.pid)
  return sampler
}

/** Runs `input` with `forge run`'s use case on the (running) local stack and measures it. */
export async function measureForgeRun(config: ForgeConfig, input: RunConfigInput): Promise<ForgeRunMeasurement> {
  const sampler = stackSampler(config)
  // a warm worker was there before the run (its loading, or the runs it served, are not this run's):
  // watched from the mark; a worker forked for the run counts from its start
  for (const warm of warmWorkers(config.home)) sampler.watch(`worker ${warm.slot}`, warm.pid)
  const ingester = readStackState(config.home).ingester?.pid
  const mergesBefore = ingester === undefined || config.clickhouseUrl !== undefined ? undefined : threadCpuSeconds(ingester, 'MergeMutate')
  sampler.markCpu()
  sampler.start(100)
  const started = performance.now()
  let workersReadyMs = 0
  let report: RunReport
  try {
    report = await runSuite(config, input, (event) => {
      if (event.kind !== 'workers') return
      workersReadyMs = performance.now() - started
      event.pids.forEach((pid, i) => sampler.watch(`worker ${i}`, pid))
    })
  } finally {
    sampler.stop()
  }
  const peaks = new Map([...sampler.rssSeries()].map(([name, series]) => [name, series.peak]))
  const merges = mergesBefore === undefined ? {} : { merge_cpu_s: threadCpuSeconds(ingester!, 'MergeMutate') - mergesBefore }
  const untilReportedMs = performance.now() - started
  // read after the measurement: its Temporal round trips are not the run's
  const clock = await fetchClockSplit(config, report.run_id).then(
    (split) => split ?? 'the workflow histories hold no completed run with attempt activities',
    (error: unknown) => `the workflow histories could not be read: ${(error as Error).message}`,
  )
  return { report, workers_ready_ms: workersReadyMs, until_reported_ms: untilReportedMs, peak_rss_kib: peaks, cpu_s: sampler.cpuUsed(), ...merges, clock }
}

/** The measurement as the bench prints it. */
export function describeForgeRun(m: ForgeRunMeasurement, label: string): string[] {
  const { report } = m
  const perAttempt = (cpu: number): string => ((cpu * 1000) / Math.max(report.expected_attempts, 1)).toFixed(2)
  const lines = [
    `${label}: ${report.expected_attempts} attempts, wall ${(report.wall_ms / 1000).toFixed(2)} s → ${fixed(report.attempts_per_second)} attempts/s`,
    `  of which worker start-up ${(m.workers_ready_ms / 1000).toFixed(2)} s; stored rows ${report.attempts} of ${report.expected_attempts}; not executed ${report.not_executed}; status ${report.status}`,
    ...(m.clock === undefined ? [] : [`  ${typeof m.clock === 'string' ? `clock split unknown: ${m.clock}` : describeClockSplit(m.clock)}`]),
    '  peak RSS and CPU seconds (user + system) by process during the run:',
  ]
  for (const [name, kib] of m.peak_rss_kib) {
    const cpu = m.cpu_s.get(name) ?? 0
    lines.push(`    ${name.padEnd(20)} ${mib(kib).padStart(9)}  ${cpu.toFixed(2).padStart(6)} s (${perAttempt(cpu)} ms/attempt)`)
    if (name === 'ingester' && m.merge_cpu_s !== undefined) lines.push(`      of it chDB's merges ${''.padStart(9)}  ${m.merge_cpu_s.toFixed(2).padStart(6)} s (${perAttempt(m.merge_cpu_s)} ms/attempt)`)
  }
  return lines
}
