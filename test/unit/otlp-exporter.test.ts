/** The live OTLP exporter against a tiny collector on 127.0.0.1: batching, the bounded queue, failures counted. */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { StoredTrace, type AttemptResult } from '../../core/contracts/index.js'
import type { OtlpExportCounts, OtlpTraceRequest } from '../../core/otlp.js'
import { createOtlpExporter } from '../../workers/otlp-exporter.js'

function attempt(n: number): { stored: StoredTrace; result: AttemptResult } {
  const uid = `r/c/t/${n}`
  const stored = StoredTrace.parse({
    attempt_uid: uid, run_id: 'r', config_id: 'c', suite: 's', task_id: 't', attempt: n, outcome: 'pass', validity: 'valid', failure_bucket: null, grades: [], invariants: [],
    trace: {
      output: 'x',
      tool_calls: [],
      spans: [
        { span_id: 'attempt', parent_span_id: null, category: 'attempt', name: uid, start_ms: 0, duration_ms: 20, attributes: {} },
        { span_id: 'agent', parent_span_id: 'attempt', category: 'agent', name: 'mock', start_ms: 1, duration_ms: 10, attributes: {} },
      ],
      usage: { input_tokens: 1, output_tokens: 1 },
      duration_ms: 10,
    },
    stored_at: 0,
  })
  const result = { attempt_uid: uid, run_id: 'r', task_id: 't', attempt: n, model: 'mock', cost_usd: null, latency_ms: 10, input_tokens: 1, output_tokens: 1, started_at: 1_764_470_000_000 } as AttemptResult
  return { stored, result }
}

let server: Server | undefined
afterEach(async () => {
  if (server) await new Promise<void>((resolve) => server!.close(() => resolve()))
  server = undefined
})

/** A collector that holds each request until the test lets it answer `status`. */
async function collector(status: number): Promise<{ url: string; bodies: OtlpTraceRequest[]; answer(): void; waiting(): number }> {
  const bodies: OtlpTraceRequest[] = []
  const pending: (() => void)[] = []
  server = createServer((req, res) => {
    let body = ''
    req.on('data', (c: Buffer) => (body += c.toString()))
    req.on('end', () => {
      bodies.push(JSON.parse(body) as OtlpTraceRequest)
      pending.push(() => res.writeHead(status).end('{}'))
    })
  })
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`,
    bodies,
    answer: () => pending.shift()?.(),
    waiting: () => pending.length,
  }
}

const until = async (condition: () => boolean) => {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve))
}

describe('live OTLP exporter', () => {
  it('sends one request at a time, and what waited meanwhile goes whole into the next', async () => {
    const c = await collector(200)
    const reports: OtlpExportCounts[] = []
    const exporter = createOtlpExporter({ url: c.url, version: 't', report: (_run, counts) => reports.push(counts) })
    const first = attempt(0)
    exporter.add(first.stored, first.result)
    await until(() => c.waiting() === 1)
    for (const n of [1, 2, 3]) {
      const a = attempt(n)
      exporter.add(a.stored, a.result)
    }
    c.answer()
    await until(() => c.waiting() === 1)
    c.answer()
    await exporter.flush()
    const traces = c.bodies.map((b) => new Set(b.resourceSpans[0]!.scopeSpans[0]!.spans.map((s) => s.traceId)).size)
    expect(traces).toEqual([1, 3])
    expect(exporter.counts('r')).toMatchObject({ settled_attempts: 4, exported_attempts: 4, exported_spans: 8, failed_requests: 0, dropped_spans: 0 })
    expect(reports.map((r) => r.settled_attempts)).toEqual([1, 4])
  })

  it('drops what does not fit its queue and counts failed requests, never throwing', async () => {
    const c = await collector(500)
    const exporter = createOtlpExporter({ url: c.url, version: 't', maxQueueSpans: 2 })
    const attempts = [0, 1, 2].map(attempt)
    exporter.add(attempts[0]!.stored, attempts[0]!.result)
    await until(() => c.waiting() === 1)
    // the first is in flight (out of the queue); the second fills the queue, the third is dropped
    exporter.add(attempts[1]!.stored, attempts[1]!.result)
    exporter.add(attempts[2]!.stored, attempts[2]!.result)
    c.answer()
    await until(() => c.waiting() === 1)
    c.answer()
    await exporter.flush()
    expect(exporter.counts('r')).toMatchObject({ settled_attempts: 3, exported_spans: 0, failed_requests: 2, failed_spans: 4, dropped_spans: 2 })
    expect(exporter.counts('r').first_error).toMatch(/export queue was full/)
  })
})
