/** Recovery, robustness drop and recovery curves from counts; numbers worked out by hand in the comments. */
import { describe, expect, it } from 'vitest'
import { compareCurves, recoveryCurve, recoveryFigures, robustnessDrop, type SweepRunCounts } from '../../core/fault-stats.js'
import { compareProportions } from '../../core/hypothesis.js'
import { rateOf } from '../../core/stats.js'

describe('recoveryFigures', () => {
  it('pools disruptive-fault attempts over tasks, keeps kinds (slow included) and tasks apart', () => {
    const figures = recoveryFigures(
      [
        { task_id: 'a', kind: '', n: 4, k: 1, calls: 6 },
        { task_id: 'b', kind: '', n: 6, k: 5, calls: 7 },
        { task_id: 'a', kind: '500', n: 4, k: 1, calls: 6 },
        { task_id: 'b', kind: '500', n: 2, k: 1, calls: 2 },
        { task_id: 'b', kind: 'timeout', n: 5, k: 4, calls: 5 },
        { task_id: 'b', kind: 'slow', n: 3, k: 3, calls: 3 },
      ],
      20,
      13,
    )
    // 1 + 5 of 4 + 6 attempts that met a disruptive fault still passed
    expect(figures.overall).toEqual(rateOf(6, 10))
    // in FAULT_KINDS order
    expect(figures.by_kind).toEqual([
      { kind: 'timeout', calls: 5, ...rateOf(4, 5) },
      { kind: '500', calls: 8, ...rateOf(2, 6) },
      { kind: 'slow', calls: 3, ...rateOf(3, 3) },
    ])
    expect(figures.by_task).toEqual([
      { task_id: 'a', ...rateOf(1, 4) },
      { task_id: 'b', ...rateOf(5, 6) },
    ])
    expect([figures.attempts_met, figures.attempts]).toEqual([13, 20])
    // nothing met: unavailable, never zero
    expect(recoveryFigures([], 10, 0).overall.rate).toBeNull()
  })
})

describe('robustnessDrop', () => {
  it('tests the pooled pass rate under faults against the fault-free run, and each task with BH', () => {
    const clean = [
      { task_id: 'a', n: 20, k: 19 },
      { task_id: 'b', n: 20, k: 18 },
      { task_id: 'only_clean', n: 20, k: 20 },
    ]
    const faulted = [
      { task_id: 'a', n: 20, k: 8 },
      { task_id: 'b', n: 20, k: 17 },
    ]
    const d = robustnessDrop('r-clean', clean, faulted)
    // shared tasks only: 37/40 → 25/40, a drop of 0.3
    expect(d.clean).toEqual(rateOf(37, 40))
    expect(d.faulted).toEqual(rateOf(25, 40))
    expect(d.drop).toBeCloseTo(0.3, 12)
    expect(d.p).toBeCloseTo(compareProportions(37, 40, 25, 40).p, 12)
    expect(d.significant).toBe(true)
    expect(d.per_task.map((t) => [t.task_id, t.significant])).toEqual([
      ['a', true],
      ['b', false],
    ])
    // a gain is never a significant drop
    expect(robustnessDrop('r', faulted, clean).significant).toBe(false)
  })
})

describe('recoveryCurve', () => {
  const run = (rate: number, tasks: [number, number][], faulted: [number, number], injected: number): SweepRunCounts => ({
    run_id: `r${rate}`,
    rate,
    mode: 'uniform',
    tasks: tasks.map(([k, n], i) => ({ task_id: `t${i}`, k, n })),
    faulted: { k: faulted[0], n: faulted[1] },
    injected,
  })

  it('gives pass and recovery rate per fail rate, each point tested against the fault-free one', () => {
    const curve = recoveryCurve('s1', [
      run(0.4, [[4, 10], [6, 10]], [3, 12], 14),
      run(0, [[10, 10], [9, 10]], [0, 0], 0),
      run(0.1, [[9, 10], [9, 10]], [1, 2], 2),
    ])
    expect(curve.mode).toBe('uniform')
    expect(curve.points.map((p) => p.rate)).toEqual([0, 0.1, 0.4])
    const [zero, low, high] = curve.points
    expect(zero).toMatchObject({ pass: rateOf(19, 20), recovery: rateOf(0, 0), drop: null, p: null, significant: false })
    expect(low).toMatchObject({ pass: rateOf(18, 20), suite_rate: 0.9, recovery: rateOf(1, 2), injected: 2 })
    expect(low!.drop).toBeCloseTo(0.05, 12)
    expect(low!.significant).toBe(false)
    // 19/20 → 10/20: a drop of 0.45, significant
    expect(high!.drop).toBeCloseTo(0.45, 12)
    expect(high!.p).toBeCloseTo(compareProportions(19, 20, 10, 20).p, 12)
    expect(high!.significant).toBe(true)
    expect(high!.suite_rate).toBeCloseTo(0.5, 12)
  })

  it('compares two curves rate by rate with BH, and says what it left out', () => {
    const a = recoveryCurve('a', [run(0, [[19, 20]], [0, 0], 0), run(0.2, [[18, 20]], [3, 4], 4), run(0.4, [[17, 20]], [6, 8], 8)])
    const b = recoveryCurve('b', [run(0, [[19, 20]], [0, 0], 0), run(0.4, [[5, 20]], [1, 15], 16)])
    const c = compareCurves(a, b)
    expect(c.points.map((p) => p.rate)).toEqual([0, 0.4])
    expect(c.points[1]!.delta).toBeCloseTo(-0.6, 12)
    expect(c.points[1]!.significant).toBe(true)
    expect(c.points[0]!.significant).toBe(false)
    expect(c.mean_a).toBeCloseTo((0.95 + 0.85) / 2, 12)
    expect(c.warnings).toEqual(['rates only one sweep measured are left out: 0.2'])
  })
})
