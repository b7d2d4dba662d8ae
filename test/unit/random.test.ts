import { describe, expect, it } from 'vitest'
import { createRng, pick, seedFromString } from '../../core/random.js'

describe('seedFromString', () => {
  it('is FNV-1a over UTF-8 (published test vectors)', () => {
    expect([seedFromString(''), seedFromString('a'), seedFromString('foobar')]).toEqual([0x811c9dc5, 0xe40c292c, 0xbf9cf968])
  })
  it('is stable and distinguishes nearby strings', () => {
    expect(seedFromString('r1/c0/echo/0')).toBe(seedFromString('r1/c0/echo/0'))
    expect(seedFromString('r1/c0/echo/0')).not.toBe(seedFromString('r1/c0/echo/1'))
  })
  it('returns an unsigned 32-bit integer, also for non-ASCII text', () => {
    for (const s of ['', 'é', '日本語', 'x'.repeat(1000)]) {
      const seed = seedFromString(s)
      expect(Number.isInteger(seed) && seed >= 0 && seed <= 0xffffffff).toBe(true)
    }
  })
})

describe('createRng', () => {
  it('replays the same sequence for the same seed', () => {
    const a = createRng(42)
    const b = createRng(42)
    const first = Array.from({ length: 20 }, () => a())
    expect(Array.from({ length: 20 }, () => b())).toEqual(first)
  })
  it('is mulberry32 (pinned values, so a change of algorithm is caught)', () => {
    const rng = createRng(1)
    expect([rng(), rng(), rng()]).toEqual([0.6270739405881613, 0.002735721180215478, 0.5274470399599522])
  })
  it('gives different sequences for different seeds', () => {
    const a = createRng(1)
    const b = createRng(2)
    expect(Array.from({ length: 5 }, () => a())).not.toEqual(Array.from({ length: 5 }, () => b()))
  })
  it('stays in [0, 1) and spreads over it', () => {
    const rng = createRng(seedFromString('spread'))
    const values = Array.from({ length: 10_000 }, () => rng())
    expect(values.every((v) => v >= 0 && v < 1)).toBe(true)
    const mean = values.reduce((s, v) => s + v, 0) / values.length
    expect(Math.abs(mean - 0.5)).toBeLessThan(0.02)
  })
})

describe('pick', () => {
  it('picks deterministically from the seed and reaches every item', () => {
    const items = ['a', 'b', 'c'] as const
    const run = (): string[] => {
      const rng = createRng(7)
      return Array.from({ length: 50 }, () => pick(rng, items))
    }
    expect(run()).toEqual(run())
    expect(new Set(run())).toEqual(new Set(items))
  })
  it('stays in range even when the generator returns its largest value', () => {
    expect(pick(() => 0.9999999999, ['x', 'y'])).toBe('y')
    expect(pick(() => 0, ['x', 'y'])).toBe('x')
  })
  it('refuses an empty list', () => {
    expect(() => pick(createRng(1), [])).toThrow(RangeError)
  })
})
