/**
 * The http adapter: an agent that runs as a service. Per attempt it
 *
 * 1. `POST {base_url}{reset_path}` — the service forgets everything of earlier attempts. A service
 *    without a reset (404, 405, or no answer) still runs, but the attempt is recorded with degraded
 *    isolation (validity `degraded`) and a warning is logged; any other failed reset likewise.
 * 2. starts the attempt's tool endpoint (127.0.0.1, per-attempt bearer token) and
 * 3. `POST {base_url}{invoke_path}` with `{protocol, payload, tools: {url, token}}` — the service
 *    calls tools through that endpoint and answers `{output, self_report?, refused?}` (a JSON body
 *    without `output` is the output; a text body goes through the fallback output parser).
 *
 * Only the configured base URL is ever contacted: both paths must resolve under it, and redirects
 * are refused. Every request has a timeout (`timeout_ms`, default the task's duration budget) and
 * is cut when the attempt is aborted.
 */
import { z } from 'zod'
import { AGENT_PROTOCOL_VERSION, HttpInvokeResponse, type HttpInvokeRequest } from '../../core/agent-protocol.js'
import type { InvocationPayload } from '../../core/contracts/index.js'
import { normalizeAgentOutput } from '../../core/output-parser.js'
import type { AdapterContext, AdapterOutput, AgentAdapter } from '../../core/plugins.js'
import { createLogger, type Logger } from '../logger.js'
import { startToolEndpoint } from '../tools/endpoint.js'
import { budgetWatchedToolBox } from '../tools/budget-watch.js'
import { harnessConfigShape, parseAdapterConfig } from './config-schema.js'
import { parseUntrustedJson } from '../../core/untrusted-json.js'

/** ctx.config of the http adapter. */
export const HttpConfig = z
  .strictObject({
    base_url: z.url({ protocol: /^https?$/ }).describe('The agent service, e.g. http://127.0.0.1:8080 or http://agents.internal/v2.'),
    reset_path: z.string().default('/reset').describe('Path under base_url POSTed before every attempt so the service forgets earlier ones.'),
    invoke_path: z.string().default('/invoke').describe('Path under base_url POSTed with the payload and the tool endpoint.'),
    timeout_ms: z
      .number()
      .int()
      .positive()
      .optional()
      .describe("Per request, in ms; default: the task's max_duration_ms (the reset: at most 10 s)."),
    headers: z.record(z.string(), z.string()).default({}).describe("Extra request headers, e.g. the service's API key."),
    ...harnessConfigShape,
  })
  .describe('Config of the http adapter (--adapter-config).')
export type HttpConfig = z.output<typeof HttpConfig>

/** Largest response body read from the service. */
const MAX_RESPONSE_BYTES = 1024 * 1024
const RESET_TIMEOUT_CAP_MS = 10_000

export function parseHttpConfig(config: Record<string, unknown>): HttpConfig {
  return parseAdapterConfig('http', HttpConfig, config)
}

/**
 * `path` joined to `base` (`/invoke` under `http://h/v2` → `http://h/v2/invoke`). Throws when the
 * result would leave the base URL — another host, scheme or port, or a path outside the base's.
 */
export function serviceUrl(base: string, path: string): string {
  const baseUrl = new URL(base)
  const basePath = baseUrl.pathname.endsWith('/') ? baseUrl.pathname : `${baseUrl.pathname}/`
  const target = new URL(path.replace(/^\/+/, ''), `${baseUrl.origin}${basePath}`)
  if (target.origin !== baseUrl.origin || !target.pathname.startsWith(basePath)) {
    throw new Error(`http adapter: path ${JSON.stringify(path)} leaves the configured base URL ${base}`)
  }
  return target.href
}

let logger: Logger | undefined
const log = (): Logger => (logger ??= createLogger('http-adapter'))

type Reset = { ok: true } | { ok: false; reason: string }

async function reset(url: string, config: HttpConfig, signal: AbortSignal, timeoutMs: number): Promise<Reset> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...config.headers },
      body: '{}',
      redirect: 'error',
      signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]),
    })
    await res.body?.cancel()
    if (res.ok) return { ok: true }
    if (res.status === 404 || res.status === 405) return { ok: false, reason: `the service has no reset (POST ${url} → ${res.status})` }
    return { ok: false, reason: `the reset failed (POST ${url} → ${res.status})` }
  } catch (error) {
    return { ok: false, reason: `the reset could not be sent (POST ${url}: ${errorMessage(error)})` }
  }
}

