/**
 * `forge otlp-export`: stored attempts sent as OpenTelemetry spans to a collector over OTLP/HTTP
 * (JSON encoding, POST <endpoint>/v1/traces), a page of attempts per request so no run is ever
 * held in memory whole. Ids are derived from attempt uids, so sending a run again sends the same spans.
 */
import { otlpTraceRequest } from '../core/otlp.js'
import { buildTraceView } from '../core/span-tree.js'
import type { StoreReader } from '../store/clickhouse.js'
import { getStoredTraces } from '../store/grading-repositories.js'
import { attemptPage, attemptStartedAt, getAttemptEntry, type AttemptCursor, type AttemptListEntry } from '../store/report-queries.js'
import { getRun } from '../store/repositories.js'
import { ConfigError } from '../stack/errors.js'
import { tracesUrl } from './otlp-url.js'

/** Thrown when the collector cannot be reached or refuses a request; names the URL and what it answered. */
export class OtlpExportError extends Error {
  override name = 'OtlpExportError'
}

export interface OtlpExportOptions {
  /** the collector's base URL (e.g. http://127.0.0.1:4318) or its full traces URL (…/v1/traces) */
  endpoint: string
  runId?: string
  attemptUid?: string
  /** extra request headers (e.g. an API key) */
  headers?: Record<string, string>
  /** attempts per request (default 100) */
  batch?: number
  serviceName?: string
  version: string
  timeoutMs?: number
}

export interface OtlpExportResult {
  url: string
  attempts: number
  spans: number
  requests: number
  /** spans the collector said it rejected (partial success) */
  rejected_spans: number
  /** attempts stored without a trace: not sent */
  missing_traces: number
}

export async function exportToOtlp(reader: StoreReader, opts: OtlpExportOptions): Promise<OtlpExportResult> {
  const url = tracesUrl(opts.endpoint)
  const batch = opts.batch ?? 100
  const result: OtlpExportResult = { url, attempts: 0, spans: 0, requests: 0, rejected_spans: 0, missing_traces: 0 }

  const send = async (runId: string, entries: AttemptListEntry[]): Promise<void> => {
    const uids = entries.map((e) => e.attempt_uid)
    const [traces, started] = await Promise.all([getStoredTraces(reader, runId, uids), attemptStartedAt(reader, runId, uids)])
    const byUid = new Map(traces.map((t) => [t.attempt_uid, t]))
    const attempts = entries.flatMap((entry) => {
      const stored = byUid.get(entry.attempt_uid)
      if (!stored) {
        result.missing_traces++
        return []
      }
      const view = buildTraceView(stored, { model: entry.model, cost_usd: entry.cost_usd, latency_ms: entry.latency_ms, input_tokens: entry.input_tokens, output_tokens: entry.output_tokens })
      return [{ view, startedAt: started.get(entry.attempt_uid) ?? stored.stored_at }]
    })
    if (attempts.length === 0) return
    const body = otlpTraceRequest(attempts, { version: opts.version, ...(opts.serviceName ? { serviceName: opts.serviceName } : {}) })
    const spans = body.resourceSpans[0]!.scopeSpans[0]!.spans.length
    let res: Response
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...opts.headers },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(opts.timeoutMs ?? 30_000),
      })
    } catch (error) {
      throw new OtlpExportError(`cannot reach the OTLP collector at ${url}: ${(error as Error).message}`, { cause: error })
    }
    const text = await res.text()
    if (!res.ok) throw new OtlpExportError(`the OTLP collector at ${url} answered ${res.status} ${res.statusText}: ${text.slice(0, 500)}`)
    // a partial success names how many spans were dropped
    try {
      const answer = JSON.parse(text || '{}') as { partialSuccess?: { rejectedSpans?: string | number } }
      result.rejected_spans += Number(answer.partialSuccess?.rejectedSpans ?? 0)
    } catch {
      // a collector may answer with an empty or non-JSON body: that is success
    }
    result.requests++
    result.spans += spans
    result.attempts += attempts.length
  }

  if (opts.attemptUid !== undefined) {
    const entry = await getAttemptEntry(reader, opts.attemptUid)
    if (!entry) throw new ConfigError(`no attempt "${opts.attemptUid}" is stored`)
    await send(opts.attemptUid.split('/')[0]!, [entry])
    return result
  }
  if (opts.runId === undefined) throw new ConfigError('name what to export: --run-id or --attempt-uid')
  if (!(await getRun(reader, opts.runId))) throw new ConfigError(`no run "${opts.runId}" is stored (see forge runs list)`)
  let after: AttemptCursor | undefined
  for (;;) {
    const page = await attemptPage(reader, opts.runId, { limit: batch, ...(after ? { after } : {}) })
    if (page.length === 0) break
    await send(opts.runId, page)
    after = page.at(-1)!
  }
  return result
}
