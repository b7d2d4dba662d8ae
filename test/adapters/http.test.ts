/** The http adapter against a fake agent service: reset, invoke, degraded isolation, timeouts, scope. */
import { afterEach, describe, expect, it } from 'vitest'
import { httpAdapter, responseOutput, serviceUrl } from '../../engine/adapters/http.js'
import { attempt, toolSuite } from './helpers.js'
import { callTool, json, startService, type FakeService, type Handler } from './service.js'

const services: FakeService[] = []
afterEach(async () => {
  await Promise.all(services.splice(0).map((s) => s.close()))
})

async function service(routes: Record<string, Handler>): Promise<FakeService> {
  const s = await startService(routes)
  services.push(s)
  return s
}

/** An agent service that upper-cases the input through the harness's tool endpoint. */
const solving: Handler = async (req, res) => {
  const body = req.body as { payload: { input: { value: string } } }
  const reply = await callTool(req.body, 'upper', { value: body.payload.input.value })
  json(res, 200, { output: reply.result, self_report: 'called upper once' })
}

const never: Handler = () => undefined

describe('http adapter', () => {
  it('resets, then invokes with the payload and the tool endpoint; tool calls go through the harness', async () => {
    const svc = await service({ 'POST /reset': (_req, res) => json(res, 200, {}), 'POST /invoke': solving })
    const { suite, task } = toolSuite()
    const { result } = await attempt(httpAdapter, { base_url: svc.url }, suite, task)
    expect([result.outcome, result.validity, result.output, result.self_report, result.error]).toEqual(['pass', 'valid', 'ABC', 'called upper once', ''])
    expect(svc.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /reset', 'POST /invoke'])
    const invoke = svc.requests[1]!.body as Record<string, unknown>
    expect(Object.keys(invoke).sort()).toEqual(['payload', 'protocol', 'tools'])
    expect(invoke['tools']).toEqual({ url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/tools$/), token: expect.stringMatching(/^[0-9a-f]{64}$/) })
    expect(result.tool_calls.map(({ name, args, result: r }) => ({ name, args, result: r }))).toEqual([{ name: 'upper', args: { value: 'abc' }, result: 'ABC' }])
  })

  it.each([
    ['404', 404, 'the service has no reset (POST {url}/reset → 404)'],
    ['405', 405, 'the service has no reset (POST {url}/reset → 405)'],
    ['500', 500, 'the reset failed (POST {url}/reset → 500)'],
  ])('records degraded isolation when the reset answers %s, and still runs the attempt', async (_label, status, reason) => {
    const svc = await service({ 'POST /reset': (_req, res) => json(res, status, {}), 'POST /invoke': solving })
    const { suite, task } = toolSuite()
    const { result, trace } = await attempt(httpAdapter, { base_url: svc.url }, suite, task)
    const message = `${reason.replace('{url}', svc.url)}: attempts may share state`
    expect([result.outcome, result.validity, result.failure_bucket, result.error]).toEqual(['pass', 'degraded', null, `isolation: ${message}`])
    expect(trace.isolation_degraded).toBe(message)
  })

  it('records degraded isolation for a service with no reset route at all', async () => {
    const svc = await service({ 'POST /invoke': solving })
    const { suite, task } = toolSuite()
    const { result } = await attempt(httpAdapter, { base_url: svc.url }, suite, task)
    expect([result.outcome, result.validity]).toEqual(['pass', 'degraded'])
  })

  it('gives up on an invoke after timeout_ms and records it as the agent not answering', async () => {
    const svc = await service({ 'POST /reset': (_req, res) => json(res, 200, {}), 'POST /invoke': never })
    const { suite, task } = toolSuite()
    const started = performance.now()
    const { result } = await attempt(httpAdapter, { base_url: svc.url, timeout_ms: 300 }, suite, task)
    const elapsed = performance.now() - started
    expect([result.outcome, result.validity, result.failure_bucket, result.budget_limit]).toEqual(['fail', 'valid', 'no_answer', null])
    expect(result.error).toBe(`timeout: no answer from ${svc.url}/invoke within 300 ms`)
    expect(elapsed).toBeGreaterThanOrEqual(300)
    expect(elapsed).toBeLessThan(2_000)
  })

  it('cuts the invoke at the attempt deadline', async () => {
    const svc = await service({ 'POST /reset': (_req, res) => json(res, 200, {}), 'POST /invoke': never })
    const { suite, task } = toolSuite({ budget: { max_tool_calls: 5, max_retries_per_tool: 2, max_duration_ms: 400 } })
    const started = performance.now()
    const { result } = await attempt(httpAdapter, { base_url: svc.url }, suite, task)
    expect([result.outcome, result.failure_bucket, result.budget_limit]).toEqual(['fail', 'budget_exhausted', 'max_duration_ms'])
    expect(performance.now() - started).toBeLessThan(400 + 1_000)
  })

  it('stops a service that keeps calling tools after the budget refused it; nothing runs past max_tool_calls', async () => {
    let refusals = 0
    const looping: Handler = async (req, res) => {
      // a service that ignores every refusal; it stops only when the harness hangs up
      for (let i = 0; i < 1_000 && !res.destroyed; i += 1) {
        const reply = await callTool(req.body, 'upper', { value: `v${i}` }).catch(() => ({ ok: false, error: 'gone' }))
        if (!reply.ok) refusals += 1
        if (reply.error === 'gone') break
      }
      json(res, 200, { output: 'never seen' })
    }
    const svc = await service({ 'POST /reset': (_req, res) => json(res, 200, {}), 'POST /invoke': looping })
    const { suite, task, executions } = toolSuite({ budget: { max_tool_calls: 4, max_retries_per_tool: 2, max_duration_ms: 10_000 } })
    const { result } = await attempt(httpAdapter, { base_url: svc.url }, suite, task)
    expect([result.outcome, result.failure_bucket, result.budget_limit]).toEqual(['fail', 'budget_exhausted', 'max_tool_calls'])
    expect(executions()).toBe(4)
    expect(result.tool_calls.map((c) => c.refused ?? 'ran')).toEqual(['ran', 'ran', 'ran', 'ran', 'budget_exhausted', 'budget_exhausted'])
    expect(result.error).toBe('stopped: agent service kept calling tools after its budget was exhausted; stopped')
    expect(refusals).toBeGreaterThanOrEqual(1)
  })

  it('never follows a redirect away from the base URL', async () => {
    const elsewhere = await service({ 'POST /invoke': solving })
    const svc = await service({
      'POST /reset': (_req, res) => json(res, 200, {}),
      'POST /invoke': (_req, res) => void res.writeHead(307, { location: `${elsewhere.url}/invoke` }).end(),
    })
    const { suite, task } = toolSuite()
    const { result } = await attempt(httpAdapter, { base_url: svc.url }, suite, task)
    expect(elsewhere.requests).toEqual([])
    expect([result.outcome, result.validity, result.failure_bucket]).toEqual(['fail', 'invalid', 'harness_error'])
    expect(result.error).toMatch(new RegExp(`^adapter "http" threw: http adapter: POST ${svc.url}/invoke failed: fetch failed`))
  })

  it('reads a text answer through the fallback parser and a non-2xx answer as the agent failing', async () => {
    const svc = await service({
      'POST /reset': (_req, res) => json(res, 200, {}),
      'POST /invoke': (_req, res) => void res.writeHead(200, { 'content-type': 'text/plain' }).end('Thinking...\nFinal answer: ABC'),
    })
    const { suite, task } = toolSuite()
    expect((await attempt(httpAdapter, { base_url: svc.url }, suite, task)).result.outcome).toBe('pass')
    const failing = await service({ 'POST /reset': (_req, res) => json(res, 200, {}), 'POST /invoke': (_req, res) => json(res, 502, { error: 'upstream' }) })
    const { result } = await attempt(httpAdapter, { base_url: failing.url }, suite, task)
    expect([result.outcome, result.validity, result.failure_bucket, result.error]).toEqual([
      'fail',
      'valid',
      'no_answer',
      `agent_http_error: POST ${failing.url}/invoke → 502: {"error":"upstream"}`,
    ])
  })

  it('counts a service that does not answer at all as a harness error (degraded reset, failed invoke)', async () => {
    const gone = await service({})
    const url = gone.url
    await gone.close()
    const { suite, task } = toolSuite()
    const { result } = await attempt(httpAdapter, { base_url: url }, suite, task)
    expect([result.outcome, result.validity, result.failure_bucket]).toEqual(['fail', 'invalid', 'harness_error'])
    expect(result.error).toMatch(/^adapter "http" threw: http adapter: POST http:\/\/127\.0\.0\.1:\d+\/invoke failed: fetch failed: connect ECONNREFUSED/)
  })
})

