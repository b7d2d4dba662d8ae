import { availableParallelism } from 'node:os'
import { describe, expect, it } from 'vitest'
import { maxLocalWorkerProcesses, workerLayout, workerLayoutNote } from '../../app/worker-pool.js'

describe('workerLayout: --workers on one machine', () => {
  it('starts one process per worker up to the cap, each with the asked concurrency', () => {
    expect(workerLayout(1, 50, 4)).toEqual({ processes: 1, concurrency: 50 })
    expect(workerLayout(3, 50, 4)).toEqual({ processes: 3, concurrency: 50 })
    expect(workerLayout(4, 7, 4)).toEqual({ processes: 4, concurrency: 7 })
  })

  it('folds more workers into the cap, never fewer attempt slots than asked for', () => {
    expect(workerLayout(50, 50, 4)).toEqual({ processes: 4, concurrency: 625 })
    const { processes, concurrency } = workerLayout(50, 3, 4)
    expect([processes, concurrency]).toEqual([4, 38])
    expect(processes * concurrency).toBeGreaterThanOrEqual(50 * 3)
  })

  it('takes FORGE_LOCAL_WORKER_PROCESSES, and otherwise the larger of 4 and the CPU count', () => {
    expect(maxLocalWorkerProcesses({ FORGE_LOCAL_WORKER_PROCESSES: '2' })).toBe(2)
    expect(maxLocalWorkerProcesses({})).toBe(Math.max(4, availableParallelism()))
    expect(maxLocalWorkerProcesses({ FORGE_LOCAL_WORKER_PROCESSES: '0' })).toBe(Math.max(4, availableParallelism()))
    expect(() => maxLocalWorkerProcesses({ FORGE_LOCAL_WORKER_PROCESSES: 'many' })).toThrow(/FORGE_LOCAL_WORKER_PROCESSES/)
  })

  it('says what it did', () => {
    expect(workerLayoutNote(50, { processes: 4, concurrency: 625 })).toMatch(/^50 workers as 4 worker processes × 625 attempt slots/)
  })
})
