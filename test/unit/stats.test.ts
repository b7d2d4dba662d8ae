import { describe, expect, it } from 'vitest'
import { countBy, rateOf, suiteRate, wilsonInterval } from '../../core/stats.js'

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
