/**
 * The pydantic-ai adapter: a real PydanticAI agent in a Python bridge process, its model calls
 * through the attempt's LLM gateway to the scripted OpenAI-compatible server, its tool calls over
 * the JSON-lines protocol through the tool proxy.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { Task } from '../../core/contracts/index.js'
import { PriceTable } from '../../core/pricing.js'
import { pydanticAiAdapter } from '../../engine/adapters/pydantic-ai.js'
import { runAttempt } from '../../engine/attempt-runner.js'
import { startScriptedOpenAI, type Script, type ScriptedOpenAI } from '../fakes/scripted-openai.js'
import { fakeSuite, fakeTask } from '../unit/fake-suite.js'

const prices = PriceTable.parse({ version: 'p1', date: '2026-11-30', models: { 'scripted*': { input_per_mtok: 0, output_per_mtok: 0 } } })

let upstream: ScriptedOpenAI | undefined
afterEach(async () => {
  await upstream?.close()
  upstream = undefined
})

async function attempt(script: Script, adapterConfig: Record<string, unknown>, task: Task = fakeTask()) {
  upstream = await startScriptedOpenAI(script)
  return runAttempt({
    suite: fakeSuite({ tasks: [task] }),
    task: { ...task, budget: { ...task.budget, max_duration_ms: 30_000 } },
    adapter: pydanticAiAdapter,
    runId: 'run1',
    configId: 'c0',
    attempt: 0,
    runSeed: 'rs',
    adapterConfig,
    workerId: 'w',
    priceTable: prices,
    env: { OPENAI_BASE_URL: upstream.baseURL, OPENAI_API_KEY: 'sk-real-key' },
  })
}

describe('pydantic-ai adapter', () => {
  it('runs a PydanticAI agent through the gateway: tools via the proxy, decoding sent and recorded, usage measured', async () => {
    const { result, trace } = await attempt([{ tool_calls: [{ name: 'upper', arguments: { value: 'abc' } }] }, { content: 'ABC' }], {
      model: 'scripted-pai',
      temperature: 0.2,
      max_tokens: 32,
      seed: 9,
    })
    expect(result.error).toBe('')
    const requests = upstream!.requests
    expect(requests).toHaveLength(2)
    // the bridge only ever had the gateway's per-attempt token; the upstream sees the worker's key
    expect(requests.map((r) => r.authorization)).toEqual(['Bearer sk-real-key', 'Bearer sk-real-key'])
    expect(requests[0]!.body).toMatchObject({
      model: 'scripted-pai',
      stream: false,
      temperature: 0.2,
      // PydanticAI sends the newer name of max_tokens; the gateway records what was sent
      max_completion_tokens: 32,
      seed: 9,
      tool_choice: 'auto',
      messages: [
        { role: 'system', content: expect.stringContaining('You are an agent under evaluation.') },
        { role: 'user', content: 'Do the thing.\n\nInput:\n{\n  "value": "abc"\n}' },
      ],
      tools: [{ type: 'function', function: { name: 'upper', description: 'the upper tool', parameters: expect.objectContaining({ properties: { value: { type: 'string' } } }) } }],
    })
    expect(requests[1]!.body.messages.slice(-1)).toEqual([{ role: 'tool', tool_call_id: 'call_0_0', content: 'ABC' }])
    expect(result).toMatchObject({
      adapter: 'pydantic-ai',
      outcome: 'pass',
      output: 'ABC',
      tool_call_count: 1,
      tool_calls: [expect.objectContaining({ name: 'upper', args: { value: 'abc' }, result: 'ABC' })],
      input_tokens: 30,
      output_tokens: 10,
      model: 'scripted-pai',
      decoding: { temperature: 0.2, max_completion_tokens: 32, seed: 9, tool_choice: 'auto' },
      cost_usd: 0,
      price_table_version: 'p1',
    })
    expect(trace.spans.filter((s) => s.category === 'model')).toHaveLength(2)
  })

  it('is stopped by max_tokens: the gateway refuses the next call and the attempt is budget_exhausted', async () => {
    const usage = { prompt_tokens: 10, completion_tokens: 5 }
    const { result } = await attempt(
      [{ tool_calls: [{ name: 'upper', arguments: { value: 'abc' } }], usage }, { content: 'ABC', usage }],
      { model: 'scripted-pai' },
      fakeTask({ budget: { max_tokens: 15 } }),
    )
    expect(upstream!.requests).toHaveLength(1)
    expect(result).toMatchObject({ failure_bucket: 'budget_exhausted', budget_limit: 'max_tokens', input_tokens: 10, output_tokens: 5 })
  })
})
