import { describe, expect, it } from 'vitest'
import { ConfigError } from '../../core/errors.js'
import { HealthConfigError, healthPortFrom, startHealthServer } from '../../workers/health.js'
import { createWorkerTelemetry } from '../../workers/worker-telemetry.js'
import { httpGet, metricValue } from '../helpers/fleet.js'

describe('health endpoint', () => {
  it('answers liveness, readiness (false while draining) and metrics, and nothing else', async () => {
    const telemetry = createWorkerTelemetry()
    let live = true
    const server = await startHealthServer({
      port: 0,
      host: '127.0.0.1',
      role: 'worker',
      probe: { live: () => live, ready: () => !telemetry.draining, detail: () => ({ worker_id: 'w1' }) },
      metrics: () => telemetry.metrics(),
    })
    try {
      expect(await httpGet(server.port, '/healthz')).toEqual({ status: 200, body: '{"role":"worker","live":true,"worker_id":"w1"}\n' })
      expect(await httpGet(server.port, '/readyz')).toEqual({ status: 200, body: '{"role":"worker","ready":true,"worker_id":"w1"}\n' })
      telemetry.draining = true
      expect((await httpGet(server.port, '/readyz'))?.status).toBe(503)
      const metrics = (await httpGet(server.port, '/metrics'))!
      expect(metrics.status).toBe(200)
      expect(metricValue(metrics.body, 'forge_up', '{role="worker"}')).toBe(1)
      expect(metricValue(metrics.body, 'forge_ready', '{role="worker"}')).toBe(0)
      expect(metricValue(metrics.body, 'forge_worker_draining')).toBe(1)
      expect(metricValue(metrics.body, 'process_resident_memory_bytes')).toBeGreaterThan(0)
      live = false
      expect((await httpGet(server.port, '/healthz'))?.status).toBe(503)
      expect(await httpGet(server.port, '/nope')).toEqual({ status: 404, body: 'not found: try /healthz, /readyz or /metrics\n' })
    } finally {
      await server.close()
    }
  })

  it('reads FORGE_HEALTH_PORT, off when unset, with a clear error for a bad value or a taken port', async () => {
    expect(healthPortFrom({})).toBeUndefined()
    expect(healthPortFrom({ FORGE_HEALTH_PORT: '' })).toBeUndefined()
    expect(healthPortFrom({ FORGE_HEALTH_PORT: '9464' })).toBe(9464)
    expect(() => healthPortFrom({ FORGE_HEALTH_PORT: 'http' })).toThrow(new ConfigError('FORGE_HEALTH_PORT must be a whole number from 0 to 65535, got "http"'))
    expect(() => healthPortFrom({ FORGE_HEALTH_PORT: '70000' })).toThrow('got "70000"')
    const first = await startHealthServer({ port: 0, host: '127.0.0.1', role: 'x', probe: { live: () => true, ready: () => true }, metrics: () => [] })
    try {
      await expect(startHealthServer({ port: first.port, host: '127.0.0.1', role: 'x', probe: { live: () => true, ready: () => true }, metrics: () => [] })).rejects.toThrow(
        `cannot serve the health endpoint on 127.0.0.1:${first.port}`,
      )
    } finally {
      await first.close()
    }
  })
})

describe('worker telemetry', () => {
  const ctx = (activityType: string) => ({ info: { activityType } }) as never

  it('counts finished attempts by outcome, harness errors, judge activities, failures and what is in flight', async () => {
    const telemetry = createWorkerTelemetry()
    const run = (type: string, next: () => Promise<unknown>) => telemetry.interceptor(ctx(type)).inbound!.execute!({ args: [], headers: {} }, next)
    await run('runAttempt', async () => ({ attempt_uid: 'a', outcome: 'pass', failure_bucket: null }))
    await run('runAttempt', async () => ({ attempt_uid: 'b', outcome: 'fail', failure_bucket: 'harness_error' }))
    await run('runAttempt', async () => ({ attempt_uid: 'c', outcome: 'fail', failure_bucket: 'wrong_answer' }))
    await run('judgeAttempt', async () => ({ attempt_uid: 'a', tier2: 'not_run' }))
    await run('recordRunStatus', async () => 1)
    await expect(run('runAttempt', async () => Promise.reject(new Error('nats down')))).rejects.toThrow('nats down')
    let release!: () => void
    const pending = run('runAttempt', () => new Promise((resolve) => (release = () => resolve({ outcome: 'pass', failure_bucket: null }))))
    expect(telemetry.counts()).toEqual({ attempts: { pass: 1, fail: 2 }, harness_errors: 1, in_flight: 1, activity_failures: { runAttempt: 1 }, judged: 1 })
    release()
    await pending
    expect(telemetry.counts().in_flight).toBe(0)
    const families = await telemetry.metrics()
    expect(families.find((f) => f.name === 'forge_attempts_total')!.samples).toEqual([
      { labels: { outcome: 'fail' }, value: 2 },
      { labels: { outcome: 'pass' }, value: 2 },
    ])
    // no backlog source configured: no backlog gauge rather than a made-up zero
    expect(families.some((f) => f.name === 'forge_task_queue_backlog')).toBe(false)
  })
})
