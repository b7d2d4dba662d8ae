/**
 * Stored attempts as OpenTelemetry spans, in the OTLP/JSON encoding of an
 * ExportTraceServiceRequest (opentelemetry-proto `trace/v1`, JSON mapping: ids as hex, 64-bit times
 * as decimal strings). One trace per attempt: trace id from the attempt uid, span ids from uid and
 * span id, so exporting an attempt twice sends the same ids. Grades, invariants, the verdict and
 * tier 2 — nodes without timing — become events of the grading span. Pure.
 */
import { seedFromString } from './random.js'
import { flattenTrace, type TraceNode, type TraceView } from './span-tree.js'

export interface OtlpAnyValue {
  stringValue?: string
  intValue?: string
  doubleValue?: number
  boolValue?: boolean
  arrayValue?: { values: OtlpAnyValue[] }
}

export interface OtlpKeyValue {
  key: string
  value: OtlpAnyValue
}

export interface OtlpSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  /** SPAN_KIND_INTERNAL */
  kind: 1
  startTimeUnixNano: string
  endTimeUnixNano: string
  attributes: OtlpKeyValue[]
  events: { timeUnixNano: string; name: string; attributes: OtlpKeyValue[] }[]
  /** 0 unset, 1 ok, 2 error */
  status: { code: 0 | 1 | 2; message?: string }
}

export interface OtlpTraceRequest {
  resourceSpans: {
    resource: { attributes: OtlpKeyValue[] }
    scopeSpans: { scope: { name: string; version: string }; spans: OtlpSpan[] }[]
  }[]
}

/** `chars` hex digits from FNV-1a hashes of the text under different salts: stable, and never all zeros in practice. */
const hex = (text: string, chars: number): string =>
  Array.from({ length: chars / 8 }, (_, i) => seedFromString(`${i}:${text}`).toString(16).padStart(8, '0')).join('')

/** The OTLP trace id (32 hex) of an attempt. */
export const otlpTraceId = (attemptUid: string): string => hex(`forge-trace:${attemptUid}`, 32)
/** The OTLP span id (16 hex) of a span of an attempt. */
export const otlpSpanId = (attemptUid: string, spanId: string): string => hex(`forge-span:${attemptUid}/${spanId}`, 16)

const MAX_VALUE = 4096
const str = (key: string, value: string): OtlpKeyValue => ({ key, value: { stringValue: value.length > MAX_VALUE ? `${value.slice(0, MAX_VALUE - 1)}…` : value } })
const int = (key: string, value: number): OtlpKeyValue => ({ key, value: { intValue: String(Math.round(value)) } })

/** Unix nanoseconds as the decimal string OTLP/JSON wants (exact beyond 2^53 via BigInt). */
export function unixNano(ms: number): string {
  return (BigInt(Math.round(ms * 1000)) * 1000n).toString()
}

function fieldAttributes(node: TraceNode): OtlpKeyValue[] {
  return node.fields.map((f) => str(`forge.${f.label.replaceAll(' ', '_')}`, f.value))
}

function statusOf(node: TraceNode): OtlpSpan['status'] {
  if (node.status === 'error' || node.status === 'refused' || node.status === 'failed') return { code: 2, message: node.marks.join('; ') || node.status }
  if (node.status === 'ok' || node.status === 'passed') return { code: 1 }
  return { code: 0 }
}

/** The spans of one attempt; `startedAt` is when the attempt started (ms since the epoch): span times are relative to it. */
export function attemptSpans(view: TraceView, startedAt: number): OtlpSpan[] {
  const traceId = otlpTraceId(view.attempt_uid)
  const spans = new Map<string, OtlpSpan>()
  const out: OtlpSpan[] = []
  for (const node of flattenTrace(view)) {
    if (node.start_ms === null) {
      // a grade, invariant, verdict or tier-2 node: an event of the nearest timed ancestor
      const parent = node.parent_id === null ? undefined : spans.get(node.parent_id)
      const host = parent ?? out[0]
      if (host) host.events.push({ timeUnixNano: host.endTimeUnixNano, name: node.name, attributes: [str('forge.kind', node.kind), ...fieldAttributes(node)] })
      continue
    }
    const parentSpan = node.parent_id === null ? undefined : spans.get(node.parent_id)
    const span: OtlpSpan = {
      traceId,
      spanId: otlpSpanId(view.attempt_uid, node.id),
      ...(parentSpan ? { parentSpanId: parentSpan.spanId } : {}),
      name: node.name,
      kind: 1,
      startTimeUnixNano: unixNano(startedAt + node.start_ms),
      endTimeUnixNano: unixNano(startedAt + node.start_ms + (node.duration_ms ?? 0)),
      attributes: [
        str('forge.run_id', view.run_id),
        str('forge.task_id', view.task_id),
        int('forge.attempt', view.attempt),
        str('forge.attempt_uid', view.attempt_uid),
        str('forge.span_id', node.id),
        str('forge.category', node.kind),
        ...(node.marks.length > 0 ? [{ key: 'forge.marks', value: { arrayValue: { values: node.marks.map((m) => ({ stringValue: m })) } } }] : []),
        ...fieldAttributes(node),
        ...(node.kind === 'attempt'
          ? [
              str('forge.outcome', view.outcome),
              str('forge.validity', view.validity),
              ...(view.failure_bucket ? [str('forge.failure_bucket', view.failure_bucket)] : []),
              ...(view.model ? [str('gen_ai.request.model', view.model)] : []),
              int('gen_ai.usage.input_tokens', view.input_tokens),
              int('gen_ai.usage.output_tokens', view.output_tokens),
              ...(view.cost_usd !== null ? [{ key: 'forge.cost_usd', value: { doubleValue: view.cost_usd } }] : []),
            ]
          : []),
      ],
      events: node.marks.filter((m) => m.startsWith('injected fault') || m === 'budget refusal').map((m) => ({ timeUnixNano: unixNano(startedAt + node.start_ms!), name: m, attributes: [] })),
      status: statusOf(node),
    }
    spans.set(node.id, span)
    out.push(span)
  }
  return out
}

