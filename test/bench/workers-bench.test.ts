import { describe, expect, it } from 'vitest'
import type { ForgeRunMeasurement } from '../../bench/forge-run.js'
import { describeFootprints, footprintOf, workersWorkload } from '../../bench/workers-bench.js'

function measured(peaks: [string, number][]): ForgeRunMeasurement {
  return {
    report: { wall_ms: 4_600, attempts: 50, expected_attempts: 50 } as ForgeRunMeasurement['report'],
    workers_ready_ms: 1_200,
    until_reported_ms: 5_000,
    peak_rss_kib: new Map(peaks),
    cpu_s: new Map(),
  }
}

describe('the workers bench part', () => {
  it('runs the issue\'s command: smoke, mock, 10 attempts per task, forge run\'s default concurrency', () => {
    expect(workersWorkload(50, 's')).toEqual({ suite: 'smoke', adapter: 'mock', attempts: 10, workers: 50, concurrency: 50, seed: 's' })
  })

  it('sums the peak RSS of the worker processes only, and counts them', () => {
    const f = footprintOf(50, measured([['temporal', 900_000], ['worker 0', 200_000], ['worker 1', 300_000], ['cli (this process)', 100_000]]))
    expect(f).toEqual({ workers: 50, processes: 2, wall_s: 4.6, ready_s: 1.2, stored: 50, expected: 50, rss_mean_kib: 250_000, rss_max_kib: 300_000, rss_total_kib: 500_000 })
    const table = describeFootprints([f])
    expect(table).toContain('50 of 50')
    expect(table.split('\n')[2]).toMatch(/^50 +2 +/)
  })

  it('reports no worker processes as zeros, not NaN', () => {
    const f = footprintOf(0, measured([['temporal', 1]]))
    expect([f.processes, f.rss_mean_kib, f.rss_max_kib, f.rss_total_kib]).toEqual([0, 0, 0, 0])
  })
})
