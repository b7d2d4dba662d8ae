import { describe, expect, it } from 'vitest'
import { InvocationPayload } from '../../core/contracts/index.js'
import { estimateRunCost, heuristicUsage, OUTPUT_TOKENS_PER_TURN } from '../../core/estimate.js'
import { PriceTable } from '../../core/pricing.js'

const table = PriceTable.parse({ version: 'v1', date: '2026-11-30', models: { 'gpt-4o-mini*': { input_per_mtok: 0.15, output_per_mtok: 0.6 }, mock: { input_per_mtok: 0, output_per_mtok: 0 } } })
const payload = InvocationPayload.parse({
  instruction: 'x'.repeat(380),
  input: {},
  tools: [{ name: 'kv_get' }, { name: 'echo' }],
  disallowed_tools: [],
  budget: {},
})

describe('heuristicUsage', () => {
  it('sends the payload once per turn (one per tool plus the answer) with the conversation so far', () => {
    const prompt = Math.ceil(JSON.stringify(payload).length / 4)
    expect(heuristicUsage(payload)).toEqual({
      input_tokens: 3 * prompt + (0 + 1 + 2) * 2 * OUTPUT_TOKENS_PER_TURN,
      output_tokens: 3 * OUTPUT_TOKENS_PER_TURN,
    })
  })
})

describe('estimateRunCost', () => {
  it('prices the heuristic usage of every task × attempts', () => {
    const estimate = estimateRunCost({ model: 'gpt-4o-mini', table, attemptsPerTask: 10, perTask: [{ input_tokens: 1000, output_tokens: 100 }, { input_tokens: 3000, output_tokens: 300 }] })
    expect(estimate).toEqual({
      model: 'gpt-4o-mini',
      attempts: 20,
      input_tokens: 40_000,
      output_tokens: 4_000,
      cost_usd: expect.closeTo((40_000 * 0.15 + 4_000 * 0.6) / 1e6, 15),
      source: 'heuristic',
      observed_attempts: 0,
      price_table: { version: 'v1', date: '2026-11-30' },
    })
  })
  it('prefers the observed mean usage, and is unavailable (null) for an unpriced model', () => {
    const estimate = estimateRunCost({
      model: 'claude-x',
      table,
      attemptsPerTask: 5,
      perTask: [{ input_tokens: 1, output_tokens: 1 }, { input_tokens: 1, output_tokens: 1 }],
      observed: { attempts: 123, input_tokens: 250.4, output_tokens: 20 },
    })
    expect(estimate).toMatchObject({ attempts: 10, input_tokens: 2504, output_tokens: 200, cost_usd: null, source: 'observed', observed_attempts: 123 })
  })
})