/** One export request for many attempts, with the resource that names Forge and the service. */
export function otlpTraceRequest(attempts: readonly { view: TraceView; startedAt: number }[], opts: { serviceName?: string; version: string }): OtlpTraceRequest {
  return otlpSpansRequest(
    attempts.flatMap((a) => attemptSpans(a.view, a.startedAt)),
    opts,
  )
}

/** One export request for spans already encoded (the live exporter batches spans of several attempts). */
export function otlpSpansRequest(spans: OtlpSpan[], opts: { serviceName?: string; version: string }): OtlpTraceRequest {
  return {
    resourceSpans: [
      {
        resource: { attributes: [str('service.name', opts.serviceName ?? 'forge'), str('telemetry.sdk.name', 'forge'), str('telemetry.sdk.language', 'nodejs')] },
        scopeSpans: [{ scope: { name: 'forge', version: opts.version }, spans }],
      },
    ],
  }
}

/**
 * The traces URL (…/v1/traces) of an OTLP/HTTP endpoint given as its base URL or its traces URL;
 * a problem naming `what` (the flag or setting) and the value when it is not an http(s) URL.
 */
export function otlpTracesUrl(endpoint: string, what: string): { ok: true; url: string } | { ok: false; problem: string } {
  let url: URL
  try {
    url = new URL(endpoint)
  } catch {
    return { ok: false, problem: `${what} must be an http(s) URL of an OTLP/HTTP collector, e.g. http://127.0.0.1:4318, got "${endpoint}"` }
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, problem: `${what} must be http or https, got "${endpoint}"` }
  return { ok: true, url: url.pathname.endsWith('/v1/traces') ? url.href : `${url.href.replace(/\/+$/, '')}/v1/traces` }
}

/** Core NATS subject on which workers report their live OTLP export of a run (counts so far, per worker). */
export const otlpReportSubject = (runId: string): string => `forge.progress.${runId}.otlp`

/** What one worker exported of one run so far: every attempt it finished is `settled` once its spans were sent, failed or dropped. */
export interface OtlpExportCounts {
  /** attempts whose spans were sent, failed or dropped */
  settled_attempts: number
  /** attempts whose spans the collector accepted */
  exported_attempts: number
  exported_spans: number
  /** export requests that failed (the collector answered an error, or could not be reached) */
  failed_requests: number
  /** spans of failed requests, and spans the collector said it rejected */
  failed_spans: number
  /** spans dropped because the export queue was full */
  dropped_spans: number
  /** the first failure, for the report */
  first_error?: string
}

export const noOtlpExports = (): OtlpExportCounts => ({ settled_attempts: 0, exported_attempts: 0, exported_spans: 0, failed_requests: 0, failed_spans: 0, dropped_spans: 0 })

/** The counts of several workers (each reports its own cumulative counts), summed. */
export function sumOtlpCounts(counts: Iterable<OtlpExportCounts>): OtlpExportCounts {
  const total = noOtlpExports()
  for (const c of counts) {
    total.settled_attempts += c.settled_attempts
    total.exported_attempts += c.exported_attempts
    total.exported_spans += c.exported_spans
    total.failed_requests += c.failed_requests
    total.failed_spans += c.failed_spans
    total.dropped_spans += c.dropped_spans
    if (total.first_error === undefined && c.first_error !== undefined) total.first_error = c.first_error
  }
  return total
}
