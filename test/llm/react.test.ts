/**
 * The react and single_shot adapters through the real attempt runner and LLM gateway, against the
 * scripted OpenAI-compatible server: exact requests, tool calls, spans, usage, decoding and cost.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { Task } from '../../core/contracts/index.js'
import type { AgentAdapter, LoadedSuite } from '../../core/plugins.js'
import { PriceTable } from '../../core/pricing.js'
import { reactAdapter } from '../../engine/adapters/react.js'
import { singleShotAdapter } from '../../engine/adapters/single-shot.js'
import { runAttempt } from '../../engine/attempt-runner.js'
import { startScriptedOpenAI, type Script, type ScriptedOpenAI } from '../fakes/scripted-openai.js'
import { fakeSuite, fakeTask } from '../unit/fake-suite.js'

const prices = PriceTable.parse({
  version: 'test-prices',
  date: '2026-11-30',
  models: { 'scripted-1': { input_per_mtok: 1_000, output_per_mtok: 2_000 } },
})

let upstream: ScriptedOpenAI | undefined
afterEach(async () => {
  await upstream?.close()
  upstream = undefined
})

async function attempt(adapter: AgentAdapter, script: Script, adapterConfig: Record<string, unknown>, task: Task = fakeTask(), suite: LoadedSuite = fakeSuite({ tasks: [task] })) {
  upstream = await startScriptedOpenAI(script)
  return runAttempt({
    suite,
    task,
    adapter,
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

const solveUpper: Script = [{ tool_calls: [{ name: 'upper', arguments: { value: 'abc' } }] }, { content: 'ABC' }]

describe('react adapter', () => {
  it('runs the tool loop through the gateway: exact requests, tool calls, model spans, usage, decoding and cost', async () => {
    const { result, trace } = await attempt(reactAdapter, solveUpper, { model: 'scripted-1', temperature: 0.3, max_tokens: 50, seed: 11 })

    const requests = upstream!.requests
    expect(requests).toHaveLength(2)
    // the upstream sees the worker's key; the agent only ever had the per-attempt token
    expect(requests.map((r) => r.authorization)).toEqual(['Bearer sk-real-key', 'Bearer sk-real-key'])
    const tools = [
      {
        type: 'function',
        function: {
          name: 'upper',
          description: 'the upper tool',
          parameters: { type: 'object', properties: { value: { type: 'string' } }, required: ['value'], additionalProperties: false },
        },
      },
    ]
    const system = {
      role: 'system',
      content:
        'You are an agent under evaluation. Solve the task. Use the tools you are given when they help; never invent tools. ' +
        'When you are done, reply with the final answer alone, without explanation.\nYou may make at most 20 tool calls.',
    }
    const user = { role: 'user', content: 'Do the thing.\n\nInput:\n{\n  "value": "abc"\n}' }
    const decoding = { temperature: 0.3, max_tokens: 50, seed: 11 }
    expect(requests[0]!.body).toEqual({ model: 'scripted-1', messages: [system, user], tools, ...decoding })
    expect(requests[1]!.body).toEqual({
      model: 'scripted-1',
      messages: [
        system,
        user,
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_0_0', type: 'function', function: { name: 'upper', arguments: '{"value":"abc"}' } }] },
        { role: 'tool', tool_call_id: 'call_0_0', content: 'ABC' },
      ],
      tools,
      ...decoding,
    })

    expect(result).toMatchObject({
      adapter: 'react',
      outcome: 'pass',
      validity: 'valid',
      failure_bucket: null,
      budget_limit: null,
      output: 'ABC',
      error: '',
      tool_call_count: 1,
      // prompt 10 + 20, completion 5 + 5 (the script's default usage per turn)
      input_tokens: 30,
      output_tokens: 10,
      model: 'scripted-1',
      decoding: { temperature: 0.3, seed: 11, max_tokens: 50 },
      price_table_version: 'test-prices',
      tool_calls: [{ index: 0, name: 'upper', args: { value: 'abc' }, result: 'ABC', retry_index: 0, started_ms: expect.any(Number), duration_ms: expect.any(Number) }],
    })
    expect(result.cost_usd).toBeCloseTo((30 * 1_000 + 10 * 2_000) / 1e6, 12)

    const modelSpans = trace.spans.filter((s) => s.category === 'model')
    expect(modelSpans.map((s) => ({ id: s.span_id, parent: s.parent_span_id, name: s.name, a: s.attributes }))).toEqual([
      {
        id: 'model-0',
        parent: 'agent',
        name: 'scripted-1',
        a: {
          status: 'ok',
          model: 'scripted-1',
          ...decoding,
          messages: 2,
          tools: 1,
          http_status: 200,
          response_model: 'scripted-1',
          finish_reason: 'tool_calls',
          tool_calls: 1,
          input_tokens: 10,
          output_tokens: 5,
          cost_usd: 0.02,
          latency_ms: expect.any(Number),
        },
      },
      {
        id: 'model-1',
        parent: 'agent',
        name: 'scripted-1',
        a: {
          status: 'ok',
          model: 'scripted-1',
          ...decoding,
          messages: 4,
          tools: 1,
          http_status: 200,
          response_model: 'scripted-1',
          finish_reason: 'stop',
          tool_calls: 0,
          input_tokens: 20,
          output_tokens: 5,
          cost_usd: 0.03,
          latency_ms: expect.any(Number),
        },
      },
    ])
    expect(trace.usage).toEqual({ input_tokens: 30, output_tokens: 10 })
  })

  it('sends the attempt seed when the config sets none, and none when it says null', async () => {
    const { result } = await attempt(reactAdapter, solveUpper, { model: 'scripted-1' })
    expect(upstream!.requests[0]!.body['seed']).toBe(Number(result.seed))
    expect(result.decoding).toEqual({ seed: Number(result.seed) })
    await upstream!.close()

    const unseeded = await attempt(reactAdapter, solveUpper, { model: 'scripted-1', seed: null })
    expect(upstream!.requests[0]!.body).not.toHaveProperty('seed')
    expect(unseeded.result.decoding).toEqual({})
  })

  it('hands hallucinated and malformed calls to the tool proxy, which refuses and records them', async () => {
    const { result } = await attempt(
      reactAdapter,
      [
        { tool_calls: [{ name: 'search_web', arguments: { q: 'abc' } }, { name: 'upper', arguments: '{"value": ' }] },
        { content: 'ABC' },
      ],
      { model: 'scripted-1' },
    )
    expect(result.tool_calls.map((c) => [c.name, c.refused, c.args])).toEqual([
      ['search_web', 'hallucinated_tool', { q: 'abc' }],
      ['upper', 'malformed_tool_call', '{"value": '],
    ])
    expect(upstream!.requests[1]!.body.messages.slice(-2)).toEqual([
      { role: 'tool', tool_call_id: 'call_0_0', content: 'Error: no tool named "search_web" (available: upper)' },
      { role: 'tool', tool_call_id: 'call_0_1', content: 'Error: invalid arguments for "upper": args: expected an object of named arguments, got string' },
    ])
    // the model recovered and answered: the refused calls stay on record, the outcome is the answer's
    expect(result).toMatchObject({ outcome: 'pass', failure_bucket: null, tool_call_count: 2 })
  })

  it('is stopped by max_tokens: the call past the budget is refused by the gateway and the attempt says so', async () => {
    const usage = { prompt_tokens: 10, completion_tokens: 5 }
    const task = fakeTask({ budget: { max_tokens: 15 } })
    const { result, trace } = await attempt(
      reactAdapter,
      [{ tool_calls: [{ name: 'upper', arguments: { value: 'abc' } }], usage }, { content: 'ABC', usage }],
      { model: 'scripted-1' },
      task,
    )
    // the first call used exactly the budget; the second was never forwarded
    expect(upstream!.requests).toHaveLength(1)
    expect(result).toMatchObject({
      outcome: 'fail',
      failure_bucket: 'budget_exhausted',
      budget_limit: 'max_tokens',
      input_tokens: 10,
      output_tokens: 5,
      error: 'budget_exhausted: 400 token budget exhausted: 15 of max_tokens 15 used by this attempt',
    })
    expect(trace.spans.filter((s) => s.category === 'model').map((s) => s.attributes['status'])).toEqual(['ok', 'budget_exhausted'])
  })

  it('stops when a call overshoots max_tokens: later tool calls are refused', async () => {
    const task = fakeTask({ budget: { max_tokens: 12 } })
    const { result } = await attempt(
      reactAdapter,
      [{ tool_calls: [{ name: 'upper', arguments: { value: 'abc' } }], usage: { prompt_tokens: 10, completion_tokens: 5 } }, { content: 'ABC' }],
      { model: 'scripted-1' },
      task,
    )
    expect(result).toMatchObject({ failure_bucket: 'budget_exhausted', budget_limit: 'max_tokens', tool_call_count: 1 })
    expect(result.tool_calls[0]).toMatchObject({ refused: 'budget_exhausted' })
  })

  it('ends without an answer after max_steps model calls', async () => {
    const { result } = await attempt(reactAdapter, () => ({ tool_calls: [{ name: 'upper', arguments: { value: 'abc' } }] }), { model: 'scripted-1', max_steps: 2 }, fakeTask({ budget: { max_retries_per_tool: 5 } }))
    expect(upstream!.requests).toHaveLength(2)
    expect(result).toMatchObject({ outcome: 'fail', failure_bucket: 'no_answer', error: 'max_steps: no final answer after 2 model calls', tool_call_count: 2 })
  })

  it('reports a missing model as a harness error saying how to give one', async () => {
    const { result } = await attempt(reactAdapter, solveUpper, {})
    expect(result).toMatchObject({
      validity: 'invalid',
      failure_bucket: 'harness_error',
      error: 'adapter "react" threw: invalid react adapter config: model: required (forge run --model NAME, or "model" in --adapter-config)',
    })
    expect(upstream!.requests).toEqual([])
  })

  it('treats a failing model server as a harness error, not an agent failure', async () => {
    const { result } = await attempt(reactAdapter, [{ status: 503, content: 'overloaded' }], { model: 'scripted-1' })
    expect(result).toMatchObject({ validity: 'invalid', failure_bucket: 'harness_error', error: 'adapter "react" threw: model call failed: 503 overloaded' })
  })
})

describe('single_shot adapter', () => {
  it('makes one completion without tools and answers with its text', async () => {
    const { result, trace } = await attempt(singleShotAdapter, [{ content: 'ABC', usage: { prompt_tokens: 40, completion_tokens: 2 } }], { model: 'scripted-1', temperature: 0, top_p: 1 })
    expect(upstream!.requests.map((r) => r.body)).toEqual([
      {
        model: 'scripted-1',
        messages: [
          {
            role: 'system',
            content:
              'You are an agent under evaluation. Solve the task. Use the tools you are given when they help; never invent tools. ' +
              'When you are done, reply with the final answer alone, without explanation.',
          },
          { role: 'user', content: 'Do the thing.\n\nInput:\n{\n  "value": "abc"\n}' },
        ],
        temperature: 0,
        top_p: 1,
        seed: Number(result.seed),
      },
    ])
    expect(result).toMatchObject({
      adapter: 'single_shot',
      outcome: 'pass',
      output: 'ABC',
      tool_call_count: 0,
      input_tokens: 40,
      output_tokens: 2,
      model: 'scripted-1',
      decoding: { temperature: 0, top_p: 1, seed: Number(result.seed) },
    })
    expect(result.cost_usd).toBeCloseTo((40 * 1_000 + 2 * 2_000) / 1e6, 12)
    expect(trace.spans.filter((s) => s.category === 'model')).toHaveLength(1)
  })
})
