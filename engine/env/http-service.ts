/**
 * The http fixture: a per-attempt HTTP service on 127.0.0.1 serving a directory of files, for
 * retrieval tasks. `<name>.json` files holding an array are collections of records with `id`s;
 * every other file is a document served at its path. Failure conditions — an expired token, an
 * outage, missing or duplicated records — are layered on top. Bearer tokens are required on every
 * route but `POST /auth/refresh`; `/__forge/state` answers the harness (with its own key) only.
 */
import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { HttpCondition, HttpFixture } from '../../core/contracts/index.js'
import { canonicalJson, type HttpState } from '../../core/env-diff.js'
import type { HttpHandle } from '../../core/plugins.js'
import type { FixtureDriver, FixtureInstance, FixtureTemplate } from './driver.js'
import { FixtureSeedError } from './errors.js'
import { listRegularFiles } from './workspace.js'
import path from 'node:path'

type JsonRecord = Record<string, unknown>

interface ServiceData {
  collections: Record<string, JsonRecord[]>
  documents: Record<string, string>
}

const ADMIN_HEADER = 'x-forge-admin'
const MAX_BODY_BYTES = 1024 * 1024

async function loadData(dir: string, fixture: string): Promise<ServiceData> {
  const data: ServiceData = { collections: {}, documents: {} }
  for (const file of await listRegularFiles(dir)) {
    const text = await readFile(path.join(dir, ...file.split('/')), 'utf8')
    const isTopLevelJson = !file.includes('/') && file.endsWith('.json')
    if (isTopLevelJson) {
      let parsed: unknown
      try {
        parsed = JSON.parse(text)
      } catch (error) {
        throw new FixtureSeedError(fixture, `${file}: invalid JSON: ${error instanceof Error ? error.message : String(error)}`)
      }
      if (Array.isArray(parsed)) {
        const name = file.slice(0, -'.json'.length)
        parsed.forEach((record: unknown, i) => {
          if (record === null || typeof record !== 'object' || Array.isArray(record) || !('id' in record)) {
            throw new FixtureSeedError(fixture, `${file}: record ${i} must be an object with an "id"`)
          }
        })
        data.collections[name] = parsed as JsonRecord[]
        continue
      }
    }
    data.documents[`/${file}`] = text
  }
  return data
}

function applyRecordCondition(data: ServiceData, condition: HttpCondition, fixture: string): void {
  if (condition.type !== 'missing_records' && condition.type !== 'duplicate_records') return
  const records = data.collections[condition.collection]
  if (records === undefined) throw new FixtureSeedError(fixture, `${condition.type}: no collection "${condition.collection}"`)
  const wanted = new Set(condition.ids.map(String))
  const unknown = [...wanted].filter((id) => !records.some((r) => String(r['id']) === id))
  if (unknown.length > 0) throw new FixtureSeedError(fixture, `${condition.type}: no record ${unknown.join(', ')} in "${condition.collection}"`)
  if (condition.type === 'missing_records') {
    data.collections[condition.collection] = records.filter((r) => !wanted.has(String(r['id'])))
  } else {
    // each duplicate sits right after its original, as a sloppy sync would leave it
    data.collections[condition.collection] = records.flatMap((r) => (wanted.has(String(r['id'])) ? [r, structuredClone(r)] : [r]))
  }
}

function stateOf(data: ServiceData): HttpState {
  return { kind: 'http', collections: structuredClone(data.collections), documents: { ...data.documents } }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body)
  res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/json' })
  res.end(text)
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    const buffer = chunk as Buffer
    size += buffer.length
    if (size > MAX_BODY_BYTES) throw new Error('request body too large')
    chunks.push(buffer)
  }
  const text = Buffer.concat(chunks).toString('utf8')
  if (text.trim() === '') return undefined
  return JSON.parse(text)
}

/** The next id in a collection: one past the largest numeric suffix, keeping the ids' prefix. */
function nextId(records: JsonRecord[]): string | number {
  const ids = records.map((r) => r['id'])
  if (ids.length > 0 && ids.every((id) => typeof id === 'number')) return Math.max(...(ids as number[])) + 1
  let prefix = ''
  let max = 0
  for (const id of ids) {
    const match = /^(.*?)(\d+)$/.exec(String(id))
    if (match === null) continue
    prefix = match[1] ?? ''
    max = Math.max(max, Number(match[2]))
  }
  return `${prefix}${max + 1}`
}

