/** The LLM gateway against a scripted upstream: forwarding, auth, spans, usage, pricing, the token budget. */
import OpenAI from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { PriceTable } from '../../core/pricing.js'
import { decodingOf, MAX_REFUSED_MODEL_CALLS, resolveUpstream, startLlmGateway, type LlmGateway, type LlmGatewayOptions } from '../../engine/llm/gateway.js'
import { LlmConfigError } from '../../engine/llm/errors.js'
import { MAX_JSON_DEPTH } from '../../core/untrusted-json.js'
import { startScriptedOpenAI, type Script, type ScriptedOpenAI } from '../fakes/scripted-openai.js'

const prices = PriceTable.parse({
  version: 'test-1',
  date: '2026-11-30',
  models: { 'priced-model': { input_per_mtok: 1_000, output_per_mtok: 2_000 }, 'scripted*': { input_per_mtok: 0, output_per_mtok: 0 } },
})

let upstream: ScriptedOpenAI | undefined
let gateway: LlmGateway | undefined
afterEach(async () => {
  await gateway?.close()
  await upstream?.close()
  gateway = undefined
  upstream = undefined
})

function ticking(start = 1_000): () => number {
  let t = start
  return () => (t += 10)
}

async function setUp(script: Script, opts: Partial<LlmGatewayOptions> = {}): Promise<{ upstream: ScriptedOpenAI; gateway: LlmGateway }> {
  upstream = await startScriptedOpenAI(script)
  gateway = await startLlmGateway({ upstream: { baseURL: upstream.baseURL, apiKey: 'sk-real-upstream-key' }, priceTable: prices, startedAt: 1_000, now: ticking(), ...opts })
  return { upstream, gateway }
}

async function complete(gw: { baseURL: string; apiKey: string }, body: Record<string, unknown>, key = gw.apiKey): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  })
  return { status: res.status, json: (await res.json()) as Record<string, unknown> }
}

const hello = { model: 'priced-model', messages: [{ role: 'user', content: 'hi' }] }

