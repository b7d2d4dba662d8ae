/** The per-attempt HTTP tool endpoint: token, routes, recording through the tool box. */
import { request as httpRequest } from 'node:http'
import { afterEach, describe, expect, it } from 'vitest'
import { createToolBox, type RecordingToolBox } from '../../engine/tool-proxy.js'
import { MAX_REFUSED_REQUESTS, startToolEndpoint, type ToolEndpoint } from '../../engine/tools/endpoint.js'
import { toolSuite } from './helpers.js'

let endpoint: ToolEndpoint | undefined
afterEach(async () => {
  await endpoint?.close()
  endpoint = undefined
})

async function setUp(opts: { maxBodyBytes?: number; maxListings?: number } = {}): Promise<{ endpoint: ToolEndpoint; box: RecordingToolBox; executions: () => number }> {
  const { suite, task, executions } = toolSuite()
  const box = createToolBox({ task, suite, attemptUid: 'r/c/task_one/0', budget: task.budget, startedAt: 0, now: () => 0 })
  endpoint = await startToolEndpoint(box, opts)
  return { endpoint, box, executions }
}

async function request(url: string, init: { method?: string; token?: string | undefined; body?: string } = {}): Promise<{ status: number; body: unknown }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (init.token !== undefined) headers['authorization'] = `Bearer ${init.token}`
  const res = await fetch(url, { method: init.method ?? 'GET', headers, ...(init.body !== undefined ? { body: init.body } : {}) })
  return { status: res.status, body: await res.json() }
}

