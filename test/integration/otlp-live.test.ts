/**
 * `forge run --otlp-url`: workers send each attempt's spans to a collector as the attempt finishes.
 * The collector is a tiny HTTP server on 127.0.0.1 (the outside, faked) that records every POST; the
 * stack, the workers and the CLI are real. A run is held open by an http agent that answers the first
 * attempts and holds the rest until the test releases them, so "while the run is in progress" never
 * depends on timing.
 */
import { spawn } from 'node:child_process'
import { rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { otlpSpanId, otlpTraceId, type OtlpKeyValue, type OtlpSpan, type OtlpTraceRequest } from '../../core/otlp.js'
import { packageRoot } from '../../stack/paths.js'
import { startService, type FakeService } from '../adapters/service.js'
import { forge, forgeAsync, startTestStack, type TestStack } from '../helpers/stack.js'
import { patientSmoke } from '../helpers/suites.js'

let stack: TestStack
let heldSuite: string

beforeAll(async () => {
  stack = await startTestStack('otlp-live')
  // smoke with a 10-minute duration budget, so a held attempt cannot time out and end the run on its own
  heldSuite = patientSmoke('forge-otlp-held-')
})
afterAll(async () => {
  rmSync(heldSuite, { recursive: true, force: true })
  await stack?.down()
})

/** A collector that records what it is sent and answers `status`. */
async function startCollector(status = 200): Promise<FakeService> {
  return startService({ 'POST /v1/traces': (_req, res) => void res.writeHead(status, { 'content-type': 'application/json' }).end(status === 200 ? '{}' : '{"error":"down for maintenance"}') })
}

const spansOf = (collector: FakeService): OtlpSpan[] =>
  collector.requests.filter((r) => r.path === '/v1/traces').flatMap((r) => (r.body as OtlpTraceRequest).resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((s) => s.spans)))
const attribute = (span: OtlpSpan, key: string): string | undefined => span.attributes.find((a: OtlpKeyValue) => a.key === key)?.value.stringValue

/** Spans grouped by the attempt_uid they name. */
function byAttempt(spans: OtlpSpan[]): Map<string, OtlpSpan[]> {
  const attempts = new Map<string, OtlpSpan[]>()
  for (const span of spans) {
    const uid = attribute(span, 'forge.attempt_uid')!
    attempts.set(uid, [...(attempts.get(uid) ?? []), span])
  }
  return attempts
}

/** Each attempt is one trace with the ids `forge otlp-export` gives it, one root, and every parent inside it. */
function expectWellFormed(attempts: Map<string, OtlpSpan[]>): void {
  for (const [uid, spans] of attempts) {
    expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([otlpTraceId(uid)]))
    for (const span of spans) expect(span.spanId).toBe(otlpSpanId(uid, attribute(span, 'forge.span_id')!))
    const ids = new Set(spans.map((s) => s.spanId))
    expect(ids.size).toBe(spans.length)
    expect(spans.filter((s) => s.parentSpanId === undefined).map((s) => attribute(s, 'forge.span_id'))).toEqual(['attempt'])
    for (const span of spans) if (span.parentSpanId !== undefined) expect(ids.has(span.parentSpanId), `${uid}: ${span.name}`).toBe(true)
    // tools and the agent hang under the attempt, not beside it
    expect(spans.length).toBeGreaterThan(2)
  }
}

async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

type TaskStats = { task_id: string; k: number; n: number }
const taskCounts = (runId: string): TaskStats[] =>
  (JSON.parse(forge(['stats', '--run-id', runId, '--json'], stack.env).stdout) as { tasks: TaskStats[] }).tasks.map(({ task_id, k, n }) => ({ task_id, k, n }))

