/**
 * The health endpoint every process role serves when FORGE_HEALTH_PORT is set (always in the
 * container image; off by default on a developer's machine): `/healthz` (liveness: the process is
 * not wedged), `/readyz` (readiness: connected and taking work; false while draining) and `/metrics`
 * (Prometheus text, for a ServiceMonitor or the HPA's metrics adapter).
 */
import { readSetting } from '../config/index.js'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { renderPrometheus, type MetricFamily } from '../core/prometheus.js'

export interface HealthProbe {
  /** false only when the process cannot recover by itself (Kubernetes restarts it) */
  live(): boolean
  /** true while the process takes new work; false during start-up and draining */
  ready(): boolean | Promise<boolean>
  /** shown in the JSON body of /healthz and /readyz */
  detail?(): Record<string, unknown>
}

export interface HealthServerOptions {
  port: number
  /** default 0.0.0.0 (the kubelet probes the pod IP) */
  host?: string
  /** worker, judge, ingester, … (a label on forge_up) */
  role: string
  probe: HealthProbe
  metrics: () => MetricFamily[] | Promise<MetricFamily[]>
}

export interface HealthServer {
  /** the bound port (useful with port 0) */
  port: number
  close(): Promise<void>
}

/** Thrown when FORGE_HEALTH_PORT (or FORGE_HEALTH_HOST) is not a usable value. */
export class HealthConfigError extends Error {
  override name = 'HealthConfigError'
}

/** The port from FORGE_HEALTH_PORT; undefined (no endpoint) when it is unset or empty. */
export function healthPortFrom(env: NodeJS.ProcessEnv = process.env): number | undefined {
  return readSetting('healthPort', env)
}

const startedAt = Date.now()

export async function startHealthServer(opts: HealthServerOptions): Promise<HealthServer> {
  const server = createServer((req, res) => {
    void answer(opts, req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' })
      res.end(`health endpoint error: ${(error as Error).message}\n`)
    })
  })
  // a probe must never keep a draining process alive
  server.keepAliveTimeout = 1_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(new HealthConfigError(`cannot serve the health endpoint on ${opts.host ?? '0.0.0.0'}:${opts.port}: ${error.message}`, { cause: error })),
    )
    server.listen(opts.port, opts.host ?? '0.0.0.0', () => resolve())
  })
  server.unref()
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

async function answer(opts: HealthServerOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0]
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD' }).end()
    return
  }
  if (path === '/healthz' || path === '/livez') {
    const live = opts.probe.live()
    json(res, live ? 200 : 503, { role: opts.role, live, ...opts.probe.detail?.() })
    return
  }
  if (path === '/readyz') {
    const ready = await opts.probe.ready()
    json(res, ready ? 200 : 503, { role: opts.role, ready, ...opts.probe.detail?.() })
    return
  }
  if (path === '/metrics') {
    const [families, ready] = await Promise.all([opts.metrics(), opts.probe.ready()])
    const body = renderPrometheus([...processMetrics(opts.role, ready), ...families])
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(body)
    return
  }
  res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try /healthz, /readyz or /metrics\n')
}

function json(res: ServerResponse, status: number, body: Record<string, unknown>): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(`${JSON.stringify(body)}\n`)
}

function processMetrics(role: string, ready: boolean): MetricFamily[] {
  const cpu = process.cpuUsage()
  return [
    { name: 'forge_up', help: 'The process role serves its health endpoint.', type: 'gauge', samples: [{ labels: { role }, value: 1 }] },
    { name: 'forge_ready', help: '1 while the process takes new work, 0 while starting or draining.', type: 'gauge', samples: [{ labels: { role }, value: ready ? 1 : 0 }] },
    { name: 'process_resident_memory_bytes', help: 'Resident set size in bytes.', type: 'gauge', samples: [{ value: process.memoryUsage.rss() }] },
    { name: 'process_cpu_seconds_total', help: 'User and system CPU time spent, in seconds.', type: 'counter', samples: [{ value: (cpu.user + cpu.system) / 1e6 }] },
    { name: 'process_start_time_seconds', help: 'Start time of the process since the Unix epoch, in seconds.', type: 'gauge', samples: [{ value: Math.floor(startedAt / 1000) }] },
  ]
}
