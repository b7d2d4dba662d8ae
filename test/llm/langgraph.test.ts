/**
 * The langgraph adapter through the real attempt runner and LLM gateway, against the scripted
 * OpenAI-compatible server: a fresh graph per attempt, tools through the proxy, usage measured.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { Task } from '../../core/contracts/index.js'
import { PriceTable } from '../../core/pricing.js'
import { langgraphAdapter } from '../../engine/adapters/langgraph.js'
import { runAttempt } from '../../engine/attempt-runner.js'
import { startScriptedOpenAI, type Script, type ScriptedOpenAI } from '../fakes/scripted-openai.js'
import { fakeSuite, fakeTask } from '../unit/fake-suite.js'

const prices = PriceTable.parse({ version: 'p1', date: '2026-11-30', models: { 'scripted*': { input_per_mtok: 1_000, output_per_mtok: 1_000 } } })

let upstream: ScriptedOpenAI | undefined
afterEach(async () => {
  await upstream?.close()
  upstream = undefined
})

async function attempt(script: Script, adapterConfig: Record<string, unknown>, task: Task = fakeTask(), attemptNo = 0) {
  upstream ??= await startScriptedOpenAI(script)
  return runAttempt({
    suite: fakeSuite({ tasks: [task] }),
    task,
    adapter: langgraphAdapter,
    runId: 'run1',
    configId: 'c0',
    attempt: attemptNo,
    runSeed: 'rs',
    adapterConfig,
    workerId: 'w',
    priceTable: prices,
    env: { OPENAI_BASE_URL: upstream.baseURL, OPENAI_API_KEY: 'sk-real-key' },
  })
}

const solveUpper: Script = [{ tool_calls: [{ name: 'upper', arguments: { value: 'abc' } }] }, { content: 'ABC' }]

describe('langgraph adapter', () => {
  it('runs the graph through the gateway: tool calls via the proxy, decoding sent and recorded, usage and cost measured', async () => {
    const { result, trace } = await attempt(solveUpper, { model: 'scripted-lg', temperature: 0.5, top_p: 0.9, max_tokens: 64, seed: 3 })
    const requests = upstream!.requests
    expect(requests).toHaveLength(2)
    expect(requests.map((r) => r.authorization)).toEqual(['Bearer sk-real-key', 'Bearer sk-real-key'])
    expect(requests[0]!.body).toMatchObject({
      model: 'scripted-lg',
      temperature: 0.5,
      top_p: 0.9,
      max_tokens: 64,
      seed: 3,
      messages: [
        { role: 'system', content: expect.stringContaining('You are an agent under evaluation.') },
        { role: 'user', content: 'Do the thing.\n\nInput:\n{\n  "value": "abc"\n}' },
      ],
      tools: [{ type: 'function', function: { name: 'upper', description: 'the upper tool' } }],
    })
    expect(requests[0]!.body['stream']).not.toBe(true)
    expect(requests[1]!.body.messages.slice(2)).toEqual([
      { role: 'assistant', content: '', tool_calls: [{ id: 'call_0_0', type: 'function', function: { name: 'upper', arguments: '{"value":"abc"}' } }] },
      { role: 'tool', tool_call_id: 'call_0_0', content: 'ABC' },
    ])
    expect(result).toMatchObject({
      adapter: 'langgraph',
      outcome: 'pass',
      output: 'ABC',
      error: '',
      tool_call_count: 1,
      input_tokens: 30,
      output_tokens: 10,
      model: 'scripted-lg',
      decoding: { temperature: 0.5, top_p: 0.9, max_tokens: 64, seed: 3 },
      price_table_version: 'p1',
    })
    expect(result.cost_usd).toBeCloseTo(40 / 1_000, 12)
    expect(trace.spans.filter((s) => s.category === 'model').map((s) => s.attributes['status'])).toEqual(['ok', 'ok'])
  })

  it('hands tool calls whose arguments are not JSON to the proxy, which records them as malformed', async () => {
    const { result } = await attempt([{ tool_calls: [{ name: 'upper', arguments: '{"value": ' }] }, { content: 'ABC' }], { model: 'scripted-lg' })
    expect(result.tool_calls).toEqual([expect.objectContaining({ name: 'upper', args: '{"value": ', refused: 'malformed_tool_call' })])
    expect(upstream!.requests[1]!.body.messages.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'call_0_0',
      content: 'Error: invalid arguments for "upper": args: expected an object of named arguments, got string',
    })
  })

  it('builds a new graph per attempt: a second attempt starts from the instruction, not from the first one', async () => {
    await attempt(solveUpper, { model: 'scripted-lg' }, fakeTask(), 0)
    await attempt(solveUpper, { model: 'scripted-lg' }, fakeTask(), 1)
    const firstCalls = upstream!.requests.filter((r) => r.body.messages.length === 2)
    expect(firstCalls).toHaveLength(2)
    expect(firstCalls[1]!.body.messages).toEqual(firstCalls[0]!.body.messages)
  })

  it('stops at max_steps without an answer, and is stopped by max_tokens', async () => {
    const loop: Script = () => ({ tool_calls: [{ name: 'upper', arguments: { value: 'abc' } }] })
    const looped = await attempt(loop, { model: 'scripted-lg', max_steps: 2 }, fakeTask({ budget: { max_retries_per_tool: 5 } }))
    expect(looped.result).toMatchObject({ failure_bucket: 'no_answer', error: 'max_steps: no final answer after 2 model calls' })
    await upstream!.close()
    upstream = undefined

    const spent = await attempt(loop, { model: 'scripted-lg' }, fakeTask({ budget: { max_tokens: 15 } }))
    expect(spent.result).toMatchObject({ failure_bucket: 'budget_exhausted', budget_limit: 'max_tokens', input_tokens: 10, output_tokens: 5 })
  })
})