describe('serviceUrl', () => {
  it('joins paths under the base URL, its path prefix included', () => {
    expect(serviceUrl('http://127.0.0.1:8080', '/invoke')).toBe('http://127.0.0.1:8080/invoke')
    expect(serviceUrl('http://agents.internal/v2', '/reset')).toBe('http://agents.internal/v2/reset')
    expect(serviceUrl('http://agents.internal/v2/', 'invoke?mode=eval')).toBe('http://agents.internal/v2/invoke?mode=eval')
  })

  it('reads a protocol-relative path as a path under the base', () => {
    expect(serviceUrl('http://agents.internal/v2', '//evil.example/invoke')).toBe('http://agents.internal/v2/evil.example/invoke')
  })

  it.each(['http://evil.example/invoke', '../admin', '/v2/../../admin', 'https://agents.internal/v2/invoke'])(
    'refuses a path that leaves the base URL: %s',
    (path) => {
      expect(() => serviceUrl('http://agents.internal/v2', path)).toThrow(/leaves the configured base URL http:\/\/agents\.internal\/v2/)
    },
  )
})

describe('responseOutput', () => {
  it('takes {output, self_report, refused}, other JSON whole, and text through the parser', () => {
    expect(responseOutput('{"output":"x","self_report":"s","refused":true}', 'application/json')).toEqual({ output: 'x', self_report: 's', refused: true })
    expect(responseOutput('{"answer":42}', 'application/json')).toEqual({ output: { answer: 42 } })
    expect(responseOutput('{"output":"Answer: 7"}', 'application/json')).toEqual({ output: '7' })
    expect(responseOutput('plain words', 'text/plain')).toEqual({ output: 'plain words' })
  })
})
