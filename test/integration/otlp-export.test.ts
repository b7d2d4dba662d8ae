/**
 * `forge otlp-export` against a tiny OTLP/HTTP receiver on 127.0.0.1 (the outside, faked): what a
 * collector receives for a stored run, paged into requests, and how failures of the collector read.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { OtlpExportResult } from '../../app/otlp.js'
import type { OtlpTraceRequest } from '../../core/otlp.js'
import { resolveConfig } from '../../stack/config.js'
import { openClickHouse } from '../../store/clickhouse.js'
import { migrate } from '../../store/migrations.js'
import { forgeAsync } from '../helpers/stack.js'
import { storeSyntheticRun } from './report-fixture.js'

let home: string
let env: NodeJS.ProcessEnv
let receiver: Server
let url: string
let received: { path: string; headers: IncomingMessage['headers']; body: OtlpTraceRequest }[] = []
let answer: { status: number; body: string } = { status: 200, body: '{}' }

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'forge-otlp-'))
  env = { ...process.env, FORGE_HOME: home, FORGE_LOG_LEVEL: 'warn' }
  for (const key of ['FORGE_TEMPORAL_ADDRESS', 'FORGE_NATS_URL', 'FORGE_CLICKHOUSE_URL', 'OTEL_EXPORTER_OTLP_ENDPOINT']) delete env[key]
  const client = await openClickHouse({ kind: 'embedded', path: resolveConfig(env).storePath })
  await migrate(client)
  await storeSyntheticRun(client, 'ot1', ['alpha', 'beta'], 5)
  await client.close()
  receiver = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => (body += chunk.toString()))
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body: JSON.parse(body) as OtlpTraceRequest })
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body)
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`
})

afterEach(() => {
  received = []
  answer = { status: 200, body: '{}' }
})

afterAll(async () => {
  await new Promise<void>((resolve) => receiver.close(() => resolve()))
  rmSync(home, { recursive: true, force: true })
})

describe('forge otlp-export', () => {
  it('sends every attempt of a run as one trace, a page of attempts per request, parents resolved', async () => {
    const r = await forgeAsync(['otlp-export', '--run-id', 'ot1', '--endpoint', url, '--batch', '4', '--header', 'x-api-key=secret', '--json'], env)
    expect(r.status, r.stderr).toBe(0)
    const result = JSON.parse(r.stdout) as OtlpExportResult
    expect(result).toMatchObject({ url: `${url}/v1/traces`, attempts: 10, requests: 3, rejected_spans: 0, missing_traces: 0 })
    expect(received.map((x) => x.path)).toEqual(['/v1/traces', '/v1/traces', '/v1/traces'])
    expect(received[0]!.headers['content-type']).toBe('application/json')
    expect(received[0]!.headers['x-api-key']).toBe('secret')
    const spans = received.flatMap((x) => x.body.resourceSpans[0]!.scopeSpans[0]!.spans)
    expect(spans).toHaveLength(result.spans)
    const traces = new Map<string, typeof spans>()
    for (const span of spans) traces.set(span.traceId, [...(traces.get(span.traceId) ?? []), span])
    expect(traces.size).toBe(10)
    for (const trace of traces.values()) {
      const ids = new Set(trace.map((s) => s.spanId))
      expect(trace.filter((s) => s.parentSpanId === undefined)).toHaveLength(1)
      expect(trace.every((s) => s.parentSpanId === undefined || ids.has(s.parentSpanId))).toBe(true)
      expect(trace.every((s) => BigInt(s.endTimeUnixNano) >= BigInt(s.startTimeUnixNano))).toBe(true)
    }
    // synthetic attempt 0 of each task met one injected fault: an event on its tool span
    expect(spans.filter((s) => s.events.some((e) => e.name.startsWith('injected fault'))).length).toBeGreaterThan(0)
  })

  it('sends one attempt by uid, and the same ids a second time', async () => {
    const first = await forgeAsync(['otlp-export', '--attempt-uid', 'ot1/cfg/beta/2', '--endpoint', `${url}/v1/traces`], env)
    expect(first.status, first.stderr).toBe(0)
    expect(first.stdout).toMatch(/^sent \d+ spans of 1 attempts to http:\/\/127\.0\.0\.1:\d+\/v1\/traces in 1 request\(s\)$/m)
    await forgeAsync(['otlp-export', '--attempt-uid', 'ot1/cfg/beta/2', '--endpoint', url], env)
    const ids = received.map((x) => x.body.resourceSpans[0]!.scopeSpans[0]!.spans.map((s) => `${s.traceId}/${s.spanId}`))
    expect(ids[1]).toEqual(ids[0])
  })

  it('says what the collector answered when it refuses, and when it cannot be reached', async () => {
    answer = { status: 503, body: 'overloaded' }
    const refused = await forgeAsync(['otlp-export', '--run-id', 'ot1', '--endpoint', url], env)
    expect(refused.status).toBe(1)
    expect(refused.stderr).toContain(`the OTLP collector at ${url}/v1/traces answered 503 Service Unavailable: overloaded`)
    const unreachable = await forgeAsync(['otlp-export', '--run-id', 'ot1', '--endpoint', 'http://127.0.0.1:1'], env)
    expect(unreachable.status).toBe(1)
    expect(unreachable.stderr).toContain('cannot reach the OTLP collector at http://127.0.0.1:1/v1/traces')
    const bad = await forgeAsync(['otlp-export', '--run-id', 'ot1', '--endpoint', 'collector:4318'], env)
    expect(bad.status).toBe(2)
    expect(bad.stderr).toContain('--endpoint must be http or https, got "collector:4318"')
    const none = await forgeAsync(['otlp-export', '--run-id', 'ot1'], env)
    expect(none.status).toBe(2)
    expect(none.stderr).toContain('name the collector: --endpoint http://host:4318 (or set OTEL_EXPORTER_OTLP_ENDPOINT)')
  })

  it('counts spans the collector rejected in a partial success', async () => {
    answer = { status: 200, body: JSON.stringify({ partialSuccess: { rejectedSpans: '3', errorMessage: 'too old' } }) }
    const r = await forgeAsync(['otlp-export', '--attempt-uid', 'ot1/cfg/alpha/1', '--endpoint', url, '--json'], env)
    expect((JSON.parse(r.stdout) as OtlpExportResult).rejected_spans).toBe(3)
  })
})