function matchesQuery(record: JsonRecord, params: URLSearchParams): boolean {
  for (const [field, value] of params) {
    if (field === 'q') {
      if (!canonicalJson(record).toLowerCase().includes(value.toLowerCase())) return false
    } else {
      const actual = record[field]
      const text = actual === null || actual === undefined ? '' : typeof actual === 'object' ? canonicalJson(actual) : String(actual)
      if (text !== value) return false
    }
  }
  return true
}

interface Service {
  server: Server
  baseUrl: string
  adminKey: string
  /** back to the template: data, tokens and outage counters */
  reset(): void
  issued(): { token: string; refreshToken: string }
}

async function startService(template: ServiceData, spec: HttpFixture): Promise<Service> {
  const adminKey = randomBytes(16).toString('hex')
  const expired = spec.conditions.some((c) => c.type === 'expired_token')
  const outages = spec.conditions.filter((c): c is Extract<HttpCondition, { type: 'outage' }> => c.type === 'outage')
  let data: ServiceData
  let validTokens: Set<string>
  let expiredTokens: Set<string>
  let refreshToken: string
  let initialToken: string
  let outageHits: number[]

  const reset = (): void => {
    data = structuredClone(template)
    initialToken = randomBytes(12).toString('hex')
    refreshToken = randomBytes(12).toString('hex')
    validTokens = new Set(expired ? [] : [initialToken])
    expiredTokens = new Set(expired ? [initialToken] : [])
    outageHits = outages.map(() => 0)
  }
  reset()

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://fixture')
    const method = (req.method ?? 'GET').toUpperCase()
    const route = decodeURIComponent(url.pathname).replace(/\/+$/, '') || '/'

    if (route === '/__forge/state') {
      if (req.headers[ADMIN_HEADER] !== adminKey) return send(res, 403, { error: 'forbidden' })
      return send(res, 200, stateOf(data))
    }

    for (const [i, outage] of outages.entries()) {
      const hit = outage.paths === undefined || outage.paths.some((p) => route === p || route.startsWith(`${p.replace(/\/+$/, '')}/`))
      if (!hit) continue
      if (outage.requests !== undefined && (outageHits[i] ?? 0) >= outage.requests) continue
      outageHits[i] = (outageHits[i] ?? 0) + 1
      return send(res, outage.status, { error: 'service_unavailable', message: `the service is unavailable (HTTP ${outage.status}); try again later` })
    }

    let body: unknown
    try {
      body = await readBody(req)
    } catch (error) {
      return send(res, 400, { error: 'bad_request', message: error instanceof Error ? error.message : String(error) })
    }

    if (route === '/auth/refresh' && method === 'POST') {
      const given = body !== null && typeof body === 'object' ? (body as JsonRecord)['refresh_token'] : undefined
      if (given !== refreshToken) return send(res, 401, { error: 'invalid_refresh_token' })
      for (const token of validTokens) expiredTokens.add(token)
      validTokens = new Set([randomBytes(12).toString('hex')])
      return send(res, 200, { token: [...validTokens][0] })
    }

    const bearer = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1]
    if (bearer === undefined || !validTokens.has(bearer)) {
      if (bearer !== undefined && expiredTokens.has(bearer)) {
        return send(res, 401, { error: 'token_expired', message: 'the access token has expired; refresh it and retry' })
      }
      return send(res, 401, { error: 'invalid_token', message: 'a valid bearer token is required' })
    }

    const [, collection, id, ...rest] = route.split('/')
    const records = collection !== undefined ? data.collections[collection] : undefined
    if (records !== undefined && collection !== undefined && rest.length === 0) {
      const writes = method !== 'GET' && method !== 'HEAD'
      if (writes && !spec.writable) return send(res, 405, { error: 'read_only', message: `${collection} is read-only` })
      if (id === undefined) {
        if (method === 'GET') return send(res, 200, records.filter((r) => matchesQuery(r, url.searchParams)))
        if (method === 'POST') {
          if (body === null || typeof body !== 'object' || Array.isArray(body)) return send(res, 400, { error: 'bad_request', message: 'the body must be a JSON object' })
          const record: JsonRecord = { ...(body as JsonRecord) }
          if (record['id'] === undefined) record['id'] = nextId(records)
          if (records.some((r) => String(r['id']) === String(record['id']))) return send(res, 409, { error: 'conflict', message: `${collection}/${String(record['id'])} exists` })
          records.push(record)
          return send(res, 201, record)
        }
        return send(res, 405, { error: 'method_not_allowed' })
      }
      const at = records.findIndex((r) => String(r['id']) === id)
      if (at < 0) return send(res, 404, { error: 'not_found', message: `no ${collection}/${id}` })
      if (method === 'GET') return send(res, 200, records[at])
      if (method === 'PATCH') {
        if (body === null || typeof body !== 'object' || Array.isArray(body)) return send(res, 400, { error: 'bad_request', message: 'the body must be a JSON object' })
        const updated = { ...(records[at] as JsonRecord), ...(body as JsonRecord), id: (records[at] as JsonRecord)['id'] }
        records[at] = updated
        return send(res, 200, updated)
      }
      if (method === 'DELETE') {
        records.splice(at, 1)
        return send(res, 200, { deleted: id })
      }
      return send(res, 405, { error: 'method_not_allowed' })
    }
    const document = data.documents[route]
    if (document !== undefined && method === 'GET') {
      if (route.endsWith('.json')) {
        try {
          return send(res, 200, JSON.parse(document) as unknown)
        } catch {
          return send(res, 200, document)
        }
      }
      return send(res, 200, document)
    }
    return send(res, 404, { error: 'not_found', message: `no resource at ${route}` })
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, 500, { error: 'internal', message: error instanceof Error ? error.message : String(error) })
      else res.end()
    })
  })
  server.keepAliveTimeout = 1_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  // an idle fixture service must not keep a worker process alive once it is told to stop
  server.unref()
  const { port } = server.address() as AddressInfo
  return {
    server,
    baseUrl: `http://127.0.0.1:${port}`,
    adminKey,
    reset,
    issued: () => ({ token: initialToken, refreshToken }),
  }
}

