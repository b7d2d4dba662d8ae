/**
 * A real, non-deterministic model drives the react loop: SmolLM2-135M-Instruct on node-llama-cpp,
 * served OpenAI-compatibly on 127.0.0.1, through the real LLM gateway, tool proxy and verdict.
 * Its answers are poor; this asserts the structure of what was recorded, not a score.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FAILURE_BUCKETS, Outcome } from '../../core/contracts/index.js'
import type { LoadedSuite } from '../../core/plugins.js'
import type { PriceTable } from '../../core/pricing.js'
import { reactAdapter } from '../../engine/adapters/react.js'
import { runAttempt } from '../../engine/attempt-runner.js'
import { loadPriceTable } from '../../engine/llm/price-table.js'
import { loadSuite } from '../../engine/suite-loader.js'
import { startLlamaServer, type LlamaServer } from '../fakes/llama-server.js'

let server: LlamaServer
let suite: LoadedSuite
let prices: PriceTable

beforeAll(async () => {
  ;[server, suite, prices] = await Promise.all([startLlamaServer(), loadSuite('smoke'), loadPriceTable()])
})
afterAll(async () => {
  await server?.close()
})

describe('react on a real small model (SmolLM2-135M-Instruct, node-llama-cpp)', () => {
  it('records model spans, usage, decoding, a zero cost and a verdict for every attempt', async () => {
    const started = Date.now()
    const results = []
    for (const taskId of ['capital_lookup', 'echo_greeting']) {
      const task = suite.tasks.find((t) => t.id === taskId)!
      for (const attempt of [0]) {
        const { result, trace } = await runAttempt({
          suite,
          // the model is slow next to a mock: give it time, the budget is not under test here
          task: { ...task, budget: { ...task.budget, max_duration_ms: 30_000 } },
          adapter: reactAdapter,
          runId: 'real',
          configId: 'smollm2',
          attempt,
          runSeed: 'real-model',
          adapterConfig: { model: 'smollm2-135m-instruct', temperature: 0.8, max_tokens: 64, max_steps: 3 },
          workerId: 'test',
          priceTable: prices,
          env: { OPENAI_BASE_URL: server.baseURL },
        })
        results.push(result)
        const modelSpans = trace.spans.filter((s) => s.category === 'model')
        expect(modelSpans.length).toBeGreaterThanOrEqual(1)
        expect(modelSpans.length).toBeLessThanOrEqual(3)
        // on a busy machine the deadline may cut the last call short: that call is aborted, the rest answered
        const cut = result.budget_limit === 'max_duration_ms' ? 1 : 0
        for (const [i, span] of modelSpans.entries()) {
          expect(span.attributes).toMatchObject({ model: 'smollm2-135m-instruct', temperature: 0.8, max_tokens: 64, seed: Number(result.seed) })
          if (i >= modelSpans.length - cut) continue
          expect(span.attributes['status']).toBe('ok')
          expect(span.attributes['input_tokens']).toBeGreaterThan(0)
        }
        expect([null, 'max_duration_ms']).toContain(result.budget_limit)
        expect(Outcome.options).toContain(result.outcome)
        expect(result.validity).toBe('valid')
        // a broken invariant (e.g. the same call twice) is a violation, which has no failure bucket
        expect(result.failure_bucket === null).toBe(result.outcome === 'pass' || result.outcome === 'violation')
        if (result.failure_bucket !== null) expect(FAILURE_BUCKETS).toContain(result.failure_bucket)
        expect(result.input_tokens).toBeGreaterThan(0)
        expect(result.output_tokens).toBeGreaterThan(0)
        expect(result).toMatchObject({
          adapter: 'react',
          model: 'smollm2-135m-instruct',
          decoding: { temperature: 0.8, max_tokens: 64, seed: Number(result.seed) },
          cost_usd: 0,
          price_table_version: prices.version,
        })
      }
    }
    const wallMs = Date.now() - started
    const { completions, prompt_tokens, completion_tokens, generation_ms } = server.stats
    // measured, not asserted: printed for the record
    console.log(
      `real model: ${results.length} attempts, ${completions} completions, ${prompt_tokens} prompt + ${completion_tokens} completion tokens, ` +
        `${((prompt_tokens + completion_tokens) / (generation_ms / 1000)).toFixed(0)} tokens/s, ${wallMs} ms; outcomes ${results.map((r) => `${r.task_id}:${r.outcome}/${r.failure_bucket ?? '-'} (${r.tool_call_count} tool calls)`).join(' ')}`,
    )
    expect(completions).toBeGreaterThanOrEqual(results.length)
  })
})
