import { describe, expect, it } from 'vitest'
import { consistency, countBy, meanOfAvailable, passAtK, passHatK, quantile, rateOf, suiteRate, wilsonInterval, wilsonWidth } from '../../core/stats.js'

const rounded = (interval: { low: number; high: number }): { low: number; high: number } => ({
  low: Number(interval.low.toFixed(4)),
  high: Number(interval.high.toFixed(4)),
})

describe('wilsonInterval', () => {
  it('matches the reference values', () => {
    expect(rounded(wilsonInterval(5, 5))).toEqual({ low: 0.5655, high: 1 })
    expect(rounded(wilsonInterval(0, 10))).toEqual({ low: 0, high: 0.2775 })
    expect(rounded(wilsonInterval(3, 10))).toEqual({ low: 0.1078, high: 0.6032 })
  })
  it('is [0, 1] when nothing was measured', () => {
    expect(wilsonInterval(0, 0)).toEqual({ low: 0, high: 1 })
  })
  it('pins the ends exactly at 0 and 1', () => {
    expect(wilsonInterval(0, 7).low).toBe(0)
    expect(wilsonInterval(7, 7).high).toBe(1)
  })
  it('narrows with a smaller z', () => {
    const wide = wilsonInterval(3, 10)
    const narrow = wilsonInterval(3, 10, 1)
    expect(narrow.low).toBeGreaterThan(wide.low)
    expect(narrow.high).toBeLessThan(wide.high)
  })
  it('rejects impossible counts', () => {
    expect(() => wilsonInterval(6, 5)).toThrow(RangeError)
    expect(() => wilsonInterval(-1, 5)).toThrow(RangeError)
  })
})

describe('rateOf', () => {
  it('carries k, n, the rate and the interval', () => {
    const r = rateOf(3, 10)
    expect({ ...r, ...rounded(r) }).toEqual({ k: 3, n: 10, rate: 0.3, low: 0.1078, high: 0.6032 })
  })
  it('reports no rate (not zero) when n = 0', () => {
    expect(rateOf(0, 0)).toEqual({ k: 0, n: 0, rate: null, low: 0, high: 1 })
  })
})

describe('suiteRate', () => {
  it('is the unweighted mean of per-task rates', () => {
    // pooled counts would give 2/11 and 2/10; each task weighs the same instead
    expect(suiteRate([{ k: 1, n: 1 }, { k: 1, n: 10 }])).toEqual({ rate: 0.55, tasks: 2 })
    expect(suiteRate([{ k: 2, n: 2 }, { k: 0, n: 8 }])).toEqual({ rate: 0.5, tasks: 2 })
  })
  it('skips tasks with no attempts', () => {
    expect(suiteRate([{ k: 3, n: 4 }, { k: 0, n: 0 }])).toEqual({ rate: 0.75, tasks: 1 })
  })
  it('has no rate when no task was measured', () => {
    expect(suiteRate([])).toEqual({ rate: null, tasks: 0 })
    expect(suiteRate([{ k: 0, n: 0 }])).toEqual({ rate: null, tasks: 0 })
  })
})

describe('countBy', () => {
  it('counts each value', () => {
    expect(countBy(['pass', 'fail', 'pass', 'partial', 'pass'])).toEqual({ pass: 3, fail: 1, partial: 1 })
  })
  it('is empty for no values', () => {
    expect(countBy([])).toEqual({})
  })
  it('counts keys that clash with Object.prototype as ordinary keys', () => {
    expect(countBy(['__proto__', 'toString', '__proto__'])).toEqual(JSON.parse('{"__proto__": 2, "toString": 1}'))
  })
})

describe('wilsonInterval against statsmodels', () => {
  // statsmodels 0.15.0: proportion_confint(k, n, alpha=0.04999579029644097, method='wilson'), the alpha that makes
  // its z exactly 1.96 (2·(1 − Φ(1.96))); it leaves 2.8e-17 and 0.9999999999999999 where we pin 0 and 1
  const reference: [number, number, number, number][] = [
    [0, 1, 0, 0.793456708526107],
    [1, 1, 0.2065432914738931, 1],
    [0, 5, 0, 0.4344914947520808],
    [5, 5, 0.5655085052479192, 1],
    [0, 10, 0, 0.27754016876661636],
    [10, 10, 0.7224598312333836, 1],
    [1, 3, 0.0614903152761605, 0.7923450448735119],
    [2, 7, 0.08221716570901555, 0.6410709098517873],
    [3, 10, 0.10778928748621192, 0.6032267800204347],
    [19, 20, 0.7638641064874332, 0.9911187805671269],
    [0, 100, 0, 0.036994807476001874],
    [100, 100, 0.9630051925239981, 1],
    [50, 100, 0.4038298285901472, 0.5961701714098528],
  ]
  it('matches at 0/n, n/n and small n', () => {
    for (const [k, n, low, high] of reference) {
      const interval = wilsonInterval(k, n)
      expect(interval.low).toBeCloseTo(low, 12)
      expect(interval.high).toBeCloseTo(high, 12)
    }
  })
  it('gives the width as high − low', () => {
    expect(wilsonWidth(3, 10)).toBeCloseTo(0.6032267800204347 - 0.10778928748621192, 12)
    expect(wilsonWidth(0, 0)).toBe(1)
  })
})

