import { describe, expect, it } from 'vitest'
import { cohensKappa, type AgreementPair } from '../../core/agreement.js'
import { agreementFromCounts, harnessBanner, logHistogram, recoveryFigures } from '../../core/run-report.js'
import { rateOf } from '../../core/stats.js'

describe('harnessBanner', () => {
  it('stays away at 2% of attempts or less and shows above it', () => {
    expect(harnessBanner(0, 0)).toBeNull()
    expect(harnessBanner(2, 100)).toBeNull()
    expect(harnessBanner(3, 100)).toEqual({
      harness_errors: 3,
      attempts: 100,
      share: 0.03,
      total: false,
      message:
        '3 of 100 attempts (3.0%) were harness errors — above the 2% the figures tolerate: they count as failures below, so rates understate the agent. Fix the harness (see the failed attempts) and run again.',
    })
  })
  it('says the agent was never measured when every attempt was a harness error', () => {
    expect(harnessBanner(12, 12)).toMatchObject({
      total: true,
      share: 1,
      message: 'Every attempt (12 of 12) was a harness error: the agent was never measured, and none of the rates below say anything about it.',
    })
  })
})

describe('logHistogram', () => {
  it('fills the empty bins between counted ones and puts values ≤ 0 first', () => {
    const h = logHistogram({ steps: 4, bins: [{ bin: 4, n: 3 }, { bin: 7, n: 1 }], zero: 2, missing: 5 })
    expect(h.bins.map((b) => b.n)).toEqual([2, 3, 0, 0, 1])
    expect(h.bins[0]).toEqual({ low: 0, high: 0, n: 2 })
    expect(h.bins[1]!.low).toBeCloseTo(10, 12)
    expect(h.bins[1]!.high).toBeCloseTo(10 ** 1.25, 12)
    expect(h.bins[4]!.low).toBeCloseTo(10 ** 1.75, 12)
    expect(h.missing).toBe(5)
    expect(h.total).toBe(6)
  })
  it('is empty without values', () => {
    expect(logHistogram({ steps: 4, bins: [], zero: 0, missing: 3 })).toEqual({ bins: [], missing: 3, total: 0 })
  })
})

describe('recoveryFigures', () => {
  it('is null when no attempt met an injected fault', () => {
    expect(recoveryFigures([{ faults: 0, n: 10, k: 8 }])).toBeNull()
  })
  it('gives the recovery rate over faulted attempts and a curve by faults met, the last bucket open-ended', () => {
    const rows = [
      { faults: 0, n: 10, k: 9 },
      { faults: 1, n: 8, k: 6 },
      { faults: 2, n: 4, k: 2 },
      { faults: 3, n: 2, k: 0 },
      { faults: 7, n: 1, k: 1 },
    ]
    expect(recoveryFigures(rows, 3)).toEqual({
      faulted: rateOf(9, 15),
      clean: rateOf(9, 10),
      curve: [
        { faults: 0, or_more: false, ...rateOf(9, 10) },
        { faults: 1, or_more: false, ...rateOf(6, 8) },
        { faults: 2, or_more: false, ...rateOf(2, 4) },
        { faults: 3, or_more: true, ...rateOf(1, 3) },
      ],
    })
  })
})

describe('agreementFromCounts', () => {
  it('gives the same κ as the attempt-by-attempt pairs, and counts judge verdicts without a programmatic grade apart', () => {
    // programmatic, judge grader, correctness metric (-1 = none), n
    const rows = [
      { programmatic: 1, judge_grader: 1, correctness: 1, n: 6 },
      { programmatic: 1, judge_grader: 0, correctness: -1, n: 2 },
      { programmatic: 0, judge_grader: 0, correctness: 0, n: 3 },
      { programmatic: 0, judge_grader: 1, correctness: 1, n: 1 },
      { programmatic: -1, judge_grader: 1, correctness: 0, n: 4 },
      { programmatic: 1, judge_grader: -1, correctness: -1, n: 9 },
    ]
    const pairs = (which: 'judge_grader' | 'correctness'): AgreementPair[] =>
      rows.flatMap((r) => (r.programmatic === -1 || r[which] === -1 ? [] : Array.from({ length: r.n }, () => ({ programmatic: r.programmatic === 1, judge: r[which] === 1 }))))
    expect(agreementFromCounts(rows)).toEqual([
      { source: 'judge_grader', agreement: cohensKappa(pairs('judge_grader')), judge_only: 4 },
      { source: 'correctness_metric', agreement: cohensKappa(pairs('correctness')), judge_only: 4 },
    ])
    expect(agreementFromCounts(rows)[0]!.agreement.n).toBe(12)
  })
  it('is unavailable, not zero, with no judged attempt', () => {
    const [grader] = agreementFromCounts([{ programmatic: 1, judge_grader: -1, correctness: -1, n: 5 }])
    expect(grader).toMatchObject({ judge_only: 0, agreement: { n: 0, kappa: null, verdict: 'unavailable' } })
  })
})
