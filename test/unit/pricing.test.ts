import { describe, expect, it } from 'vitest'
import { PriceTable, costOf, priceOf, priceTableLabel } from '../../core/pricing.js'

const table = PriceTable.parse({
  version: 'v1',
  date: '2026-11-30',
  models: {
    'gpt-4o': { input_per_mtok: 2.5, output_per_mtok: 10 },
    'gpt-4o*': { input_per_mtok: 9, output_per_mtok: 9 },
    'gpt-4o-mini*': { input_per_mtok: 0.15, output_per_mtok: 0.6 },
    mock: { input_per_mtok: 0, output_per_mtok: 0 },
  },
})

describe('pricing', () => {
  it('prefers an exact name, then the longest matching prefix', () => {
    expect(priceOf(table, 'gpt-4o')).toEqual({ input_per_mtok: 2.5, output_per_mtok: 10 })
    expect(priceOf(table, 'gpt-4o-mini-2024-07-18')).toEqual({ input_per_mtok: 0.15, output_per_mtok: 0.6 })
    expect(priceOf(table, 'gpt-4o-2024-08-06')).toEqual({ input_per_mtok: 9, output_per_mtok: 9 })
  })
  it('prices usage in USD and reports an unknown model as unavailable (null), not zero', () => {
    expect(costOf(table, 'gpt-4o', { input_tokens: 1_000_000, output_tokens: 500_000 })).toBeCloseTo(7.5, 10)
    expect(costOf(table, 'mock', { input_tokens: 10, output_tokens: 10 })).toBe(0)
    expect(costOf(table, 'claude-x', { input_tokens: 10, output_tokens: 10 })).toBeNull()
  })
  it('rejects a table without a date and labels one with version and date', () => {
    expect(PriceTable.safeParse({ version: 'v', date: '30/11/2026', models: {} }).success).toBe(false)
    expect(priceTableLabel(table)).toBe('v1 (2026-11-30)')
  })
})
