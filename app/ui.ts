/**
 * `forge ui`: a local, read-only web view over the store (node:http): runs → run → task → attempt
 * (its trace). Every page is one bounded query aggregated or keyset-paged in ClickHouse, so it stays
 * fast at 100,000+ attempts; no endpoint loads a whole run. Add `?format=json` to any page for its
 * data. In embedded mode with no stack running, the store is opened per request and closed again,
 * one request at a time, so a `forge run` can still take it over (chDB allows one owner).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { hostAllowed, hostOfHeader } from '../core/host-header.js'
import { harnessBanner } from '../core/run-report.js'
import { busReader } from '../store/bus-reader.js'
import { connectBus } from '../store/bus.js'
import { directReader, openClickHouse, type StoreReader } from '../store/clickhouse.js'
import { attemptPage, countMatching, getAttemptEntry, getJudgementByUid, getTraceByUid, runsPage, type AttemptCursor, type AttemptFilter } from '../store/report-queries.js'
import type { ForgeConfig } from '../stack/config.js'
import { ConfigError } from '../stack/errors.js'
import { currentEndpoints } from '../stack/local-stack.js'
import { buildRunReport } from './report.js'
import { renderReport } from './render/report-html.js'
import { renderTrace } from './render/trace-html.js'
import { CSP } from './render/html.js'
import { attemptsPageHtml, notFoundHtml, runPageHtml, runsPageHtml, uiPaths } from './render/ui-html.js'
import { storedTraceView } from './trace.js'
import { getRunStats } from './stats.js'
import { openReader } from './store-access.js'

export interface UiOptions {
  host: string
  port: number
  /** rows per page of runs and attempts (default 100) */
  pageSize?: number
  /** host names requests may be addressed to besides IP addresses and localhost (core/host-header.ts) */
  allowedHosts?: readonly string[]
  /** told of each request refused for its Host header (the CLI says why on stderr) */
  onRefusedHost?: (host: string) => void
}

export interface UiServer {
  url: string
  close(): Promise<void>
}

/** Readers for requests: a lasting one where the store is shared (server, ingester), else one per request, serialized. */
class ReaderSource {
  private lasting: { key: string; reader: StoreReader } | undefined
  private queue: Promise<unknown> = Promise.resolve()

  constructor(private readonly config: ForgeConfig) {}

  async use<T>(fn: (reader: StoreReader) => Promise<T>): Promise<T> {
    const key = this.lastingKey()
    if (key !== undefined) {
      if (this.lasting?.key !== key) {
        await this.lasting?.reader.close().catch(() => undefined)
        this.lasting = { key, reader: await this.openLasting(key) }
      }
      return fn(this.lasting.reader)
    }
    if (this.lasting) {
      await this.lasting.reader.close().catch(() => undefined)
      this.lasting = undefined
    }
    const run = this.queue.then(async () => {
      const reader = await openReader(this.config)
      try {
        return await fn(reader)
      } finally {
        await reader.close()
      }
    })
    this.queue = run.catch(() => undefined)
    return run
  }

  private lastingKey(): string | undefined {
    if (this.config.clickhouseUrl) return `server:${this.config.clickhouseUrl}`
    const endpoints = currentEndpoints(this.config)
    return endpoints.ingesterRunning && endpoints.natsUrl ? `bus:${endpoints.natsUrl}` : undefined
  }

  private async openLasting(key: string): Promise<StoreReader> {
    if (key.startsWith('server:')) return directReader(await openClickHouse({ kind: 'server', url: key.slice('server:'.length) }))
    return busReader(await connectBus(key.slice('bus:'.length), 'forge-ui'), { closeConnection: true })
  }

  async close(): Promise<void> {
    await this.queue
    await this.lasting?.reader.close().catch(() => undefined)
  }
}

/** Thrown when a request names something that is not stored: a 404 page. */
class NotFound extends Error {}

const intParam = (params: URLSearchParams, name: string, fallback: number, max: number): number => {
  const raw = params.get(name)
  if (raw === null || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < 0 || value > max) throw new ConfigError(`?${name} must be a whole number from 0 to ${max}, got "${raw}"`)
  return value
}

function cursorParam(params: URLSearchParams): AttemptCursor | undefined {
  const raw = params.get('after')
  if (raw === null || raw === '') return undefined
  const at = raw.lastIndexOf('/')
  const attempt = Number(raw.slice(at + 1))
  if (at <= 0 || !Number.isInteger(attempt) || attempt < 0) throw new ConfigError(`?after must be <task>/<attempt>, got "${raw}"`)
  return { task_id: raw.slice(0, at), attempt }
}

function filterParam(params: URLSearchParams): AttemptFilter {
  const outcome = params.get('outcome')
  const bucket = params.get('bucket')
  return { ...(outcome ? { outcome } : {}), ...(bucket ? { failure_bucket: bucket } : {}) }
}

type Page = { html: string; json: unknown }