// reference values from an independent implementation with exact binomials (Python math.comb):
// pass@k = 1 − C(n−c, k)/C(n, k), pass^k = C(c, k)/C(n, k)
describe('passAtK and passHatK', () => {
  const reference: [number, number, number, number | null, number | null][] = [
    [10, 3, 1, 0.3, 0.3],
    [10, 3, 5, 0.9166666666666666, 0],
    [10, 3, 8, 1, 0],
    [10, 0, 3, 0, 0],
    [5, 5, 3, 1, 1],
    [20, 12, 5, 0.9963880288957688, 0.05108359133126935],
    [200, 37, 10, 0.8773745673794602, 1.5515124900677956e-8],
    [10, 9, 10, 1, 0],
    [10, 10, 10, 1, 1],
  ]
  it('matches the combinatorial definitions', () => {
    for (const [n, c, k, atK, hatK] of reference) {
      expect(passAtK(n, c, k)).toBeCloseTo(atK!, 12)
      const hat = passHatK(n, c, k)!
      // relative: pass^k gets tiny (1.55e-8) where an absolute tolerance would pass anything
      if (hatK === 0) expect(hat).toBe(0)
      else expect(hat / hatK!).toBeCloseTo(1, 10)
    }
  })
  it('is unavailable (null) when k > n, never zero', () => {
    expect(passAtK(3, 3, 5)).toBeNull()
    expect(passHatK(3, 3, 5)).toBeNull()
    expect(passAtK(0, 0, 1)).toBeNull()
  })
  it('is 0 with no successes and pass@1 = pass^1 = c/n', () => {
    expect([passAtK(10, 0, 3), passHatK(10, 0, 3)]).toEqual([0, 0])
    expect([passAtK(8, 6, 1), passHatK(8, 6, 1)]).toEqual([0.75, 0.75])
  })
  it('rejects a k that is not a whole number ≥ 1', () => {
    expect(() => passAtK(10, 3, 0)).toThrow(RangeError)
    expect(() => passHatK(10, 3, 1.5)).toThrow(RangeError)
  })
})

describe('consistency', () => {
  it('is the chance two attempts agree: [C(c,2) + C(n−c,2)] / C(n,2)', () => {
    expect(consistency(10, 3)).toBeCloseTo(0.5333333333333333, 14)
    expect(consistency(20, 12)).toBeCloseTo(0.49473684210526314, 14)
    expect(consistency(10, 0)).toBe(1)
    expect(consistency(10, 10)).toBe(1)
    expect(consistency(2, 1)).toBe(0)
  })
  it('is unavailable below two attempts', () => {
    expect(consistency(1, 1)).toBeNull()
    expect(consistency(0, 0)).toBeNull()
  })
})

describe('quantile', () => {
  it('interpolates like numpy.quantile (type 7) and ClickHouse quantileExactInclusive', () => {
    // numpy.quantile([12, 3, 7, 7, 40, 1.5, 9, 22, 5, 5, 100], [0.5, 0.9, 0.99]) = [7, 40, 94.00000000000003]
    const values = [12, 3, 7, 7, 40, 1.5, 9, 22, 5, 5, 100]
    expect(quantile(values, 0.5)).toBe(7)
    expect(quantile(values, 0.9)).toBeCloseTo(40, 12)
    expect(quantile(values, 0.99)).toBeCloseTo(94, 12)
    expect(quantile([4], 0.99)).toBe(4)
    expect(quantile([], 0.5)).toBeNull()
    expect(() => quantile(values, 1.5)).toThrow(RangeError)
  })
})

describe('meanOfAvailable', () => {
  it('averages what is there and says how many', () => {
    expect(meanOfAvailable([0.5, null, 1])).toEqual({ mean: 0.75, count: 2 })
    expect(meanOfAvailable([null])).toEqual({ mean: null, count: 0 })
  })
})