async function request(baseUrl: string, method: string, route: string, token: string | undefined, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: unknown }> {
  const init: RequestInit = { method, headers: { ...headers, ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}) } }
  if (body !== undefined) {
    init.body = JSON.stringify(body)
    init.headers = { ...(init.headers as Record<string, string>), 'content-type': 'application/json' }
  }
  const res = await fetch(`${baseUrl}${route.startsWith('/') ? route : `/${route}`}`, init)
  const text = await res.text()
  const json = (res.headers.get('content-type') ?? '').includes('application/json')
  let parsed: unknown = text
  if (json) {
    try {
      parsed = JSON.parse(text)
    } catch {
      parsed = text
    }
  }
  return { status: res.status, body: parsed }
}

export const httpDriver: FixtureDriver<HttpFixture> = {
  kind: 'http',
  async template(spec, ctx): Promise<FixtureTemplate> {
    const source = path.resolve(ctx.fixturesDir, spec.from)
    const data = await loadData(source, spec.name)
    for (const condition of spec.conditions) applyRecordCondition(data, condition, spec.name)
    const baseline = stateOf(data)
    return {
      baseline,
      expectations(state) {
        if (state.kind !== 'http') return [`expected an http state, got ${state.kind}`]
        const problems: string[] = []
        for (const [collection, count] of Object.entries(spec.expect?.records ?? {})) {
          const found = state.collections[collection]
          if (found === undefined) problems.push(`expected collection "${collection}" is missing`)
          else if (found.length !== count) problems.push(`collection "${collection}" has ${found.length} record(s), expected ${count}`)
        }
        return problems
      },
      async instantiate(): Promise<FixtureInstance> {
        const service = await startService(data, spec)
        const handle: HttpHandle = {
          kind: 'http',
          name: spec.name,
          baseUrl: service.baseUrl,
          token: service.issued().token,
          request: (method, route, body) => request(service.baseUrl, method.toUpperCase(), route, handle.token, body),
          async refresh() {
            const answer = await request(service.baseUrl, 'POST', '/auth/refresh', undefined, { refresh_token: service.issued().refreshToken })
            const token = answer.body !== null && typeof answer.body === 'object' ? (answer.body as JsonRecord)['token'] : undefined
            if (answer.status !== 200 || typeof token !== 'string') throw new Error(`token refresh failed: HTTP ${answer.status}`)
            handle.token = token
          },
        }
        return {
          handle,
          async capture() {
            // read back over HTTP: proves the service is up and serving this state
            const answer = await request(service.baseUrl, 'GET', '/__forge/state', undefined, undefined, { [ADMIN_HEADER]: service.adminKey })
            if (answer.status !== 200) throw new Error(`the service answered its state read with HTTP ${answer.status}`)
            return answer.body as HttpState
          },
          async restore() {
            service.reset()
            handle.token = service.issued().token
          },
          async close() {
            service.server.closeAllConnections()
            await new Promise<void>((resolve) => service.server.close(() => resolve()))
          },
        }
      },
      async dispose() {
        // nothing on disk: the template is held in memory
      },
    }
  },
}
