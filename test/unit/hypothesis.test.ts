/**
 * Reference values computed once with scipy 1.17.1 / statsmodels 0.15.0 (Python 3.11) and written
 * in here; the source of each group is named above it. No test runs Python.
 */
import { describe, expect, it } from 'vitest'
import {
  attemptsForPower,
  benjaminiHochberg,
  compareProportions,
  fisherExactTest,
  normalCdf,
  normalQuantile,
  planSweep,
  twoProportionZTest,
  twoSidedP,
} from '../../core/hypothesis.js'
import { mannWhitneyTest, mannWhitneyU, rankSums, vanElterenTest } from '../../core/rank-tests.js'

const close = (actual: number, expected: number, relative = 1e-9): void => {
  expect(Math.abs(actual - expected)).toBeLessThanOrEqual(Math.abs(expected) * relative + 1e-15)
}

describe('normal distribution', () => {
  it('matches scipy.stats.norm.cdf', () => {
    const reference: [number, number][] = [
      [-8, 6.22096057427174e-16],
      [-5, 2.866515718791933e-7],
      [-3.2, 0.0006871379379158471],
      [-1.96, 0.024997895148220435],
      [-1, 0.15865525393145707],
      [0, 0.5],
      [0.5, 0.6914624612740131],
      [2.5, 0.9937903346742238],
      [3, 0.9986501019683699],
      [4, 0.9999683287581669],
      [6, 0.9999999990134123],
    ]
    for (const [x, p] of reference) close(normalCdf(x), p, 1e-12)
    expect(normalCdf(8.5)).toBe(1)
  })
  it('matches scipy.stats.norm.ppf', () => {
    const reference: [number, number][] = [
      [1e-10, -6.361340902404056],
      [1e-4, -3.7190164854556804],
      [0.025, -1.9599639845400545],
      [0.2, -0.8416212335729142],
      [0.8, 0.8416212335729143],
      [0.975, 1.959963984540054],
      [0.999, 3.090232306167813],
    ]
    for (const [p, x] of reference) close(normalQuantile(p), x, 1e-12)
    expect(normalQuantile(0.5)).toBeCloseTo(0, 15)
    expect(normalQuantile(0)).toBe(-Infinity)
    expect(() => normalQuantile(1.5)).toThrow(RangeError)
  })
  it('keeps precision of tiny two-sided p-values', () => {
    // scipy: 2 · norm.sf(8) = 1.244192114854348e-15
    close(twoSidedP(-8), 1.244192114854348e-15, 1e-12)
    expect(twoSidedP(0)).toBe(1)
  })
})

describe('twoProportionZTest', () => {
  // statsmodels.stats.proportion.proportions_ztest([k1, k2], [n1, n2]) (pooled, two-sided; its z has the opposite sign)
  it('matches statsmodels', () => {
    const reference: [number, number, number, number, number, number][] = [
      [45, 50, 30, 50, 3.4641016151377553, 0.0005320055051392477],
      [90, 100, 80, 100, 1.9802950859533481, 0.047670380656161464],
      [9, 10, 5, 10, 1.9518001458970664, 0.050961936967763306],
      [180, 200, 171, 200, 1.3725270326150336, 0.169899429434909],
    ]
    for (const [k1, n1, k2, n2, z, p] of reference) {
      const test = twoProportionZTest(k1, n1, k2, n2)
      close(-test.z!, z, 1e-12)
      close(test.p, p, 1e-10)
      expect(test.test).toBe('two-proportion z')
    }
  })
  it('gives p = 1 when nothing differs, including the degenerate 0/n and n/n tables statsmodels returns NaN for', () => {
    expect(twoProportionZTest(50, 100, 50, 100)).toEqual({ test: 'two-proportion z', p: 1, z: 0 })
    expect(twoProportionZTest(0, 20, 0, 20)).toEqual({ test: 'two-proportion z', p: 1, z: 0 })
    expect(twoProportionZTest(20, 20, 20, 20)).toEqual({ test: 'two-proportion z', p: 1, z: 0 })
  })
  it('rejects impossible counts', () => {
    expect(() => twoProportionZTest(6, 5, 1, 5)).toThrow(RangeError)
    expect(() => twoProportionZTest(1.5, 5, 1, 5)).toThrow(RangeError)
  })
})

