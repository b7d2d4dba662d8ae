/**
 * The local model server on the real SmolLM2-135M-Instruct (node-llama-cpp, CPU): reproducible
 * sampling by seed (alone, batched with other requests, and in a new server), grammar-constrained
 * tool calls and JSON replies, streaming, the queue, the key. Its answers are poor; this asserts
 * what the server guarantees, never what the model says.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startLocalModelServer, type LocalModelServer } from '../../engine/llm/local/server.js'
import { smollm2Path } from '../fakes/llama-server.js'
import { getWithHost } from '../helpers/http-host.js'

let server: LocalModelServer
const KEY = 'test-key'

beforeAll(async () => {
  server = await startLocalModelServer({ modelPath: smollm2Path(), name: 'local:smollm2-135m-instruct', parallel: 2, contextSize: 1024, apiKey: KEY })
})
afterAll(async () => {
  await server?.close()
})

interface Completion {
  model: string
  choices: { message: { role: string; content: string | null; tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[] }; finish_reason: string }[]
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number }
}

async function post(body: Record<string, unknown>, opts: { key?: string | null; signal?: AbortSignal; at?: LocalModelServer } = {}): Promise<Response> {
  const key = opts.key === undefined ? KEY : opts.key
  return fetch(`${(opts.at ?? server).baseURL}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key !== null ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(body),
    ...(opts.signal ? { signal: opts.signal } : {}),
  })
}

async function complete(body: Record<string, unknown>, at?: LocalModelServer): Promise<Completion> {
  const res = await post({ model: 'local', max_tokens: 24, ...body }, at ? { at } : {})
  expect(res.status).toBe(200)
  return (await res.json()) as Completion
}

const text = (c: Completion): string => c.choices[0]?.message.content ?? ''
const ask = (content: string, seed: number) => ({ messages: [{ role: 'user', content }], temperature: 1, seed })

/** Waits for a condition of the server's own counters (no timing assumption: only a generous deadline). */
async function until(what: string, condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 60_000
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(10)
  }
}

const calculator = {
  type: 'function',
  function: { name: 'calculator', description: 'Evaluates an arithmetic expression.', parameters: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] } },
}

describe('reproducible sampling', () => {
  it('the same seed gives the same completion — alone, batched with other requests, and in a new server; other seeds sample differently', async () => {
    const prompt = 'Write one sentence about the sea.'
    const seeds = [11, 12, 13, 14]
    const alone: string[] = []
    for (const seed of seeds) alone.push(text(await complete(ask(prompt, seed))))
    // all at once: two generate together, two queue; other prompts share the batch
    const together = await Promise.all([...seeds.map((seed) => complete(ask(prompt, seed))), complete(ask('Name a fruit.', 99))])
    expect(together.slice(0, 4).map(text)).toEqual(alone)
    // a new process-level model and context: same machine, same completions
    const again = await startLocalModelServer({ modelPath: smollm2Path(), parallel: 1, contextSize: 1024 })
    try {
      expect(text(await complete(ask(prompt, seeds[0]!), again))).toBe(alone[0])
    } finally {
      await again.close()
    }
    // temperature 1 over a 49k-token vocabulary: four seeds do not all draw the same 24 tokens
    expect(new Set(alone).size).toBeGreaterThan(1)
    for (const t of alone) expect(t.length).toBeGreaterThan(0)
  })
})

describe('tool calls under a grammar', () => {
  it('every reply is a well-formed call of an offered tool or an answer; tool_choice required and a named tool force a call', async () => {
    const messages = [
      { role: 'system', content: 'Use the calculator.' },
      { role: 'user', content: 'Evaluate the expression with the calculator and answer with the number.\n\nInput:\n{"expression": "(3 + 4) * 6"}' },
    ]
    const replies: Completion[] = []
    for (const seed of [1, 2, 3]) replies.push(await complete({ messages, tools: [calculator], temperature: 1, seed, max_tokens: 48 }))
    for (const choice of [{ tool_choice: 'required' }, { tool_choice: { type: 'function', function: { name: 'calculator' } } }]) {
      const forced = await complete({ messages, tools: [calculator], temperature: 1, seed: 4, max_tokens: 48, ...choice })
      expect(forced.choices[0]?.finish_reason).toBe('tool_calls')
      replies.push(forced)
    }
    for (const reply of replies) {
      const [choice] = reply.choices
      if (choice?.finish_reason === 'tool_calls') {
        const [call] = choice.message.tool_calls ?? []
        expect(choice.message.tool_calls).toHaveLength(1)
        expect(call).toMatchObject({ type: 'function', function: { name: 'calculator' } })
        const args = JSON.parse(call!.function.arguments) as Record<string, unknown>
        expect(Object.keys(args)).toEqual(['expression'])
        expect(typeof args['expression']).toBe('string')
        expect(choice.message.content).toBeNull()
      } else {
        // an answer the grammar closed, or one cut at max_tokens (then the raw text is kept)
        expect(['stop', 'length']).toContain(choice?.finish_reason)
        expect(typeof choice?.message.content).toBe('string')
      }
      expect(reply.usage.prompt_tokens).toBeGreaterThan(0)
      expect(reply.usage.total_tokens).toBe(reply.usage.prompt_tokens + reply.usage.completion_tokens)
    }
  })

  it('a response_format JSON schema gives JSON of that shape', async () => {
    const reply = await complete({
      messages: [{ role: 'user', content: 'Rate the answer "4" to "2+2" from 1 to 5 and say why.' }],
      response_format: { type: 'json_schema', json_schema: { name: 'rating', schema: { type: 'object', properties: { score: { type: 'integer', minimum: 1, maximum: 5 }, reason: { type: 'string', maxLength: 40 } } } } },
      temperature: 0,
      max_tokens: 64,
    })
    const parsed = JSON.parse(text(reply)) as { score: number; reason: string }
    expect(Object.keys(parsed)).toEqual(['score', 'reason'])
    expect([1, 2, 3, 4, 5]).toContain(parsed.score)
    expect(typeof parsed.reason).toBe('string')
  })
})

