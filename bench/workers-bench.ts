/**
 * FORGE_BENCH_ONLY=workers (issue 15): the design's own example, `forge run --suite smoke --adapter
 * mock --attempts 10 --workers 50`, on a warm stack — what `--workers 50` costs on one machine: the
 * worker processes it starts (at most max(4, CPUs) unless FORGE_LOCAL_WORKER_PROCESSES says otherwise;
 * the slots of all 50 are spread over them), their start-up, RSS per worker process and in total,
 * and the wall time, next to `--workers 1` with the same attempts.
 */
import { rmSync } from 'node:fs'
import { runSuite, type RunConfigInput } from '../app/run.js'
import { maxLocalWorkerProcesses, workerLayout } from '../app/worker-pool.js'
import { stackDown, stackUp } from '../stack/local-stack.js'
import { measureForgeRun, type ForgeRunMeasurement } from './forge-run.js'
import { fixed, formatTable, mib } from './measure.js'
import { benchConfig } from './throughput-bench.js'

/** forge run's default --concurrency */
const CLI_CONCURRENCY = 50

/** the command: 10 attempts of each smoke task, forge run's defaults otherwise */
export function workersWorkload(workers: number, seed: string): RunConfigInput {
  return { suite: 'smoke', adapter: 'mock', attempts: 10, workers, concurrency: CLI_CONCURRENCY, seed }
}

export interface WorkerFootprint {
  workers: number
  processes: number
  wall_s: number
  ready_s: number
  stored: number
  expected: number
  /** peak RSS per worker process (KiB): mean and max, and their sum */
  rss_mean_kib: number
  rss_max_kib: number
  rss_total_kib: number
}

/** The figures of one measured run. */
export function footprintOf(workers: number, m: ForgeRunMeasurement): WorkerFootprint {
  const peaks = [...m.peak_rss_kib].filter(([name]) => name.startsWith('worker ')).map(([, kib]) => kib)
  const total = peaks.reduce((a, b) => a + b, 0)
  return {
    workers,
    processes: peaks.length,
    wall_s: m.report.wall_ms / 1000,
    ready_s: m.workers_ready_ms / 1000,
    stored: m.report.attempts,
    expected: m.report.expected_attempts,
    rss_mean_kib: peaks.length > 0 ? total / peaks.length : 0,
    rss_max_kib: peaks.length > 0 ? Math.max(...peaks) : 0,
    rss_total_kib: total,
  }
}

export function describeFootprints(rows: readonly WorkerFootprint[]): string {
  return formatTable(
    ['--workers', 'processes', 'all ready (s)', 'wall (s)', 'stored', 'RSS per process (mean / max)', 'RSS of all workers'],
    rows.map((r) => [String(r.workers), String(r.processes), fixed(r.ready_s), fixed(r.wall_s), `${r.stored} of ${r.expected}`, `${mib(r.rss_mean_kib)} / ${mib(r.rss_max_kib)}`, mib(r.rss_total_kib)]),
  )
}

export async function workersFootprint(): Promise<void> {
  const { config, home } = benchConfig('forge-bench-workers-')
  const layout = workerLayout(50, CLI_CONCURRENCY, maxLocalWorkerProcesses())
  console.log(`--workers 50 on one machine: forge run --suite smoke --adapter mock --attempts 10 --workers 50 (stack up, warm); folds into ${layout.processes} processes × ${layout.concurrency} slots`)
  try {
    await stackUp(config)
    await runSuite(config, { ...workersWorkload(1, 'warm'), attempts: 1 })
    const rows: WorkerFootprint[] = []
    for (const workers of [1, 50]) rows.push(footprintOf(workers, await measureForgeRun(config, workersWorkload(workers, `workers-${workers}`))))
    console.log(describeFootprints(rows))
  } finally {
    await stackDown(config)
    rmSync(home, { recursive: true, force: true })
  }
}