/** Starts the server; resolves once it listens. */
export async function startUi(config: ForgeConfig, opts: UiOptions): Promise<UiServer> {
  const readers = new ReaderSource(config)
  const pageSize = opts.pageSize ?? 100

  const route = async (path: string, params: URLSearchParams): Promise<Page> => {
    const parts = path.split('/').filter((p) => p !== '').map(decodeURIComponent)
    if (parts.length === 0) {
      const offset = intParam(params, 'offset', 0, 10_000_000)
      const limit = intParam(params, 'limit', pageSize, 1000) || pageSize
      const data = await readers.use((reader) => runsPage(reader, { offset, limit }))
      return { html: runsPageHtml({ ...data, offset, limit }), json: data }
    }
    if (parts[0] === 'runs' && parts.length >= 2) {
      const runId = parts[1]!
      if (parts.length === 2) {
        const stats = await readers.use((reader) => getRunStats(reader, runId))
        if (!stats.run && stats.attempts === 0) throw new NotFound(`no run "${runId}" is stored`)
        const banner = harnessBanner(stats.failure_buckets['harness_error'] ?? 0, stats.attempts)
        const taskOffset = intParam(params, 'task_offset', 0, 10_000_000)
        return { html: runPageHtml(stats, { taskOffset, taskLimit: 500, banner: banner?.message ?? null }), json: stats }
      }
      if (parts.length === 3 && parts[2] === 'report') {
        const model = await readers.use((reader) => buildRunReport(reader, { runId, now: Date.now() }).catch((error: unknown) => {
          throw error instanceof ConfigError && error.message.startsWith('no run') ? new NotFound(error.message) : error
        }))
        for (const attempt of model.failed.attempts) attempt.trace_href = uiPaths.attempt(attempt.attempt_uid)
        return { html: renderReport(model), json: model }
      }
      const taskId = parts.length === 4 && parts[2] === 'tasks' ? parts[3]! : parts.length === 3 && parts[2] === 'attempts' ? undefined : null
      if (taskId !== null) {
        const filter = filterParam(params)
        const after = cursorParam(params)
        const limit = intParam(params, 'limit', pageSize, 1000) || pageSize
        const scope = taskId !== undefined ? { taskId } : {}
        const [attempts, total] = await readers.use((reader) =>
          Promise.all([attemptPage(reader, runId, { ...scope, limit, filter, ...(after ? { after } : {}) }), countMatching(reader, runId, { ...scope, filter })]),
        )
        const data = { runId, ...scope, filter, total, limit, attempts }
        return { html: attemptsPageHtml(data), json: data }
      }
    }
    if (parts[0] === 'attempts' && parts.length === 2) {
      const uid = parts[1]!
      const view = await readers.use(async (reader) => {
        const [entry, stored, judgement] = await Promise.all([getAttemptEntry(reader, uid), getTraceByUid(reader, uid), getJudgementByUid(reader, uid)])
        if (!entry || !stored) throw new NotFound(`no stored trace for attempt "${uid}"`)
        return storedTraceView(stored, entry, judgement)
      })
      return { html: renderTrace(view, { backHref: uiPaths.attempts(view.run_id, { taskId: view.task_id }), backLabel: `task ${view.task_id} of run ${view.run_id}` }), json: view }
    }
    throw new NotFound(`no page at ${path}`)
  }

  const send = (res: ServerResponse, status: number, type: string, body: string) => {
    res.writeHead(status, {
      'content-type': `${type}; charset=utf-8`,
      // no page of another site may frame it (a page's <meta> CSP cannot say frame-ancestors; a header can)
      'content-security-policy': `${CSP}; frame-ancestors 'none'`,
      'x-frame-options': 'DENY',
      'x-content-type-options': 'nosniff',
      'cache-control': 'no-store',
    })
    res.end(body)
  }

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // before anything is read: a page the user visits reaches 127.0.0.1 too, by DNS rebinding
    if (!hostAllowed(req.headers.host, opts.allowedHosts)) {
      const host = req.headers.host ?? ''
      opts.onRefusedHost?.(host)
      return send(res, 403, 'text/plain', `${refusedHostMessage(host)}\n`)
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD')
      return send(res, 405, 'text/plain', 'forge ui is read-only: GET and HEAD only\n')
    }
    const url = new URL(req.url ?? '/', 'http://localhost')
    const json = url.searchParams.get('format') === 'json'
    try {
      const result = await route(url.pathname, url.searchParams)
      if (json) send(res, 200, 'application/json', JSON.stringify(result.json))
      else send(res, 200, 'text/html', result.html)
    } catch (error) {
      const message = (error as Error).message
      const status = error instanceof NotFound ? 404 : error instanceof ConfigError ? 400 : 500
      if (json) send(res, status, 'application/json', JSON.stringify({ error: message }))
      else send(res, status, 'text/html', status === 404 ? notFoundHtml(message) : notFoundHtml(`${status === 400 ? 'bad request' : 'error'}: ${message}`).replace('Not found', status === 400 ? 'Bad request' : 'Error'))
    }
  }

  const server: Server = createServer((req, res) => void handle(req, res))
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(opts.port, opts.host, () => resolve())
  }).catch((error: NodeJS.ErrnoException) => {
    throw error.code === 'EADDRINUSE' ? new ConfigError(`--port ${opts.port} is in use on ${opts.host}: pick another (or --port 0 for any free one)`) : error
  })
  const address = server.address() as AddressInfo
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
  return {
    url: `http://${host}:${address.port}/`,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      server.closeAllConnections()
      await closed
      await readers.close()
    },
  }
}

/** Why `forge ui` refused a request for `host`, and how to allow it. */
export function refusedHostMessage(host: string): string {
  const name = hostOfHeader(host) ?? '<name>'
  return (
    `forge ui refused a request for host "${host}": it answers requests addressed to an IP address or localhost, ` +
    `so a web page you visit cannot read your runs by DNS rebinding; to reach it by that name, start it with --allow-host ${name}`
  )
}