describe('streaming', () => {
  it('streams the same text as the plain answer for the same seed, then the finish reason and usage', async () => {
    const body = { ...ask('Name three colours.', 5), model: 'local', max_tokens: 16 }
    const plain = await complete(body)
    const res = await post({ ...body, stream: true, stream_options: { include_usage: true } })
    expect(res.headers.get('content-type')).toBe('text/event-stream')
    const events = (await res.text()).split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => e.slice(6))
    expect(events.at(-1)).toBe('[DONE]')
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as { model: string; choices: { delta: { content?: string }; finish_reason: string | null }[]; usage?: Completion['usage'] })
    expect(chunks.length).toBeGreaterThan(3)
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(text(plain))
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe(plain.choices[0]?.finish_reason)
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: plain.usage, model: 'local:smollm2-135m-instruct' })
  })

  it('streams a tool call as one delta once the grammar-shaped reply is complete', async () => {
    const res = await post({ model: 'local', messages: [{ role: 'user', content: 'Compute 2*3.' }], tools: [calculator], tool_choice: 'required', stream: true, max_tokens: 48, seed: 1 })
    const events = (await res.text()).split('\n\n').filter((e) => e.startsWith('data: ') && e !== 'data: [DONE]').map((e) => JSON.parse(e.slice(6)) as { choices: { delta: Record<string, unknown>; finish_reason: string | null }[] })
    expect(events.map((e) => e.choices[0]?.finish_reason ?? null)).toEqual([null, null, 'tool_calls'])
    expect(events[1]?.choices[0]?.delta).toMatchObject({ tool_calls: [{ index: 0, type: 'function', function: { name: 'calculator' } }] })
  })
})

describe('one model, many clients', () => {
  it('queues requests beyond its parallel sequences and drops one whose client went away', async () => {
    const single = await startLocalModelServer({ modelPath: smollm2Path(), parallel: 1, contextSize: 1024 })
    try {
      const first = post({ model: 'local', messages: [{ role: 'user', content: 'Tell a long story.' }], max_tokens: 64, temperature: 0 }, { at: single, key: null })
      await until('the first request to generate', () => single.stats.active === 1)
      const gone = new AbortController()
      const second = post({ model: 'local', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 8 }, { at: single, key: null, signal: gone.signal })
      await until('the second request to queue', () => single.stats.queued === 1)
      gone.abort()
      await expect(second).rejects.toThrow()
      await until('the queue to drop it', () => single.stats.abandoned === 1)
      expect((await first).status).toBe(200)
      expect(single.stats).toMatchObject({ completions: 1, abandoned: 1, queued: 0, active: 0 })
    } finally {
      await single.close()
    }
  })

  it('answers only clients with its key; reports health and its model', async () => {
    expect((await post({ messages: [] }, { key: null })).status).toBe(401)
    expect((await post({ messages: [] }, { key: 'wrong-key' })).status).toBe(401)
    const auth = { authorization: `Bearer ${KEY}` }
    const health = (await (await fetch(server.baseURL.replace(/\/v1$/, '/health'), { headers: auth })).json()) as Record<string, unknown>
    expect(health).toMatchObject({ status: 'ok', model: 'local:smollm2-135m-instruct', path: smollm2Path(), parallel: 2, queued: 0, active: 0 })
    expect(health['rss_bytes']).toBeGreaterThan(50 * 1024 * 1024)
    expect(await (await fetch(`${server.baseURL}/models`, { headers: auth })).json()).toEqual({ object: 'list', data: [{ id: 'local:smollm2-135m-instruct', object: 'model', created: 0, owned_by: 'forge' }] })
  })

  it('without a key answers only requests addressed to an IP address or localhost (no DNS rebinding); with one, any name that brings the key', async () => {
    const keyless = await startLocalModelServer({ modelPath: smollm2Path(), parallel: 1, contextSize: 512 })
    try {
      const models = `${keyless.baseURL}/models`
      const rebound = await getWithHost(models, `rebind.attacker.example:${keyless.port}`)
      expect(rebound.status).toBe(403)
      expect(JSON.parse(rebound.body)).toMatchObject({
        error: { message: `the local model server has no API key, so it answers only requests addressed to an IP address or localhost, not "rebind.attacker.example:${keyless.port}" (set FORGE_MODEL_SERVER_KEY to serve it by name)` },
      })
      for (const host of [`127.0.0.1:${keyless.port}`, `localhost:${keyless.port}`, 'LOCALHOST']) expect((await getWithHost(models, host)).status, host).toBe(200)
    } finally {
      await keyless.close()
    }
    expect((await getWithHost(`${server.baseURL}/models`, 'models.internal:8080', { authorization: `Bearer ${KEY}` })).status).toBe(200)
  })

  it('says what is wrong with a request it cannot serve', async () => {
    const bad = async (body: unknown): Promise<[number, string]> => {
      const res = await fetch(`${server.baseURL}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${KEY}` }, body: typeof body === 'string' ? body : JSON.stringify(body) })
      return [res.status, ((await res.json()) as { error: { message: string } }).error.message]
    }
    expect(await bad({ model: 'local' })).toEqual([400, 'a chat completion needs "messages" (an array)'])
    expect(await bad({ model: 'local', messages: [], n: 2 })).toEqual([400, 'n=2 is not supported: the local model server answers one choice per request'])
    expect(await bad('[1]')).toEqual([400, 'the body must be a JSON object'])
    expect((await bad('{not json'))[0]).toBe(400)
  })
})