describe('tool endpoint', () => {
  it('listens on 127.0.0.1 with a 64-hex-digit token that differs per endpoint', async () => {
    const { endpoint: first } = await setUp()
    const { suite, task } = toolSuite()
    const second = await startToolEndpoint(createToolBox({ task, suite, attemptUid: 'x', budget: task.budget, startedAt: 0 }))
    try {
      expect(first.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/tools$/)
      expect(first.token).toMatch(/^[0-9a-f]{64}$/)
      expect(second.token).not.toBe(first.token)
      expect(second.url).not.toBe(first.url)
    } finally {
      await second.close()
    }
  })

  it('lists the allowlisted tool specs', async () => {
    const { endpoint } = await setUp()
    const { status, body } = await request(endpoint.url, { token: endpoint.token })
    expect(status).toBe(200)
    expect((body as { tools: Array<{ name: string }> }).tools.map((t) => t.name)).toEqual(['upper', 'flaky'])
  })

  it('runs a call through the tool box, which records it', async () => {
    const { endpoint, box } = await setUp()
    expect(await request(`${endpoint.url}/upper`, { method: 'POST', token: endpoint.token, body: '{"value":"abc"}' })).toEqual({ status: 200, body: { ok: true, result: 'ABC' } })
    expect(await request(`${endpoint.url}/flaky`, { method: 'POST', token: endpoint.token, body: '{"value":"x"}' })).toEqual({
      status: 200,
      body: { ok: false, error: 'service unavailable' },
    })
    expect(box.calls.map(({ name, args, result, error }) => ({ name, args, result, error }))).toEqual([
      { name: 'upper', args: { value: 'abc' }, result: 'ABC', error: undefined },
      { name: 'flaky', args: { value: 'x' }, result: undefined, error: 'service unavailable' },
    ])
  })

  it('rejects a missing or wrong token with 401 on every route, recording nothing', async () => {
    const { endpoint, box, executions } = await setUp()
    const wrong = endpoint.token.replace(/.$/, (c) => (c === '0' ? '1' : '0'))
    const attempts = [
      await request(`${endpoint.url}/upper`, { method: 'POST', body: '{"value":"abc"}' }),
      await request(`${endpoint.url}/upper`, { method: 'POST', token: wrong, body: '{"value":"abc"}' }),
      await request(`${endpoint.url}/upper`, { method: 'POST', token: `${endpoint.token}0`, body: '{"value":"abc"}' }),
      await request(endpoint.url, { token: 'guess' }),
      await request(endpoint.url.replace('/tools', '/anything'), {}),
    ]
    expect(attempts.map((a) => a.status)).toEqual([401, 401, 401, 401, 401])
    expect(box.calls).toEqual([])
    expect(executions()).toBe(0)
  })

  it('records an unknown tool as hallucinated and a non-JSON body as a malformed call', async () => {
    const { endpoint, box, executions } = await setUp()
    await request(`${endpoint.url}/search`, { method: 'POST', token: endpoint.token, body: '{"q":"x"}' })
    await request(`${endpoint.url}/upper`, { method: 'POST', token: endpoint.token, body: 'value=abc' })
    expect(box.calls.map((c) => [c.name, c.args, c.refused])).toEqual([
      ['search', { q: 'x' }, 'hallucinated_tool'],
      ['upper', 'value=abc', 'malformed_tool_call'],
    ])
    expect(executions()).toBe(0)
  })

  it('answers unknown routes, wrong methods and oversized bodies without calling tools', async () => {
    const { endpoint, box } = await setUp({ maxBodyBytes: 64 })
    const base = endpoint.url.replace(/\/tools$/, '')
    expect((await request(`${base}/other`, { token: endpoint.token })).status).toBe(404)
    expect((await request(endpoint.url, { method: 'POST', token: endpoint.token, body: '{}' })).status).toBe(405)
    expect((await request(`${endpoint.url}/upper`, { token: endpoint.token })).status).toBe(405)
    expect((await request(`${endpoint.url}/upper`, { method: 'POST', token: endpoint.token, body: JSON.stringify({ value: 'x'.repeat(100) }) })).status).toBe(413)
    expect(box.calls).toEqual([])
  })

  it(`closes for the rest of the attempt after ${MAX_REFUSED_REQUESTS} refused requests, answering the last; listings are not refused`, async () => {
    const { endpoint, box } = await setUp()
    // wrong tokens and unknown routes alike: none is a tool call, each costs the worker a request
    for (let i = 0; i < MAX_REFUSED_REQUESTS; i++) {
      const r = i % 2 === 0 ? await request(endpoint.url, { token: 'wrong' }) : await request(`${endpoint.url.replace('/tools', '')}/nope`, { token: endpoint.token })
      expect(r.status).toBe(i % 2 === 0 ? 401 : 404)
      // a listing between them does not count
      expect((await request(endpoint.url, { token: endpoint.token })).status).toBe(200)
    }
    expect((await request(endpoint.url, { token: 'wrong' })).status).toBe(401)
    await expect(fetch(endpoint.url, { headers: { authorization: `Bearer ${endpoint.token}` } })).rejects.toThrow()
    expect(box.calls).toEqual([])
  })

  it('answers a body over the limit at once, without reading the rest, and closes the connection', async () => {
    const { endpoint, box } = await setUp({ maxBodyBytes: 64 })
    // a client that would send 256 MiB: the endpoint must not read it all before it answers
    const total = 256 * 1024 * 1024
    const chunk = Buffer.alloc(64 * 1024, 0x61)
    const { status, writtenWhenAnswered } = await new Promise<{ status: number; writtenWhenAnswered: number }>((resolve, reject) => {
      let written = 0
      const req = httpRequest(`${endpoint.url}/upper`, { method: 'POST', headers: { authorization: `Bearer ${endpoint.token}`, 'content-length': String(total) } }, (res) => {
        resolve({ status: res.statusCode ?? 0, writtenWhenAnswered: written })
        res.resume()
      })
      req.on('error', () => undefined)
      const pump = (): void => {
        while (written < total && !req.destroyed) {
          written += chunk.length
          if (!req.write(chunk)) return void req.once('drain', pump)
        }
        if (written >= total) req.end()
      }
      req.once('error', reject)
      pump()
    })
    expect(status).toBe(413)
    expect(writtenWhenAnswered).toBeLessThan(64 * 1024 * 1024)
    expect(box.calls).toEqual([])
  })

  it('refuses listings past maxListings, and they count toward the refused requests', async () => {
    const { endpoint } = await setUp({ maxListings: 3 })
    const statuses: number[] = []
    for (let i = 0; i < 5; i++) statuses.push((await request(endpoint.url, { token: endpoint.token })).status)
    expect(statuses).toEqual([200, 200, 200, 429, 429])
    for (let i = 2; i < MAX_REFUSED_REQUESTS; i++) expect((await request(endpoint.url, { token: endpoint.token })).status).toBe(429)
    // the 101st refusal is answered, then the endpoint is gone
    expect((await request(endpoint.url, { token: endpoint.token })).body).toEqual({ ok: false, error: 'more than 3 tool listings in one attempt' })
    await expect(fetch(endpoint.url, { headers: { authorization: `Bearer ${endpoint.token}` } })).rejects.toThrow()
  })

  it('records a body nested too deep as a malformed call, never parsing it', async () => {
    const { endpoint, box, executions } = await setUp()
    const deep = '['.repeat(100_000)
    const r = await request(`${endpoint.url}/upper`, { method: 'POST', token: endpoint.token, body: deep })
    expect(r.status).toBe(200)
    expect(executions()).toBe(0)
    expect(box.calls.map((c) => [c.name, c.args === deep])).toEqual([['upper', true]])
  })

  it('refuses connections once closed', async () => {
    const { endpoint } = await setUp()
    await endpoint.close()
    await expect(fetch(endpoint.url, { headers: { authorization: `Bearer ${endpoint.token}` } })).rejects.toThrow()
  })
})