describe('LLM gateway', () => {
  it('forwards a completion with the real key, returns it unchanged and records one model span', async () => {
    const { upstream: up, gateway: gw } = await setUp([{ content: 'hello', usage: { prompt_tokens: 100, completion_tokens: 20 } }])
    const { status, json } = await complete(gw, { ...hello, temperature: 0.2, seed: 7, top_p: 0.9, max_tokens: 64, tools: [], user: 'x' })

    expect(status).toBe(200)
    expect(json['choices']).toEqual([{ index: 0, message: { role: 'assistant', content: 'hello', refusal: null }, finish_reason: 'stop', logprobs: null }])
    expect(up.requests).toHaveLength(1)
    expect(up.requests[0]!.authorization).toBe('Bearer sk-real-upstream-key')
    expect(up.requests[0]!.body).toEqual({ ...hello, temperature: 0.2, seed: 7, top_p: 0.9, max_tokens: 64, tools: [], user: 'x' })
    expect(gw.apiKey).not.toContain('sk-real')
    expect(gw.spans).toEqual([
      {
        span_id: 'model-0',
        parent_span_id: 'agent',
        category: 'model',
        name: 'priced-model',
        start_ms: 10,
        duration_ms: 10,
        attributes: {
          status: 'ok',
          model: 'priced-model',
          temperature: 0.2,
          seed: 7,
          top_p: 0.9,
          max_tokens: 64,
          messages: 1,
          tools: 0,
          http_status: 200,
          response_model: 'priced-model',
          finish_reason: 'stop',
          tool_calls: 0,
          input_tokens: 100,
          output_tokens: 20,
          cost_usd: 0.14,
          latency_ms: 10,
        },
      },
    ])
    expect(gw.summary()).toEqual({
      calls: 1,
      usage: { input_tokens: 100, output_tokens: 20 },
      cost_usd: 0.14,
      models: ['priced-model'],
      decoding: { temperature: 0.2, seed: 7, top_p: 0.9, max_tokens: 64 },
      price_table_version: 'test-1',
      budget_exhausted: false,
      refused_calls: 0,
      closed_early: false,
    })
  })

  it('refuses a wrong token, other routes and malformed requests without forwarding them', async () => {
    const { upstream: up, gateway: gw } = await setUp([{ content: 'never' }])
    const wrongKey = await complete(gw, hello, 'sk-real-upstream-key')
    expect(wrongKey).toEqual({ status: 401, json: { error: expect.objectContaining({ code: 'invalid_api_key' }) } })
    const models = await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Bearer ${gw.apiKey}` } })
    expect(models.status).toBe(404)
    await models.body?.cancel()
    const noMessages = await complete(gw, { model: 'm' })
    expect(noMessages.status).toBe(400)
    expect(up.requests).toEqual([])
    expect(gw.spans.map((s) => s.attributes['status'])).toEqual(['bad_request'])
  })

  it('refuses a request body nested too deep before parsing it (V8 took seconds to fail on 16 MiB of brackets)', async () => {
    const { upstream: up, gateway: gw } = await setUp([{ content: 'never' }])
    const res = await fetch(`${gw.baseURL}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.apiKey}` }, body: '['.repeat(8 << 20) })
    expect(res.status).toBe(400)
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain(`JSON nested deeper than ${MAX_JSON_DEPTH} levels`)
    expect(up.requests).toEqual([])
  })

  it('relays a stream as it comes, asking the upstream for usage and hiding that chunk from a client that did not ask', async () => {
    const { upstream: up, gateway: gw } = await setUp([{ content: 'hello there', tool_calls: [{ name: 'f', arguments: { a: 1 } }], usage: { prompt_tokens: 100, completion_tokens: 20 } }])
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.apiKey, maxRetries: 0 })
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = []
    for await (const chunk of await client.chat.completions.create({ model: 'priced-model', messages: [{ role: 'user', content: 'hi' }], stream: true, temperature: 1 })) chunks.push(chunk)

    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('hello there')
    expect(chunks.every((c) => c.choices.length === 1)).toBe(true)
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('tool_calls')
    expect(up.requests[0]!.body).toEqual({ model: 'priced-model', messages: [{ role: 'user', content: 'hi' }], stream: true, temperature: 1, stream_options: { include_usage: true } })
    expect(gw.spans[0]!.attributes).toEqual({
      status: 'ok',
      model: 'priced-model',
      temperature: 1,
      messages: 1,
      stream: true,
      http_status: 200,
      response_model: 'priced-model',
      finish_reason: 'tool_calls',
      tool_calls: 1,
      input_tokens: 100,
      output_tokens: 20,
      cost_usd: 0.14,
      latency_ms: 10,
    })
    expect(gw.summary()).toMatchObject({ usage: { input_tokens: 100, output_tokens: 20 }, cost_usd: 0.14 })
  })

  it('passes the usage chunk of a stream on to a client that asked for it', async () => {
    const { gateway: gw } = await setUp([{ content: 'ok', usage: { prompt_tokens: 7, completion_tokens: 3 } }])
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.apiKey, maxRetries: 0 })
    const stream = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } })
    const usages = []
    for await (const chunk of stream) if (chunk.usage) usages.push(chunk.usage)
    expect(usages).toEqual([{ prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 }])
    expect(gw.summary().usage).toEqual({ input_tokens: 7, output_tokens: 3 })
  })

  it('stops the agent once usage reaches max_tokens: later calls get an error and are never forwarded', async () => {
    const exhausted: string[] = []
    const usage = { prompt_tokens: 15, completion_tokens: 5 }
    const { upstream: up, gateway: gw } = await setUp([{ content: 'a', usage }, { content: 'b', usage }, { content: 'c', usage }], {
      maxTokens: 30,
      onBudgetExhausted: (limit) => exhausted.push(limit),
    })
    const conversation = (turn: number) => ({ ...hello, messages: [...hello.messages, ...Array.from({ length: turn }, () => ({ role: 'assistant', content: 'x' }))] })

    expect((await complete(gw, conversation(0))).status).toBe(200)
    expect(exhausted).toEqual([])
    // 40 > 30: this call overshot the budget; it is answered, and the attempt is marked
    expect((await complete(gw, conversation(1))).status).toBe(200)
    expect(exhausted).toEqual(['max_tokens'])
    const refused = await complete(gw, conversation(2))
    expect(refused).toEqual({
      status: 400,
      json: { error: { message: 'token budget exhausted: 40 of max_tokens 30 used by this attempt', type: 'budget_exhausted', code: 'max_tokens_budget_exhausted', param: null } },
    })
    expect(up.requests).toHaveLength(2)
    expect(exhausted).toEqual(['max_tokens'])
    expect(gw.spans.map((s) => s.attributes['status'])).toEqual(['ok', 'ok', 'budget_exhausted'])
    expect(gw.summary()).toMatchObject({ calls: 3, usage: { input_tokens: 30, output_tokens: 10 }, budget_exhausted: true })
  })

  it('refuses the first call when a budget is already spent exactly', async () => {
    const { gateway: gw } = await setUp([{ content: 'a', usage: { prompt_tokens: 8, completion_tokens: 2 } }, { content: 'b' }], { maxTokens: 10 })
    expect((await complete(gw, hello)).status).toBe(200)
    expect(gw.summary().budget_exhausted).toBe(false)
    expect((await complete(gw, { ...hello, messages: [...hello.messages, { role: 'assistant', content: 'a' }] })).status).toBe(400)
    expect(gw.summary().budget_exhausted).toBe(true)
  })

  it('makes the cost unavailable (null), never zero, for an unpriced model or a response without usage', async () => {
    const unpriced = await setUp([{ content: 'a', usage: { prompt_tokens: 5, completion_tokens: 5 } }])
    expect((await complete(unpriced.gateway, { ...hello, model: 'mystery-model' })).status).toBe(200)
    expect(unpriced.gateway.summary()).toMatchObject({ cost_usd: null, usage: { input_tokens: 5, output_tokens: 5 } })
    expect(unpriced.gateway.spans[0]!.attributes['cost_usd']).toBeNull()
    await unpriced.gateway.close()
    await unpriced.upstream.close()

    const noUsage = await setUp([{ content: 'a', usage: null }])
    expect((await complete(noUsage.gateway, hello)).status).toBe(200)
    expect(noUsage.gateway.summary()).toMatchObject({ cost_usd: null, usage: { input_tokens: 0, output_tokens: 0 } })
    expect(noUsage.gateway.spans[0]!.attributes['usage']).toBe('missing')
  })

  it('prices the model the upstream says answered when the requested alias has no price', async () => {
    const { gateway: gw } = await setUp([{ content: 'a', model: 'scripted-2026', usage: { prompt_tokens: 5, completion_tokens: 5 } }])
    expect((await complete(gw, { ...hello, model: 'alias' })).status).toBe(200)
    expect(gw.summary()).toMatchObject({ cost_usd: 0, models: ['alias'] })
  })

  it('passes upstream errors through and answers 502 when the upstream is unreachable', async () => {
    const { gateway: gw } = await setUp([{ status: 503, content: 'overloaded' }])
    const failed = await complete(gw, hello)
    expect(failed).toEqual({ status: 503, json: { error: { message: 'overloaded', type: 'server_error', code: null } } })
    expect(gw.spans[0]!.attributes).toMatchObject({ status: 'upstream_error', http_status: 503 })
    await gw.close()

    const nowhere = await startLlmGateway({ upstream: { baseURL: 'http://127.0.0.1:9/v1' }, startedAt: 0 })
    try {
      const unreachable = await complete(nowhere, hello)
      expect(unreachable.status).toBe(502)
      expect(unreachable.json['error']).toMatchObject({ code: 'upstream_unreachable' })
      expect(nowhere.summary()).toMatchObject({ calls: 1, cost_usd: null, price_table_version: '' })
    } finally {
      await nowhere.close()
    }
  })

  it(`closes for the rest of the attempt after ${MAX_REFUSED_MODEL_CALLS} refused calls, and never forwards one`, async () => {
    const { upstream: up, gateway: gw } = await setUp([{ content: 'never' }])
    for (let i = 0; i < MAX_REFUSED_MODEL_CALLS; i++) expect((await complete(gw, { model: 'm' })).status).toBe(400)
    expect(gw.summary()).toMatchObject({ refused_calls: MAX_REFUSED_MODEL_CALLS, closed_early: false })
    // the one past the cap is still answered, saying so; then nothing listens
    const last = await complete(gw, { model: 'm' })
    expect(last.status).toBe(400)
    expect((last.json['error'] as { message: string }).message).toMatch(new RegExp(`; the gateway refused ${MAX_REFUSED_MODEL_CALLS} requests of this attempt and closes$`))
    await expect(complete(gw, hello)).rejects.toThrow()
    expect(up.requests).toEqual([])
    expect(gw.summary()).toMatchObject({ calls: MAX_REFUSED_MODEL_CALLS + 1, refused_calls: MAX_REFUSED_MODEL_CALLS + 1, closed_early: true })
    // one span per call, in the order they came
    expect(gw.spans.map((s) => s.span_id)).toEqual(Array.from({ length: MAX_REFUSED_MODEL_CALLS + 1 }, (_, i) => `model-${i}`))
  })

  it('counts wrong keys and other routes towards closing, without a span for them', async () => {
    const { gateway: gw } = await setUp([{ content: 'never' }])
    for (let i = 0; i < MAX_REFUSED_MODEL_CALLS; i++) {
      if (i % 2 === 0) expect((await complete(gw, hello, 'sk-wrong')).status).toBe(401)
      else {
        const other = await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Bearer ${gw.apiKey}` } })
        expect(other.status).toBe(404)
        await other.body?.cancel()
      }
    }
    expect((await complete(gw, hello, 'sk-wrong')).status).toBe(401)
    await expect(complete(gw, hello)).rejects.toThrow()
    expect(gw.spans).toEqual([])
    expect(gw.summary()).toMatchObject({ calls: 0, refused_calls: MAX_REFUSED_MODEL_CALLS + 1, closed_early: true })
  })

  it('keeps its spans in the order the calls came when they finish out of order', async () => {
    const { gateway: gw } = await setUp([{ content: 'slow', delay_ms: 300 }, { content: 'quick' }, { content: 'quicker' }])
    const first = complete(gw, hello)
    await new Promise((resolve) => setTimeout(resolve, 50))
    await Promise.all([complete(gw, hello), complete(gw, hello), first])
    expect(gw.spans.map((s) => s.span_id)).toEqual(['model-0', 'model-1', 'model-2'])
  })

  it('aborts a call still in flight when it closes, and keeps its span', async () => {
    const { gateway: gw } = await setUp([{ content: 'late', delay_ms: 5_000 }])
    const pending = complete(gw, hello).catch((error: unknown) => error)
    await new Promise((resolve) => setTimeout(resolve, 100))
    await gw.close()
    expect(gw.spans.map((s) => s.attributes['status'])).toEqual(['upstream_error'])
    expect(await pending).toBeInstanceOf(Error)
  })

  it('accepts no calls after close', async () => {
    const { gateway: gw } = await setUp([{ content: 'a' }])
    await gw.close()
    await expect(complete(gw, hello)).rejects.toThrow()
  })
})

