/**
 * The few calls `forge run` makes of the local Temporal dev server, over its HTTP API (issue 15).
 *
 * The embedded stack starts the dev server with `--http-port` (stack/local-stack.ts), and a CLI that
 * only starts a workflow and waits for it does not need the gRPC SDK: importing `@temporalio/client`
 * (grpc-js, protobufjs and the API's descriptors) and opening its first connection cost a `forge run`
 * ~0.7 s of CPU on a quiet 2-core machine before anything ran, against ~15 ms for a first HTTP call.
 * A Temporal cluster Forge did not start (TLS, API keys, a fleet) is still called through the SDK.
 *
 * Payloads travel in their canonical form (`application/json+no-payload-shorthand`): `json/plain`
 * metadata and the JSON text base64-encoded, exactly as the SDK's default converter writes and reads
 * them. The API's default shorthand is lossy: it turned a workflow result's empty array into null
 * (the completeness report's `missing: []`, caught by test/integration/completeness.test.ts).
 * Errors carry the gRPC status code of the server's answer (`code`: 14 UNAVAILABLE for a server that is
 * down or restarting, as a refused or dropped connection is), so callers retry an outage as they do
 * with the SDK.
 */
import { randomUUID } from 'node:crypto'
import { Agent, request } from 'node:http'
import { hostname } from 'node:os'

/** gRPC status codes the callers tell apart */
export const GRPC_ALREADY_EXISTS = 6
export const GRPC_NOT_FOUND = 5
export const GRPC_UNAVAILABLE = 14

/** A call the server refused, or a server that could not be reached (`code` 14). */
export class TemporalHttpError extends Error {
  override name = 'TemporalHttpError'
  constructor(
    message: string,
    /** the gRPC status code of the answer */
    readonly code: number,
    options?: { cause?: unknown },
  ) {
    super(message, options)
  }
}

/** A workflow that closed other than completed: failed, cancelled, terminated or timed out. */
export class TemporalWorkflowEndedError extends Error {
  override name = 'TemporalWorkflowEndedError'
  constructor(
    message: string,
    /** how it closed: failed, canceled, terminated, timed_out */
    readonly status: string,
    /** the failure's messages, outermost first (a failed workflow's cause chain) */
    readonly messages: readonly string[],
  ) {
    super(message)
  }
}

interface Failure {
  message?: string
  cause?: Failure
}

interface HistoryEvent {
  eventType?: string
  workflowExecutionCompletedEventAttributes?: { result?: { payloads?: unknown[] } }
  workflowExecutionFailedEventAttributes?: { failure?: Failure }
  workflowExecutionTerminatedEventAttributes?: { reason?: string }
  workflowExecutionContinuedAsNewEventAttributes?: { newExecutionRunId?: string }
}

/** canonical protobuf JSON, payloads included (not the lossy shorthand) */
const MEDIA_TYPE = 'application/json+no-payload-shorthand'

/** how long one long poll for a workflow's end may take before the connection counts as lost (the server answers within ~20 s) */
const LONG_POLL_TIMEOUT_MS = 70_000
const CALL_TIMEOUT_MS = 15_000

export interface TemporalHttpClient {
  /** the namespace exists and is served (the stack's readiness check) */
  describeNamespace(): Promise<void>
  /** starts a workflow; throws TemporalHttpError with code 6 when its id is taken under the reuse policy */
  startWorkflow(opts: { workflowId: string; workflowType: string; taskQueue: string; args: unknown[]; reusePolicy?: 'REJECT_DUPLICATE' | 'ALLOW_DUPLICATE' }): Promise<{ runId: string }>
  /** waits for the workflow to close, following continue-as-new; its result, or TemporalWorkflowEndedError */
  result(workflowId: string, runId?: string): Promise<unknown>
  cancel(workflowId: string): Promise<void>
  terminate(workflowId: string, reason: string): Promise<void>
  close(): void
}

/**
 * A client of the dev server's HTTP API at `baseUrl` (http://127.0.0.1:PORT) for `namespace`. A
 * function is asked again for every call: a dev server restarted while its HTTP port was taken listens
 * on another one (its gRPC port it waits for), and a run's waiter follows it there.
 */
