/**
 * Live OTLP export (`forge run --otlp-url`, FORGE_OTLP_URL): a worker sends each attempt's spans to an
 * OTLP/HTTP collector (JSON encoding, core/otlp.ts — the same spans and ids as `forge otlp-export`) as
 * the attempt finishes. Adding never blocks and never throws: spans wait in a bounded queue (full:
 * dropped and counted), one request is in flight at a time and takes whatever waits (up to a batch),
 * and a failed request is counted, never retried. After each request the counts of every run in it
 * are reported (workers publish them on `forge.progress.<run>.otlp`, and `forge run` sums them).
 */
import type { AttemptResult, StoredTrace } from '../core/contracts/index.js'
import { attemptSpans, noOtlpExports, otlpSpansRequest, type OtlpExportCounts, type OtlpSpan } from '../core/otlp.js'
import { buildTraceView } from '../core/span-tree.js'

export interface OtlpExporterOptions {
  /** the collector's traces URL (…/v1/traces) */
  url: string
  version: string
  serviceName?: string
  /** spans waiting at most (default 20,000); an attempt that does not fit is dropped */
  maxQueueSpans?: number
  /** spans per request at most (default 2,000; an attempt is never split) */
  maxBatchSpans?: number
  /** per request (default 10 s) */
  timeoutMs?: number
  headers?: Record<string, string>
  /** called with a run's cumulative counts after every request (or drop) that concerned it */
  report?: (runId: string, counts: OtlpExportCounts) => void
  /** runs whose counts are kept (default 1,000; the oldest are forgotten) */
  maxRuns?: number
}

export interface OtlpExporter {
  /** queues the attempt's spans; never throws, never waits */
  add(stored: StoredTrace, result: AttemptResult): void
  /** resolves once everything queued so far was sent (or failed) */
  flush(): Promise<void>
  counts(runId: string): OtlpExportCounts
}

interface Queued {
  run_id: string
  spans: OtlpSpan[]
}

export function createOtlpExporter(opts: OtlpExporterOptions): OtlpExporter {
  const maxQueue = opts.maxQueueSpans ?? 20_000
  const maxBatch = opts.maxBatchSpans ?? 2_000
  const maxRuns = opts.maxRuns ?? 1_000
  const queue: Queued[] = []
  let queuedSpans = 0
  let sending: Promise<void> | undefined
  const byRun = new Map<string, OtlpExportCounts>()

  const countsOf = (runId: string): OtlpExportCounts => {
    let counts = byRun.get(runId)
    if (counts === undefined) {
      counts = noOtlpExports()
      byRun.set(runId, counts)
      if (byRun.size > maxRuns) byRun.delete(byRun.keys().next().value!)
    }
    return counts
  }
  const report = (runId: string) => {
    try {
      opts.report?.(runId, { ...countsOf(runId) })
    } catch {
      // reporting is best effort: the bus may be closing
    }
  }
  const fail = (counts: OtlpExportCounts, message: string) => {
    counts.failed_requests++
    counts.first_error ??= message
  }

  const sendBatch = async (batch: Queued[]): Promise<void> => {
    const spans = batch.flatMap((q) => q.spans)
    let failure: string | undefined
    let rejected = 0
    try {
      const res = await fetch(opts.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...opts.headers },
        body: JSON.stringify(otlpSpansRequest(spans, { version: opts.version, ...(opts.serviceName !== undefined ? { serviceName: opts.serviceName } : {}) })),
        signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000),
      })
      const text = await res.text()
      if (!res.ok) failure = `the OTLP collector at ${opts.url} answered ${res.status} ${res.statusText}: ${text.slice(0, 200)}`
      else {
        try {
          rejected = Number((JSON.parse(text || '{}') as { partialSuccess?: { rejectedSpans?: string | number } }).partialSuccess?.rejectedSpans ?? 0) || 0
        } catch {
          // an empty or non-JSON body is success
        }
      }
    } catch (error) {
      failure = `cannot reach the OTLP collector at ${opts.url}: ${(error as Error).message}`
    }
    const runs = new Map<string, Queued[]>()
    for (const q of batch) runs.set(q.run_id, [...(runs.get(q.run_id) ?? []), q])
    for (const [runId, items] of runs) {
      const counts = countsOf(runId)
      const n = items.reduce((sum, q) => sum + q.spans.length, 0)
      counts.settled_attempts += items.length
      if (failure !== undefined) {
        fail(counts, failure)
        counts.failed_spans += n
      } else {
        counts.exported_spans += n
        counts.exported_attempts += items.length
        // a partial success is counted against the first run of the request (it does not say whose spans)
        if (rejected > 0) {
          counts.failed_spans += rejected
          counts.first_error ??= `the OTLP collector at ${opts.url} rejected ${rejected} span(s)`
          rejected = 0
        }
      }
      report(runId)
    }
  }

  const drain = (): Promise<void> => {
    sending ??= (async () => {
      while (queue.length > 0) {
        const batch: Queued[] = []
        let size = 0
        while (queue.length > 0 && (batch.length === 0 || size + queue[0]!.spans.length <= maxBatch)) {
          const next = queue.shift()!
          size += next.spans.length
          batch.push(next)
        }
        queuedSpans -= size
        await sendBatch(batch)
      }
    })().finally(() => {
      sending = undefined
    })
    return sending
  }

  return {
    add(stored, result) {
      try {
        const view = buildTraceView(stored, { model: result.model, cost_usd: result.cost_usd, latency_ms: result.latency_ms, input_tokens: result.input_tokens, output_tokens: result.output_tokens })
        const spans = attemptSpans(view, result.started_at)
        if (queuedSpans + spans.length > maxQueue) {
          const counts = countsOf(result.run_id)
          counts.settled_attempts++
          counts.dropped_spans += spans.length
          counts.first_error ??= `the OTLP export queue was full (${maxQueue} spans): the collector at ${opts.url} is slower than the run`
          report(result.run_id)
          return
        }
        queue.push({ run_id: result.run_id, spans })
        queuedSpans += spans.length
        void drain()
      } catch (error) {
        // encoding is pure and should not fail; if it does, the attempt still must not
        const counts = countsOf(result.run_id)
        counts.settled_attempts++
        counts.first_error ??= `could not encode the spans of ${result.attempt_uid}: ${(error as Error).message}`
        report(result.run_id)
      }
    },
    async flush() {
      while (queue.length > 0 || sending !== undefined) await drain()
    },
    counts: (runId) => ({ ...countsOf(runId) }),
  }
}