describe('fisherExactTest', () => {
  // scipy.stats.fisher_exact([[k1, n1 - k1], [k2, n2 - k2]]) (two-sided)
  it('matches scipy', () => {
    const reference: [number, number, number, number, number][] = [
      [9, 10, 5, 10, 0.14086687306501547],
      [5, 5, 1, 5, 0.047619047619047616],
      [10, 10, 7, 10, 0.21052631578947367],
      [3, 12, 8, 11, 0.03912570132788197],
      [1, 1000, 8, 1000, 0.03864115495182243],
      [20, 20, 15, 20, 0.047124047124047136],
      [2, 2, 0, 3, 0.10000000000000002],
      [0, 20, 0, 20, 1],
    ]
    for (const [k1, n1, k2, n2, p] of reference) {
      const test = fisherExactTest(k1, n1, k2, n2)
      close(test.p, p, 1e-10)
      expect(test).toMatchObject({ test: 'fisher exact', z: null })
    }
  })
  it('is symmetric in the two runs', () => {
    expect(fisherExactTest(3, 12, 8, 11).p).toBeCloseTo(fisherExactTest(8, 11, 3, 12).p, 14)
  })
})

describe('compareProportions', () => {
  it('uses Fisher when an expected cell count is below 5, the z-test otherwise', () => {
    expect(compareProportions(9, 10, 5, 10).test).toBe('fisher exact')
    expect(compareProportions(20, 20, 15, 20).test).toBe('fisher exact')
    expect(compareProportions(1, 1000, 8, 1000).test).toBe('fisher exact')
    expect(compareProportions(45, 50, 30, 50).test).toBe('two-proportion z')
    expect(compareProportions(0, 0, 0, 0)).toEqual({ test: 'fisher exact', p: 1, z: null })
  })
})

describe('benjaminiHochberg', () => {
  // the 15 p-values of Benjamini & Hochberg (1995), section 4; adjusted values from
  // statsmodels.stats.multitest.multipletests(p, method='fdr_bh'); at q = 0.05 the first four are rejected
  const paper = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459, 0.324, 0.4262, 0.5719, 0.6528, 0.759, 1.0]
  const adjusted = [
    0.0015, 0.003, 0.0095, 0.035625, 0.0603, 0.06385714285714286, 0.06385714285714286, 0.0645, 0.0765, 0.486, 0.5811818181818182,
    0.714875, 0.7532307692307693, 0.8132142857142857, 1.0,
  ]
  it('reproduces the paper example', () => {
    const q = benjaminiHochberg(paper)
    q.forEach((value, i) => close(value, adjusted[i]!, 1e-12))
    expect(q.map((value) => value <= 0.05)).toEqual(paper.map((_, i) => i < 4))
  })
  it('keeps the input order and is monotone in p', () => {
    // statsmodels: [0.05, 0.05, 0.05, 0.5, 0.05] for this unsorted set
    const q = benjaminiHochberg([0.04, 0.01, 0.03, 0.5, 0.02])
    q.forEach((value, i) => close(value, [0.05, 0.05, 0.05, 0.5, 0.05][i]!, 1e-12))
  })
  it('handles no p-values and rejects impossible ones', () => {
    expect(benjaminiHochberg([])).toEqual([])
    expect(() => benjaminiHochberg([0.2, 1.5])).toThrow(RangeError)
  })
})