/** The body, or undefined past MAX_RESPONSE_BYTES. */
async function readLimited(res: Response): Promise<string | undefined> {
  if (res.body === null) return ''
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of res.body) {
    size += chunk.byteLength
    if (size > MAX_RESPONSE_BYTES) {
      await res.body.cancel().catch(() => undefined)
      return undefined
    }
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}

export const httpAdapter: AgentAdapter = {
  name: 'http',
  async invoke(payload: InvocationPayload, ctx: AdapterContext): Promise<AdapterOutput> {
    const config = parseHttpConfig(ctx.config)
    const resetUrl = serviceUrl(config.base_url, config.reset_path)
    const invokeUrl = serviceUrl(config.base_url, config.invoke_path)
    const timeoutMs = config.timeout_ms ?? ctx.budget.max_duration_ms
    const errors: Array<{ kind: string; message: string }> = []
    const out: AdapterOutput = { output: undefined, errors }

    const resetOutcome = await reset(resetUrl, config, ctx.signal, Math.min(timeoutMs, RESET_TIMEOUT_CAP_MS))
    if (!resetOutcome.ok) {
      const message = `${resetOutcome.reason}: attempts may share state`
      log().warn({ attempt_uid: ctx.attemptUid, base_url: config.base_url }, message)
      out.isolation_degraded = message
      errors.push({ kind: 'isolation', message })
    }
    if (ctx.signal.aborted) return out

    // an agent that keeps calling tools after the budget refused it is cut off
    const stop = new AbortController()
    const tools = budgetWatchedToolBox(ctx.tools, () => stop.abort(new Error('budget exhausted')))
    const endpoint = await startToolEndpoint(tools)
    try {
      const body: HttpInvokeRequest = { protocol: AGENT_PROTOCOL_VERSION, payload, tools: { url: endpoint.url, token: endpoint.token } }
      let res: Response
      let text: string | undefined
      try {
        res = await fetch(invokeUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json', ...config.headers },
          body: JSON.stringify(body),
          redirect: 'error',
          signal: AbortSignal.any([ctx.signal, stop.signal, AbortSignal.timeout(timeoutMs)]),
        })
        text = await readLimited(res)
      } catch (error) {
        if (ctx.signal.aborted) errors.push({ kind: 'stopped', message: 'agent service stopped at the attempt deadline' })
        else if (stop.signal.aborted) errors.push({ kind: 'stopped', message: 'agent service kept calling tools after its budget was exhausted; stopped' })
        else if (error instanceof Error && error.name === 'TimeoutError') errors.push({ kind: 'timeout', message: `no answer from ${invokeUrl} within ${timeoutMs} ms` })
        // nothing answered at all: the instrument failed, not the agent
        else throw new Error(`http adapter: POST ${invokeUrl} failed: ${errorMessage(error)}`, { cause: error })
        return out
      }
      if (text === undefined) {
        errors.push({ kind: 'agent_http_error', message: `the answer of ${invokeUrl} is larger than ${MAX_RESPONSE_BYTES} bytes` })
        return out
      }
      if (!res.ok) {
        errors.push({ kind: 'agent_http_error', message: `POST ${invokeUrl} → ${res.status}: ${text.slice(0, 500)}` })
        return out
      }
      return { ...out, ...responseOutput(text, res.headers.get('content-type') ?? '') }
    } finally {
      await endpoint.close()
    }
  },
}

/** An invoke response as adapter output: `{output, …}` JSON, other JSON whole, text through the parser. */
export function responseOutput(text: string, contentType: string): Pick<AdapterOutput, 'output' | 'self_report' | 'refused'> {
  let json: unknown
  let isJson = false
  if (contentType.includes('json') || /^\s*[[{]/.test(text)) {
    try {
      json = parseUntrustedJson(text)
      isJson = true
    } catch {
      isJson = false
    }
  }
  if (!isJson) return { output: normalizeAgentOutput(text).value }
  if (typeof json === 'object' && json !== null && !Array.isArray(json) && Object.hasOwn(json, 'output')) {
    const parsed = HttpInvokeResponse.safeParse(json)
    const r = parsed.success ? parsed.data : { output: (json as Record<string, unknown>)['output'] }
    const out: Pick<AdapterOutput, 'output' | 'self_report' | 'refused'> = { output: normalizeAgentOutput(r.output).value }
    if ('self_report' in r && r.self_report !== undefined) out.self_report = r.self_report
    if ('refused' in r && r.refused !== undefined) out.refused = r.refused
    return out
  }
  return { output: normalizeAgentOutput(json).value }
}

function errorMessage(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : ''
    return `${error.message}${cause}`
  }
  return String(error)
}