describe('forge run --otlp-url', () => {
  it("sends every finished attempt's spans while the run is still in progress", async () => {
    const collector = await startCollector()
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    let invoked = 0
    const agent = await startService({
      'POST /reset': (_req, res) => void res.writeHead(204).end(),
      'POST /invoke': async (_req, res) => {
        if (++invoked > 5) await gate
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ output: 'done' }))
      },
    })
    const args = ['run', '--suite', heldSuite, '--attempts', '2', '--adapter', 'http', '--adapter-config', JSON.stringify({ base_url: agent.url }), '--concurrency', '5', '--run-id', 'otlp-live', '--otlp-url', collector.url]
    const run = spawn(process.execPath, [join(packageRoot(), 'bin', 'run.js'), ...args], { env: stack.env, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    run.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    run.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
    const exited = new Promise<number>((resolve) => run.once('exit', (code) => resolve(code ?? -1)))
    try {
      // the first 5 attempts finish; the other 5 wait at the gate, so the run cannot end meanwhile
      for (let i = 0; i < 600 && byAttempt(spansOf(collector)).size < 5 && run.exitCode === null; i++) await sleep(100)
      const during = byAttempt(spansOf(collector))
      expect(run.exitCode, output).toBeNull()
      expect(during.size).toBe(5)
      expect([...during.keys()].every((uid) => uid.startsWith('otlp-live/'))).toBe(true)
      expectWellFormed(during)
    } finally {
      release()
    }
    expect(await exited, output).toBe(0)
    const after = byAttempt(spansOf(collector))
    expect(after.size).toBe(10)
    expectWellFormed(after)
    const spans = spansOf(collector).length
    expect(output).toContain(`OTLP: ${spans} span(s) of 10/10 attempt(s) exported to ${collector.url}/v1/traces`)
    expect(output).not.toMatch(/export\(s\) failed/)
    await agent.close()
    await collector.close()
  })

  it('keeps the run and its results when the collector answers 500, and says how many exports failed', async () => {
    const collector = await startCollector(500)
    const plain = forge(['run', '--suite', 'smoke', '--attempts', '3', '--seed', 'otlp', '--run-id', 'otlp-plain'], stack.env)
    expect(plain.status, plain.stderr).toBe(0)
    // not spawnSync: the collector answers from this process's event loop
    const r = await forgeAsync(['run', '--suite', 'smoke', '--attempts', '3', '--seed', 'otlp', '--run-id', 'otlp-500', '--otlp-url', collector.url, '--json'], stack.env, 180_000)
    expect(r.status, r.stderr).toBe(0)
    const report = JSON.parse(r.stdout) as { otlp: { failed_requests: number; settled_attempts: number; exported_spans: number; attempts: number; first_error: string } }
    expect(collector.requests.length).toBeGreaterThan(0)
    expect(report.otlp).toMatchObject({ attempts: 15, settled_attempts: 15, exported_spans: 0, failed_requests: collector.requests.length })
    expect(report.otlp.first_error).toMatch(/answered 500/)
    expect(r.stderr).toContain(`${collector.requests.length} export(s) failed`)
    expect(taskCounts('otlp-500')).toEqual(taskCounts('otlp-plain'))
    await collector.close()
  })

  it('keeps the run when no collector listens, and says so once at the end', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`
    const r = forge(['run', '--suite', 'smoke', '--attempts', '2', '--seed', 'otlp', '--run-id', 'otlp-down', '--otlp-url', url], stack.env)
    expect(r.status, r.stderr).toBe(0)
    const lines = r.stdout.split('\n').filter((line) => line.includes('OTLP:'))
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/OTLP: 0 span\(s\) of 0\/10 attempt\(s\) exported to .*; \d+ export\(s\) failed \(\d+ span\(s\)\) — first error: cannot reach the OTLP collector/)
    expect(taskCounts('otlp-down').reduce((n, t) => n + t.n, 0)).toBe(10)
  })

  it('refuses an --otlp-url that is no http(s) URL, naming the flag', async () => {
    const r = await forgeAsync(['run', '--suite', 'smoke', '--otlp-url', 'collector:4318'], stack.env)
    expect(r.status).toBe(2)
    expect(r.stderr).toContain('--otlp-url must be http or https, got "collector:4318"')
  })
})
