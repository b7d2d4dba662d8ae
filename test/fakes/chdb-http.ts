/**
 * A ClickHouse server for machines without one (no Docker engine, no clickhouse binary): chDB — the
 * ClickHouse engine in-process — behind the subset of ClickHouse's HTTP interface that
 * `@clickhouse/client` speaks (ping, SELECT … FORMAT, INSERT … FORMAT with the rows as the body,
 * commands), so several processes share one store over FORGE_CLICKHOUSE_URL as a fleet does.
 * Differences from a real server: statements run one at a time on one chDB session, and `readonly`
 * is not enforced (chDB would keep it set on its only session).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createRequire } from 'node:module'
import { mkdirSync } from 'node:fs'
import type { Readable } from 'node:stream'

type ChdbConnection = ReturnType<typeof import('chdb/connection').createChdbConnection>

export interface ChdbHttpServer {
  url: string
  /** requests answered, by kind (for the test's measurements) */
  counts: { query: number; insert: number; command: number; errors: number }
  close(): Promise<void>
}

// URL parameters that are the HTTP interface's own, not settings of the query
const NOT_SETTINGS = new Set(['query', 'query_id', 'database', 'session_id', 'role', 'readonly', 'enable_http_compression', 'send_progress_in_http_headers', 'wait_end_of_query'])

export async function startChdbHttpServer(path: string): Promise<ChdbHttpServer> {
  mkdirSync(path, { recursive: true })
  const require = createRequire(import.meta.url)
  const { createChdbConnection } = require('chdb/connection') as typeof import('chdb/connection')
  const chdb: ChdbConnection = createChdbConnection({ path })
  const counts = { query: 0, insert: 0, command: 0, errors: 0 }
  // one statement at a time: chDB has one session
  let queue: Promise<unknown> = Promise.resolve()
  const serial = <T>(work: () => Promise<T>): Promise<T> => {
    const next = queue.then(work, work)
    queue = next.catch(() => undefined)
    return next
  }

  const server: Server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      counts.errors++
      const message = error instanceof Error ? error.message : String(error)
      const code = /Code: (\d+)/.exec(message)?.[1] ?? '1002'
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain; charset=UTF-8', 'x-clickhouse-exception-code': code })
      res.end(message.startsWith('Code:') ? message : `Code: ${code}. DB::Exception: ${message}`)
    })
  })

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost')
    if (url.pathname === '/ping' || (req.method === 'GET' && url.pathname === '/')) {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('Ok.\n')
      return
    }
    const params = url.searchParams
    const query_params: Record<string, string> = {}
    // a server's default that chDB's differs from: 64-bit integers as JSON strings
    const clickhouse_settings: Record<string, string> = { output_format_json_quote_64bit_integers: '1' }
    for (const [key, value] of params) {
      if (key.startsWith('param_')) query_params[key.slice(6)] = value
      else if (!NOT_SETTINGS.has(key)) clickhouse_settings[key] = value
    }
    const query_id = params.get('query_id') ?? undefined
    const common = { clickhouse_settings, ...(Object.keys(query_params).length > 0 ? { query_params } : {}), ...(query_id ? { query_id } : {}) }
    const insertQuery = params.get('query')
    if (insertQuery !== null) {
      // INSERT … FORMAT X in the URL, the rows in the body
      const body = await readBody(req)
      await serial(() => chdb.insert({ query: insertQuery, values: body, ...common }))
      counts.insert++
      res.writeHead(200, { 'content-type': 'text/plain', 'x-clickhouse-summary': '{"written_rows":"0"}' }).end()
      return
    }
    const sql = await readBody(req)
    if (/\bFORMAT\s+\w+\s*;?\s*$/i.test(sql)) {
      const result = await serial(() => chdb.query({ query: sql, ...common }))
      counts.query++
      res.writeHead(200, { 'content-type': 'text/plain; charset=UTF-8' })
      ;(result.stream as Readable).pipe(res)
      return
    }
    await serial(() => chdb.command({ query: sql, ...common }))
    counts.command++
    res.writeHead(200, { 'content-type': 'text/plain', 'x-clickhouse-summary': '{}' }).end()
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    counts,
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await chdb.close()
    },
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    req.on('error', reject)
  })
}