describe('attemptsForPower', () => {
  // statsmodels.stats.proportion.samplesize_proportions_2indep_onetail(-drop, rate, 0.8, ratio=1, alpha=0.05,
  // alternative='two-sided'), rounded up; power_proportions_2indep at that n is ≥ 0.8 in every case
  it('matches statsmodels', () => {
    const reference: [number, number, number][] = [
      [0.9, 0.1, 199], // 198.963
      [0.8, 0.1, 294], // 293.151
      [0.5, 0.1, 388], // 387.339
      [0.95, 0.05, 435], // 434.432
      [0.7, 0.2, 93], // 92.999
      [0.9, 0.3, 32], // 31.498
    ]
    for (const [rate, drop, attempts] of reference) {
      expect(attemptsForPower(rate, drop)).toEqual({ attempts, baseline_rate: rate, detect_drop: drop, alpha: 0.05, power: 0.8 })
    }
  })
  it('needs more attempts for more tasks (alpha / tasks), matching statsmodels at alpha 0.05/8', () => {
    // samplesize_proportions_2indep_onetail(-0.1, 0.9, 0.8, alpha=0.05/8) = 324.576
    expect(planSweep({ baselineRate: 0.9, drop: 0.1, tasks: 8 })).toEqual({
      attempts: 199,
      baseline_rate: 0.9,
      detect_drop: 0.1,
      alpha: 0.05,
      power: 0.8,
      tasks: 8,
      attempts_all_tasks: 325,
      attempts_per_run: 2600,
    })
    expect(planSweep({ baselineRate: 0.9, drop: 0.1 }).attempts_all_tasks).toBe(199)
  })
  it('rejects drops and rates that make no sense', () => {
    expect(() => attemptsForPower(0.9, 0)).toThrow(RangeError)
    expect(() => attemptsForPower(0.3, 0.5)).toThrow(RangeError)
    expect(() => attemptsForPower(1.2, 0.1)).toThrow(RangeError)
    expect(() => attemptsForPower(0.9, 0.1, 0.05, 1)).toThrow(RangeError)
  })
})

describe('mannWhitneyU', () => {
  // scipy.stats.mannwhitneyu(y, x) (method 'auto', use_continuity=True, two-sided): its statistic is U of
  // y, our second sample. Computed with scipy 1.17.1.
  const reference: { name: string; x: number[]; y: number[]; u: number; p: number; method: 'exact' | 'normal' }[] = [
    { name: 'exact, 5 × 6', x: [1.1, 2.3, 3.5, 4.2, 5.9], y: [2.0, 6.1, 7.3, 8.8, 9.4, 10.0], u: 26, p: 0.05194805194805195, method: 'exact' },
    {
      name: 'exact, 3 × 30',
      x: [15.7, 22.25, 31.3],
      y: Array.from({ length: 30 }, (_, i) => i + 1.5),
      u: 24,
      p: 0.21077712609970678,
      method: 'exact',
    },
    { name: 'exact, far tail', x: [0.1, 0.2, 0.3], y: Array.from({ length: 30 }, (_, i) => i + 1), u: 90, p: 0.00036656891495601173, method: 'exact' },
    {
      name: 'exact, 8 × 12',
      x: [3.1, 4.7, 1.2, 8.8, 6.5, 2.9, 7.7, 5.4],
      y: [9.1, 4.9, 12.5, 10.3, 6.6, 11.8, 13.2, 8.1, 14.4, 7.9, 15.6, 10.8],
      u: 88,
      p: 0.0010637453361911566,
      method: 'exact',
    },
    {
      name: 'tool-call counts, many ties',
      x: [2, 2, 2, 3, 2, 6, 2, 2, 0, 2, 2, 3, 2, 2, 6, 2, 2, 2, 0, 2],
      y: [2, 3, 2, 3, 3, 6, 2, 3, 3, 2, 4, 3, 2, 3, 6, 3, 2, 3, 3, 2, 3, 3],
      u: 323,
      p: 0.004790254252298535,
      method: 'normal',
    },
    {
      name: 'normal, 20 × 20',
      x: [12.1, 15.3, 9.8, 11.2, 14.7, 10.5, 13.9, 12.6, 11.8, 10.1, 16.2, 13.3, 12.2, 9.5, 14.1, 11.5, 15.8, 10.9, 13.6, 12.9],
      y: [13.4, 17.2, 12.8, 16.5, 14.9, 18.1, 15.2, 13.7, 16.9, 19.3, 14.4, 15.6, 17.8, 12.4, 16.1, 18.6, 14.0, 15.9, 17.4, 13.1],
      u: 341,
      p: 0.0001443825593152782,
      method: 'normal',
    },
    {
      name: 'normal, nearly separated',
      x: Array.from({ length: 40 }, (_, i) => i + 1),
      y: Array.from({ length: 40 }, (_, i) => i + 36.5),
      u: 1590,
      p: 3.0315111795689904e-14,
      method: 'normal',
    },
  ]
  for (const r of reference) {
    it(`matches scipy: ${r.name}`, () => {
      const test = mannWhitneyU(r.x, r.y)
      expect({ test: test.test, method: test.method, u: test.u, effect: test.effect }).toEqual({
        test: 'mann-whitney u',
        method: r.method,
        u: r.u,
        effect: r.u / (r.x.length * r.y.length),
      })
      close(test.p, r.p, 1e-9)
      // the test is symmetric: swapping the samples mirrors U and keeps p
      const swapped = mannWhitneyU(r.y, r.x)
      expect(swapped.u).toBe(r.x.length * r.y.length - r.u)
      close(swapped.p, r.p, 1e-9)
    })
  }

  it('ranks ties by their mean rank and sums the tie term', () => {
    // pooled 1, 2, 2, 2, 5: ranks 1, 3, 3, 3, 5; y = [2, 5] has rank sum 8; one group of 3 ties: 27 − 3
    expect(rankSums([1, 2, 2], [2, 5])).toEqual({ n1: 3, n2: 2, rank_sum_2: 8, tie_term: 24 })
  })
  it('gives p = 1 when every value is tied (scipy returns NaN there) and refuses an empty sample', () => {
    expect(mannWhitneyU([3, 3, 3, 3, 3, 3, 3, 3, 3], [3, 3, 3, 3, 3, 3, 3, 3, 3, 3])).toEqual({
      test: 'mann-whitney u',
      method: 'normal',
      u: 45,
      effect: 0.5,
      z: 0,
      p: 1,
    })
    expect(() => mannWhitneyU([], [1, 2])).toThrow(/at least one value in each sample/)
    expect(() => mannWhitneyTest({ n1: 3, n2: 0, rank_sum_2: 0, tie_term: 0 })).toThrow(RangeError)
  })
})