describe('resolveUpstream', () => {
  it('takes base_url and api_key_env from the adapter config over OPENAI_BASE_URL / OPENAI_API_KEY', () => {
    const env = { OPENAI_BASE_URL: 'http://env:1/v1', OPENAI_API_KEY: 'sk-env', OTHER_KEY: 'sk-other' }
    expect(resolveUpstream({}, env)).toEqual({ baseURL: 'http://env:1/v1', apiKey: 'sk-env' })
    expect(resolveUpstream({ base_url: 'http://cfg:2/v1', api_key_env: 'OTHER_KEY' }, env)).toEqual({ baseURL: 'http://cfg:2/v1', apiKey: 'sk-other' })
    expect(resolveUpstream({}, {})).toEqual({ baseURL: 'https://api.openai.com/v1' })
  })

  it('names the bad setting', () => {
    expect(() => resolveUpstream({ api_key_env: 'UNSET_KEY' }, {})).toThrow(new LlmConfigError("adapter config api_key_env names UNSET_KEY, which is not set in the worker's environment"))
    expect(() => resolveUpstream({ base_url: 'ftp://x' }, {})).toThrow(LlmConfigError)
  })
})

describe('decodingOf', () => {
  it('keeps the decoding fields a request sets, and only the type of a response_format', () => {
    expect(decodingOf({ model: 'm', messages: [], temperature: 0, seed: 3, stop: ['\n'], response_format: { type: 'json_schema', json_schema: { big: 1 } }, top_p: null })).toEqual({
      temperature: 0,
      seed: 3,
      stop: ['\n'],
      response_format: { type: 'json_schema' },
    })
  })
})
