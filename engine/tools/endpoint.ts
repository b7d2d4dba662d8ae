/**
 * The per-attempt HTTP tool endpoint: how an out-of-process agent (a subprocess in `http` mode,
 * an agent service) reaches its tools. It listens on 127.0.0.1 on a free port, accepts only the
 * attempt's bearer token (32 random bytes), and sends every call through the attempt's ToolBox,
 * which checks, budgets and records it. Requests with a wrong or missing token get 401 and never
 * reach the tool box, so they are not recorded as tool calls; after MAX_REFUSED_REQUESTS refused
 * requests (a body over the size limit and listings past MAX_TOOL_LISTINGS among them) the endpoint
 * closes for the rest of the attempt.
 *
 *   GET  {url}          → 200 {"tools": ToolSpec[]}
 *   POST {url}/<name>   JSON args → 200 {"ok":true,"result":…} | 200 {"ok":false,"error":"…"}
 *
 * with `url` = `http://127.0.0.1:<port>/tools` and header `Authorization: Bearer <token>`.
 * A body that is not JSON is passed on as text, so the tool box records a malformed call.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { ToolBox } from '../../core/plugins.js'
import { parseUntrustedJson } from '../../core/untrusted-json.js'

export interface ToolEndpoint {
  /** e.g. http://127.0.0.1:41234/tools — give it to the agent as FORGE_TOOL_URL */
  url: string
  /** the attempt's bearer token — give it to the agent as FORGE_TOOL_TOKEN */
  token: string
  /** stops listening and drops open connections; later requests cannot connect */
  close(): Promise<void>
}

export interface ToolEndpointOptions {
  /** largest accepted request body (default 1 MiB); larger ones get 413 */
  maxBodyBytes?: number
  /** how many listings an attempt may ask for (default MAX_TOOL_LISTINGS); more get 429 */
  maxListings?: number
}

const TOOLS_PATH = '/tools'
const DEFAULT_MAX_BODY_BYTES = 1024 * 1024
/**
 * How many refused requests (a wrong token, another route or method, a bad tool name) the endpoint
 * answers an attempt's agent before it closes for the rest of the attempt. Tool calls are bounded by
 * the budget; these cost the worker a request each and were bounded only by the deadline.
 */
export const MAX_REFUSED_REQUESTS = 100
/**
 * How many tool listings an attempt's agent may ask for; past it a listing is refused (and counts
 * toward MAX_REFUSED_REQUESTS). A framework lists before each step, a few dozen times an attempt; an
 * agent listing in a loop cost the worker a request each until the deadline.
 */
export const MAX_TOOL_LISTINGS = 10_000

/** Starts an endpoint serving `tools` for one attempt; close it when the attempt ends. */
export async function startToolEndpoint(tools: ToolBox, opts: ToolEndpointOptions = {}): Promise<ToolEndpoint> {
  const token = randomBytes(32).toString('hex')
  const expected = Buffer.from(`Bearer ${token}`)
  const maxBodyBytes = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
  const maxListings = opts.maxListings ?? MAX_TOOL_LISTINGS

  const authorized = (req: IncomingMessage): boolean => {
    const given = Buffer.from(req.headers.authorization ?? '')
    return given.length === expected.length && timingSafeEqual(given, expected)
  }

  let others = 0
  let listings = 0
  /** answers a refused request; past MAX_REFUSED_REQUESTS of them the endpoint closes once this answer is out */
  const refuse = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
    if (++others > MAX_REFUSED_REQUESTS) res.once('close', () => void shutOut())
    reply(res, status, body, headers)
  }
  const server = createServer((req, res) => {
    // authentication first, for every path: an unauthenticated caller learns nothing
    if (!authorized(req)) {
      req.resume()
      return refuse(res, 401, { ok: false, error: 'missing or wrong bearer token' }, { 'www-authenticate': 'Bearer' })
    }
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname
    if (path === TOOLS_PATH || path === `${TOOLS_PATH}/`) {
      req.resume()
      if (req.method !== 'GET') return refuse(res, 405, { ok: false, error: `use GET ${TOOLS_PATH}` }, { allow: 'GET' })
      // a listing is no error: an agent framework may list the tools before every step
      if (++listings > maxListings) return refuse(res, 429, { ok: false, error: `more than ${maxListings} tool listings in one attempt` })
      return reply(res, 200, { tools: tools.specs })
    }
    if (!path.startsWith(`${TOOLS_PATH}/`)) {
      req.resume()
      return refuse(res, 404, { ok: false, error: `no such route; use GET ${TOOLS_PATH} or POST ${TOOLS_PATH}/<name>` })
    }
    if (req.method !== 'POST') {
      req.resume()
      return refuse(res, 405, { ok: false, error: `use POST ${TOOLS_PATH}/<name>` }, { allow: 'POST' })
    }
    let name: string
    try {
      name = decodeURIComponent(path.slice(TOOLS_PATH.length + 1))
    } catch {
      req.resume()
      return refuse(res, 400, { ok: false, error: 'tool name is not valid percent-encoding' })
    }
    readBody(req, maxBodyBytes).then(
      async (body) => {
        if (body === undefined) {
          // the rest of the body is never read: the connection closes once the answer is out
          res.once('finish', () => req.socket.destroy())
          return refuse(res, 413, { ok: false, error: `request body larger than ${maxBodyBytes} bytes` }, { connection: 'close' })
        }
        const outcome = await tools.call(name, parseArgs(body))
        reply(res, 200, outcome.ok ? { ok: true, result: outcome.result ?? null } : { ok: false, error: outcome.error })
      },
      () => reply(res, 400, { ok: false, error: 'could not read the request body' }),
    ).catch(() => reply(res, 500, { ok: false, error: 'the harness failed to run the call' }))
  })
  // keep-alive sockets must not hold the attempt open after close()
  server.keepAliveTimeout = 1_000

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
  const { port } = server.address() as AddressInfo
  let closed: Promise<void> | undefined
  function shutOut(): Promise<void> {
    closed ??= new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    })
    return closed
  }
  return {
    url: `http://127.0.0.1:${port}${TOOLS_PATH}`,
    token,
    close: shutOut,
  }
}

/** JSON args; an empty body means `{}`; anything unparsable is passed on as text (a malformed call). */
function parseArgs(body: string): unknown {
  if (body.trim() === '') return {}
  try {
    return parseUntrustedJson(body)
  } catch {
    return body
  }
}

/** The body as text, or undefined as soon as it is larger than `limit` bytes (the rest is not read). */
function readBody(req: IncomingMessage, limit: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const onData = (chunk: Buffer): void => {
      size += chunk.length
      if (size <= limit) return void chunks.push(chunk)
      req.off('data', onData)
      req.pause()
      resolve(undefined)
    }
    req.on('data', onData)
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    req.on('error', reject)
  })
}

function reply(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return
  let json: string
  try {
    json = JSON.stringify(body)
  } catch {
    // a tool result that cannot be serialised (a cycle, a BigInt) still gets an answer
    json = JSON.stringify({ ok: false, error: 'the tool result is not JSON-serialisable' })
  }
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(json), ...headers })
  res.end(json)
}