describe('vanElterenTest', () => {
  // no scipy function: computed by hand with numpy and scipy.stats.rankdata per stratum —
  // T = Σ (W_s − n2(N+1)/2) / (N+1), Var = Σ n1·n2/12·((N+1) − Σ(t³−t)/(N(N−1))) / (N+1)², z = T/√Var,
  // p = 2·norm.sf(|z|) — over the 'many ties' and '20 × 20' samples above and an all-tied stratum
  it('matches a hand computation with scipy.stats.rankdata', () => {
    const ties = rankSums([2, 2, 2, 3, 2, 6, 2, 2, 0, 2, 2, 3, 2, 2, 6, 2, 2, 2, 0, 2], [2, 3, 2, 3, 3, 6, 2, 3, 3, 2, 4, 3, 2, 3, 6, 3, 2, 3, 3, 2, 3, 3])
    const twenty = rankSums(
      [12.1, 15.3, 9.8, 11.2, 14.7, 10.5, 13.9, 12.6, 11.8, 10.1, 16.2, 13.3, 12.2, 9.5, 14.1, 11.5, 15.8, 10.9, 13.6, 12.9],
      [13.4, 17.2, 12.8, 16.5, 14.9, 18.1, 15.2, 13.7, 16.9, 19.3, 14.4, 15.6, 17.8, 12.4, 16.1, 18.6, 14.0, 15.9, 17.4, 13.1],
    )
    const flat = rankSums([5, 5, 5], [5, 5])
    const test = vanElterenTest([ties, twenty, flat])
    expect({ test: test.test, strata: test.strata }).toEqual({ test: 'van elteren', strata: 3 })
    close(test.z, 4.721264822864941, 1e-12)
    close(test.p, 2.3438253061896397e-6, 1e-9)
    // the runs swapped: the same p, the opposite sign
    const swapped = vanElterenTest([ties, twenty, flat].map((s) => ({ n1: s.n2, n2: s.n1, rank_sum_2: ((s.n1 + s.n2) * (s.n1 + s.n2 + 1)) / 2 - s.rank_sum_2, tie_term: s.tie_term })))
    close(swapped.z, -4.721264822864941, 1e-12)
  })
  it('skips strata with an empty sample and gives p = 1 when nothing can differ', () => {
    expect(vanElterenTest([{ n1: 4, n2: 0, rank_sum_2: 0, tie_term: 0 }, rankSums([1, 1], [1])])).toEqual({ test: 'van elteren', strata: 1, z: 0, p: 1 })
    expect(vanElterenTest([])).toEqual({ test: 'van elteren', strata: 0, z: 0, p: 1 })
  })
})