export function temporalHttpClient(at: string | (() => string), namespace: string): TemporalHttpClient {
  const agent = new Agent({ keepAlive: true, maxSockets: 4 })
  const identity = `${process.pid}@${hostname()}`
  const ns = `/api/v1/namespaces/${encodeURIComponent(namespace)}`
  const workflow = (id: string): string => `${ns}/workflows/${encodeURIComponent(id)}`

  const call = <T>(method: 'GET' | 'POST', path: string, body: unknown, timeoutMs: number): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const baseUrl = typeof at === 'string' ? at : at()
      const url = new URL(path, baseUrl)
      const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body))
      const headers = data === undefined ? { accept: MEDIA_TYPE } : { accept: MEDIA_TYPE, 'content-type': MEDIA_TYPE, 'content-length': data.length }
      const req = request(url, { method, agent, headers }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('error', (error) => reject(unreachable(baseUrl, error)))
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8')
          let parsed: unknown
          try {
            parsed = text === '' ? {} : JSON.parse(text)
          } catch {
            return reject(new TemporalHttpError(`Temporal's HTTP API at ${baseUrl} answered ${method} ${url.pathname} with HTTP ${res.statusCode} and no JSON: ${text.slice(0, 200)}`, res.statusCode === 503 ? GRPC_UNAVAILABLE : 2))
          }
          if (res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300) return resolve(parsed as T)
          const status = parsed as { code?: number; message?: string }
          const code = typeof status.code === 'number' ? status.code : res.statusCode === 503 ? GRPC_UNAVAILABLE : 2
          reject(new TemporalHttpError(`Temporal (${baseUrl}) refused ${method} ${url.pathname}: ${status.message ?? `HTTP ${res.statusCode}`}`, code))
        })
      })
      req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer in ${timeoutMs / 1000} s`)))
      req.on('error', (error) => reject(unreachable(baseUrl, error)))
      req.end(data)
    })

  return {
    async describeNamespace() {
      await call('GET', ns, undefined, CALL_TIMEOUT_MS)
    },
    async startWorkflow(opts) {
      const answer = await call<{ runId?: string }>(
        'POST',
        workflow(opts.workflowId),
        {
          workflowId: opts.workflowId,
          workflowType: { name: opts.workflowType },
          taskQueue: { name: opts.taskQueue },
          input: { payloads: opts.args.map(jsonPayload) },
          identity,
          requestId: randomUUID(),
          workflowIdReusePolicy: `WORKFLOW_ID_REUSE_POLICY_${opts.reusePolicy ?? 'ALLOW_DUPLICATE'}`,
        },
        CALL_TIMEOUT_MS,
      )
      return { runId: answer.runId ?? '' }
    },
    async result(workflowId, firstRunId) {
      let runId = firstRunId
      let pageToken: string | undefined
      for (;;) {
        const query = new URLSearchParams({ waitNewEvent: 'true', historyEventFilterType: 'HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT' })
        if (runId !== undefined && runId !== '') query.set('execution.runId', runId)
        if (pageToken !== undefined) query.set('nextPageToken', pageToken)
        const answer = await call<{ history?: { events?: HistoryEvent[] }; nextPageToken?: string }>('GET', `${workflow(workflowId)}/history?${query.toString()}`, undefined, LONG_POLL_TIMEOUT_MS)
        const event = answer.history?.events?.[0]
        if (event === undefined) {
          // the long poll ended before the workflow did: poll again from where it left off
          pageToken = answer.nextPageToken || undefined
          continue
        }
        pageToken = undefined
        const next = closedWith(event)
        if (next.kind === 'completed') return next.result
        if (next.kind === 'continued') {
          runId = next.runId
          continue
        }
        throw next.error
      }
    },
    async cancel(workflowId) {
      await call('POST', `${workflow(workflowId)}/cancel`, { identity, requestId: randomUUID() }, CALL_TIMEOUT_MS)
    },
    async terminate(workflowId, reason) {
      await call('POST', `${workflow(workflowId)}/terminate`, { reason, identity }, CALL_TIMEOUT_MS)
    },
    close() {
      agent.destroy()
    },
  }
}

function unreachable(baseUrl: string, error: Error): TemporalHttpError {
  return new TemporalHttpError(`Temporal's HTTP API at ${baseUrl} is unreachable: ${error.message}`, GRPC_UNAVAILABLE, { cause: error })
}

type Closed = { kind: 'completed'; result: unknown } | { kind: 'continued'; runId: string } | { kind: 'ended'; error: TemporalWorkflowEndedError }

/** What a workflow's close event says. */
export function closedWith(event: HistoryEvent): Closed {
  switch (event.eventType) {
    case 'EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED': {
      const payloads = event.workflowExecutionCompletedEventAttributes?.result?.payloads
      return { kind: 'completed', result: payloads !== undefined && payloads.length > 0 ? decodePayload(payloads[0]) : undefined }
    }
    case 'EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW': {
      const runId = event.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId
      if (runId === undefined || runId === '') return ended('failed', ['the workflow continued as new without naming its next run'])
      return { kind: 'continued', runId }
    }
    case 'EVENT_TYPE_WORKFLOW_EXECUTION_FAILED': {
      const messages: string[] = []
      for (let f = event.workflowExecutionFailedEventAttributes?.failure; f !== undefined; f = f.cause) messages.push(f.message ?? '')
      return ended('failed', messages.length > 0 ? messages : ['Workflow execution failed'])
    }
    case 'EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED':
      return ended('canceled', ['Workflow canceled'])
    case 'EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED':
      return ended('terminated', [event.workflowExecutionTerminatedEventAttributes?.reason || 'Workflow execution terminated'])
    case 'EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT':
      return ended('timed_out', ['Workflow execution timed out'])
    default:
      return ended('failed', [`unexpected close event ${String(event.eventType)}`])
  }
}

function ended(status: string, messages: string[]): { kind: 'ended'; error: TemporalWorkflowEndedError } {
  return { kind: 'ended', error: new TemporalWorkflowEndedError(messages.at(-1) ?? status, status, messages) }
}

/** A JSON value as a `json/plain` payload, as the SDK's default converter writes it. */
function jsonPayload(value: unknown): { metadata: { encoding: string }; data: string } {
  return { metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: Buffer.from(JSON.stringify(value)).toString('base64') }
}

/** A payload in its canonical form: `json/plain` (its JSON value) or `binary/null` (undefined); any other encoding is refused. */
function decodePayload(payload: unknown): unknown {
  const p = (payload ?? {}) as { metadata?: Record<string, string>; data?: string }
  const encoding = Buffer.from(p.metadata?.['encoding'] ?? '', 'base64').toString('utf8')
  if (encoding === 'binary/null') return undefined
  if (encoding === 'json/plain') return JSON.parse(Buffer.from(p.data ?? '', 'base64').toString('utf8'))
  throw new TemporalHttpError(`a workflow result encoded ${JSON.stringify(encoding)}, which forge run does not decode`, 2)
}
