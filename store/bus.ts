/**
 * The one NATS module: subjects, the results stream, publishers, and the store query protocol.
 * Results go through JetStream with `Nats-Msg-Id = attempt_uid` (dedup); live progress and store
 * queries use core NATS.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { headers as natsHeaders, nanos } from '@nats-io/nats-core'
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream'
import type { AttemptRegrade, AttemptResult, AuditRecord, BaselineRecord, JudgeOutcome, ReviewResolution, RunRecordInput, StoredTrace } from '../core/contracts/index.js'
import type { StoreFailure } from '../core/store-watch.js'
import { BusError } from './errors.js'
import { busAccess, SIGNATURE_HEADER, signMessage, taggedMsgId, type BusRole } from './bus-auth.js'

/**
 * The JetStream client library, loaded when first needed: a process that only publishes and
 * subscribes on the core protocol (`forge run` before its workflow starts) goes without it (issue 15).
 * Its client, `jetstream(nc)`, is imported from '@nats-io/jetstream' where it is used.
 */
const jetstreamLibrary = (): Promise<typeof import('@nats-io/jetstream')> => import('@nats-io/jetstream')

export const RESULTS_STREAM = 'FORGE_RESULTS'
export const INGESTER_CONSUMER = 'forge-ingester'
/**
 * The warm-up stream (issue 15): a waiting warm worker's JIT warm-up (app/jit-warmup.ts) publishes its
 * mock attempts here, through the JetStream client code a run's attempts take, on the subjects
 * `warmupSubjectOf` gives. Nobody consumes it; it is held in the server's memory, at most
 * WARMUP_STREAM_BYTES, and forgets a message after a minute.
 */
export const WARMUP_STREAM = 'FORGE_WARMUP'
const WARMUP_STREAM_BYTES = 32 * 1024 * 1024
/** Where the warm-up publishes what a run would publish on `subject`: `forge.results.attempt.x` → `forge.warmup.results.attempt.x`. */
export function warmupSubjectOf(subject: string): string {
  return `forge.warmup.${subject.startsWith('forge.') ? subject.slice('forge.'.length) : subject}`
}
export const subjects = {
  /** an attempt's result alone (its trace then travels on its trace subject) */
  attempt: 'forge.results.attempt',
  /** an attempt's result with its stored trace inside, one subject per attempt (AttemptMessage): the judge worker reads it back by uid */
  attemptOf: (attemptUid: string) => `forge.results.attempt.${traceKey(attemptUid)}`,
  attemptPrefix: 'forge.results.attempt.',
  run: 'forge.results.run',
  baseline: 'forge.results.baseline',
  /** one subject per attempt, so the judge worker can read an attempt's trace by its uid (last message of the subject) */
  trace: (attemptUid: string) => `forge.results.trace.${traceKey(attemptUid)}`,
  tracePrefix: 'forge.results.trace.',
  judge: 'forge.results.judge',
  regrade: 'forge.results.regrade',
  review: 'forge.results.review',
  /** audit entries of regrades and resolutions, and the links of a run's chain (app/audit.ts) */
  audit: 'forge.results.audit',
  progress: (runId: string) => `forge.progress.${runId}`,
  storeQuery: 'forge.store.query',
  ingesterPing: 'forge.ingester.ping',
  /** "someone waits for the store now": the ingester inserts what it holds without waiting for its windows */
  ingesterFlush: 'forge.ingester.flush',
} as const

export type { NatsConnection }

/** The results key of this process's bus connection (store/bus-auth.ts): publishers sign with it. */
let processResultsKey: string | undefined

/** The results key this process signs and checks result messages with; undefined when it has none. */
export function resultsKey(): string | undefined {
  return processResultsKey
}

/**
 * Signs this process's (this thread's) result messages with `key` from now on, as a bus connection
 * holding it would: a thread that publishes only to a stand-in bus (app/ingester-warmup.ts).
 */
export function signResultsWith(key: string | undefined): void {
  processResultsKey = key
}

/**
 * Connects to NATS as `role` (store/bus-auth.ts): with the role's credentials, TLS files and the
 * results key this process then signs result messages with.
 */
export async function connectBus(url: string, name: string, role: BusRole = 'cli'): Promise<NatsConnection> {
  const access = busAccess(url, role)
  if (access.resultsKey !== undefined) processResultsKey = access.resultsKey
  try {
    // a cluster is several comma-separated URLs: any one that answers is enough to start
    return await connect({
      servers: url.split(',').map((s) => s.trim()),
      name,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      // every request (each JetStream publish) would otherwise build two Error objects up front for their
      // stack traces: ~25 µs each, a tenth of a worker's publishing; our errors name the operation anyway
      noAsyncTraces: true,
      ...(access.user !== undefined ? { user: access.user, pass: access.password ?? '' } : {}),
      ...(access.tls !== undefined ? { tls: access.tls } : {}),
    })
  } catch (error) {
    const message = (error as Error).message
    const hint = /authori[sz]ation|permission/i.test(message)
      ? ` (role ${role}${access.user !== undefined ? `, user ${access.user}` : ', no credentials'}: the embedded stack's are in FORGE_HOME/secrets/bus.json, a fleet's come from FORGE_NATS_USER / FORGE_NATS_PASSWORD)`
      : ''
    throw new BusError(`cannot connect to NATS at ${url}: ${message}${hint}`, { cause: error })
  }
}

/**
 * Publishes one message of the results stream: signed with the run's key and under a tagged msg id
 * when this process holds the results key (store/bus-auth.ts), as it is otherwise.
 */
export async function publishResult(js: JetStreamClient, subject: string, value: unknown, msgID: string, runId: string): Promise<{ duplicate: boolean }> {
  return publishBody(js, subject, encodeJson(value), msgID, runId)
}

async function publishBody(js: JetStreamClient, subject: string, body: Uint8Array, msgID: string, runId: string): Promise<{ duplicate: boolean }> {
  const key = processResultsKey
  if (key === undefined) return { duplicate: (await js.publish(subject, body, { msgID, timeout: 10_000 })).duplicate }
  const headers = natsHeaders()
  headers.set(SIGNATURE_HEADER, signMessage(key, runId, subject, body))
  const ack = await js.publish(subject, body, { msgID: taggedMsgId(key, runId, msgID), headers, timeout: 10_000 })
  return { duplicate: ack.duplicate }
}

/**
 * Creates (or updates) the results stream and the ingester's durable pull consumer. Idempotent.
 * A cluster that just started may not have elected its JetStream leader yet, and ingesters started
 * together race to create the stream: the whole step is retried (it is idempotent) for `waitMs`.
 */
export async function ensureResultsStream(nc: NatsConnection, opts: { replicas?: number; waitMs?: number } = {}): Promise<void> {
  const deadline = Date.now() + (opts.waitMs ?? 60_000)
  for (let delay = 250; ; delay = Math.min(delay * 2, 4_000)) {
    try {
      return await ensureResultsStreamOnce(nc, opts)
    } catch (error) {
      if (Date.now() + delay > deadline) throw new BusError(`setting up the results stream failed: ${(error as Error).message}`, { cause: error })
      await new Promise((resolve) => setTimeout(resolve, delay))
    }
  }
}

async function ensureResultsStreamOnce(nc: NatsConnection, opts: { replicas?: number }): Promise<void> {
  const { AckPolicy, jetstreamManager, RetentionPolicy, StorageType } = await jetstreamLibrary()
  const jsm = await jetstreamManager(nc)
  const config = {
    name: RESULTS_STREAM,
    subjects: ['forge.results.>'],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    duplicate_window: nanos(10 * 60_000),
    num_replicas: opts.replicas ?? 1,
    max_age: nanos(7 * 24 * 3600_000),
  }
  try {
    await jsm.streams.info(RESULTS_STREAM)
    // replicas given: a stream created R1 becomes R3 once the cluster has the nodes (an upgrade to the 3-node values)
    await jsm.streams.update(RESULTS_STREAM, { duplicate_window: config.duplicate_window, max_age: config.max_age, ...(opts.replicas !== undefined ? { num_replicas: opts.replicas } : {}) })
  } catch {
    await jsm.streams.add(config)
  }
  const consumer = {
    durable_name: INGESTER_CONSUMER,
    ack_policy: AckPolicy.Explicit,
    // a delivery lost with a killed server is redelivered this soon (an insert round takes well under a second)
    ack_wait: nanos(15_000),
    max_ack_pending: 20_000,
    max_deliver: -1,
  }
  const existing = await jsm.consumers.info(RESULTS_STREAM, INGESTER_CONSUMER).catch(() => undefined)
  if (existing === undefined) await jsm.consumers.add(RESULTS_STREAM, consumer)
  else if (existing.config.ack_wait !== consumer.ack_wait) await jsm.consumers.update(RESULTS_STREAM, INGESTER_CONSUMER, { ack_wait: consumer.ack_wait })
}

/**
 * Creates (or updates) the warm-up stream: the embedded stack's ingester does, as its warm workers
 * warm up through it. Its subjects hold the warm-up's results only: its progress events, on
 * `forge.warmup.progress.*`, go nowhere.
 */
export async function ensureWarmupStream(nc: NatsConnection): Promise<void> {
  const { DiscardPolicy, jetstreamManager, RetentionPolicy, StorageType } = await jetstreamLibrary()
  const jsm = await jetstreamManager(nc)
  const config = {
    subjects: [warmupSubjectOf('forge.results.>')],
    storage: StorageType.Memory,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    max_bytes: WARMUP_STREAM_BYTES,
    max_age: nanos(60_000),
    duplicate_window: nanos(10_000),
    num_replicas: 1,
  }
  try {
    await jsm.streams.info(WARMUP_STREAM)
    await jsm.streams.update(WARMUP_STREAM, { subjects: config.subjects, max_bytes: config.max_bytes, max_age: config.max_age, duplicate_window: config.duplicate_window })
  } catch {
    await jsm.streams.add({ name: WARMUP_STREAM, ...config })
  }
}

/** The largest message the connected server accepts (its INFO `max_payload`; NATS's default 1 MiB before INFO). */
export function busMaxPayload(nc: NatsConnection): number {
  return nc.info?.max_payload ?? 1024 * 1024
}

const encoder = new TextEncoder()

export function encodeJson(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value))
}

/**
 * The msg id of a re-run's message: the completeness check re-runs an attempt whose result never
 * reached the store, and JetStream must not drop that as a duplicate of one it saw but lost.
 */
const republished = (msgId: string, round: number | undefined): string => (round === undefined ? msgId : `${msgId}#rerun-${round}`)

/** Publishes one attempt's result; JetStream drops a second publish with the same attempt_uid. */
export async function publishAttemptResult(js: JetStreamClient, result: AttemptResult, republish?: number): Promise<{ duplicate: boolean }> {
  try {
    return await publishResult(js, subjects.attempt, result, republished(result.attempt_uid, republish), result.run_id)
  } catch (error) {
    throw new BusError(`publishing attempt ${result.attempt_uid} failed: ${(error as Error).message}`, { cause: error })
  }
}

/** An attempt as published: its result (with its audit entry), its stored trace, and the two encoded as one AttemptMessage. */
export interface AttemptMessageOut {
  result: AttemptResult
  trace: StoredTrace
  body: Uint8Array
}

export function attemptMessageOf(result: AttemptResult, trace: StoredTrace): AttemptMessageOut {
  return { result, trace, body: encodeJson({ ...result, stored_trace: trace }) }
}

/**
 * Publishes an attempt: its result and stored trace as one message (AttemptMessage) when they fit in
 * `maxBytes`, else as the two messages of old, each within the bus's limit on its own. Returns how
 * many messages it took. JetStream drops a second publish of the same attempt (the same msg id).
 */
export async function publishAttempt(js: JetStreamClient, message: AttemptMessageOut, maxBytes: number, republish?: number): Promise<{ messages: 1 | 2 }> {
  const { result, trace, body } = message
  if (body.byteLength > maxBytes) {
    await Promise.all([publishStoredTrace(js, trace, republish), publishAttemptResult(js, result, republish)])
    return { messages: 2 }
  }
  try {
    await publishBody(js, subjects.attemptOf(result.attempt_uid), body, republished(result.attempt_uid, republish), result.run_id)
  } catch (error) {
    throw new BusError(`publishing attempt ${result.attempt_uid} failed: ${(error as Error).message}`, { cause: error })
  }
  return { messages: 1 }
}

export async function publishRunRecord(js: JetStreamClient, run: RunRecordInput): Promise<void> {
  try {
    // a sealed record (its audit head set) is a new message, not a duplicate of the final one
    await publishResult(js, subjects.run, run, `${run.run_id}@${run.status}${run.audit_head ? `@${run.audit_head}` : ''}`, run.run_id)
  } catch (error) {
    throw new BusError(`publishing run ${run.run_id} failed: ${(error as Error).message}`, { cause: error })
  }
}

/** The key id that signs audit records (store/bus-auth.ts runKey); run records and results use their run id. */
export const AUDIT_KEY_ID = 'forge-audit'

/** Publishes audit entries and chain links for the ingester to store; `id` dedups a republished record. */
export async function publishAuditRecord(js: JetStreamClient, record: AuditRecord, id: string): Promise<void> {
  try {
    // one record may hold entries of several runs (regrades): signed under one key id for all audit records
    await publishResult(js, subjects.audit, record, id, AUDIT_KEY_ID)
  } catch (error) {
    throw new BusError(`publishing audit record ${id} failed: ${(error as Error).message}`, { cause: error })
  }
}

/** Publishes a baseline for the ingester to store (the embedded store's single writer). */
export async function publishBaseline(js: JetStreamClient, baseline: BaselineRecord): Promise<void> {
  try {
    await publishResult(js, subjects.baseline, baseline, `baseline/${baseline.name}/${baseline.version}`, baseline.run_id)
  } catch (error) {
    throw new BusError(`publishing baseline ${baseline.name} v${baseline.version} failed: ${(error as Error).message}`, { cause: error })
  }
}

export interface ProgressEvent {
  attempt_uid: string
  task_id: string
  attempt: number
  outcome: string
  failure_bucket: string | null
  /** the worker that ran the attempt (live per-worker progress) */
  worker_id?: string
}

/** A run's progress message: one event, or (what workers send) the events of a short window. */
export type ProgressMessage = ProgressEvent | { events: ProgressEvent[] }

/** The events of one progress message, whichever shape it has (anything else: none). */
export function progressEventsOf(body: unknown): ProgressEvent[] {
  if (typeof body !== 'object' || body === null) return []
  const events = (body as { events?: unknown }).events
  if (Array.isArray(events)) return events.filter((e): e is ProgressEvent => typeof e === 'object' && e !== null && typeof (e as ProgressEvent).attempt_uid === 'string')
  return typeof (body as ProgressEvent).attempt_uid === 'string' ? [body as ProgressEvent] : []
}

/**
 * How long a worker gathers its finished attempts' progress events before it sends them, one message
 * per run: a message per attempt cost the worker a socket write, nats-server a delivery and `forge run`
 * a decode each — ~1,000 of each per second on a busy run (issue 15) — for a display. An attempt
 * activity sends what waits when it ends, so a run's last events are out before its workflow ends.
 */
export const PROGRESS_WINDOW_MS = 25
const PROGRESS_MAX_EVENTS = 256

export interface ProgressPublisher {
  add(runId: string, event: ProgressEvent): void
  /** sends what waits now */
  flush(): void
}

/** Live progress, best effort (core NATS, no ack): a lost message only slows a display. */
export function createProgressPublisher(nc: NatsConnection, windowMs = PROGRESS_WINDOW_MS): ProgressPublisher {
  const waiting = new Map<string, ProgressEvent[]>()
  let timer: NodeJS.Timeout | undefined
  const flush = (): void => {
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
    for (const [runId, events] of waiting) {
      try {
        nc.publish(subjects.progress(runId), encodeJson({ events } satisfies ProgressMessage))
      } catch {
        // a closed connection: the display misses these
      }
    }
    waiting.clear()
  }
  return {
    add(runId, event) {
      const events = waiting.get(runId) ?? []
      events.push(event)
      waiting.set(runId, events)
      if (events.length >= PROGRESS_MAX_EVENTS) flush()
      else if (timer === undefined) {
        timer = setTimeout(flush, windowMs)
        timer.unref()
      }
    },
    flush,
  }
}

/** Request and reply of the store query protocol served by the ingester (the embedded store's owner). */
export interface StoreQueryRequest {
  sql: string
  params?: Record<string, unknown>
  /** the read's time limit (the ingester caps it) */
  timeout_s?: number
}
/** `refused`: the read was refused before it ran (QueryRefusedError), not failed */
export type StoreQueryReply = { ok: true; rows: unknown[] } | { ok: false; error: string; refused?: boolean }

/** An attempt_uid as one subject token: base64url (no `.`, `*` or `>`), stable and reversible. */
export function traceKey(attemptUid: string): string {
  return Buffer.from(attemptUid, 'utf8').toString('base64url')
}

/**
 * Publishes an attempt's full trace (with what it was graded on) on its own subject of the results
 * stream: the ingester stores it (table `traces`) and the judge worker reads it back by attempt_uid.
 */
export async function publishStoredTrace(js: JetStreamClient, stored: StoredTrace, republish?: number): Promise<void> {
  try {
    await publishResult(js, subjects.trace(stored.attempt_uid), stored, republished(`trace/${stored.attempt_uid}`, republish), stored.run_id)
  } catch (error) {
    throw new BusError(`publishing the trace of attempt ${stored.attempt_uid} failed: ${(error as Error).message}`, { cause: error })
  }
}

const managers = new WeakMap<NatsConnection, Promise<JetStreamManager>>()

/** One JetStream manager per connection (making one asks the server for the account: a round trip). */
function managerOf(nc: NatsConnection): Promise<JetStreamManager> {
  let jsm = managers.get(nc)
  if (jsm === undefined) {
    jsm = jetstreamLibrary().then(({ jetstreamManager }) => jetstreamManager(nc))
    managers.set(nc, jsm)
    jsm.catch(() => managers.delete(nc))
  }
  return jsm
}

/**
 * The stored trace of an attempt, read from the results stream (the last message of its attempt
 * subject, or of its trace subject when the two travelled apart); undefined when the stream does not
 * hold it (never published, or aged out: read the `traces` table then).
 */
export async function readStoredTrace(nc: NatsConnection, attemptUid: string): Promise<unknown> {
  try {
    const streams = (await managerOf(nc)).streams
    const together = await streams.getMessage(RESULTS_STREAM, { last_by_subj: subjects.attemptOf(attemptUid) })
    if (together !== null) return together.json<{ stored_trace?: unknown }>().stored_trace
    const apart = await streams.getMessage(RESULTS_STREAM, { last_by_subj: subjects.trace(attemptUid) })
    return apart === null ? undefined : apart.json()
  } catch (error) {
    throw new BusError(`reading the trace of attempt ${attemptUid} failed: ${(error as Error).message}`, { cause: error })
  }
}

/** Publishes what the judge worker found for one attempt (judge metrics, the revised judgement). */
export async function publishJudgeOutcome(js: JetStreamClient, outcome: JudgeOutcome): Promise<void> {
  try {
    await publishResult(js, subjects.judge, outcome, `judge/${outcome.attempt_uid}/${outcome.grading_version}`, outcome.run_id)
  } catch (error) {
    throw new BusError(`publishing the judge outcome of attempt ${outcome.attempt_uid} failed: ${(error as Error).message}`, { cause: error })
  }
}

/** Publishes one re-graded attempt (a new grading version) for the ingester to store. */
export async function publishRegrade(js: JetStreamClient, regrade: AttemptRegrade): Promise<void> {
  try {
    await publishResult(js, subjects.regrade, regrade, `regrade/${regrade.attempt_uid}/${regrade.grading_version}`, regrade.run_id)
  } catch (error) {
    throw new BusError(`publishing the regrade of attempt ${regrade.attempt_uid} failed: ${(error as Error).message}`, { cause: error })
  }
}

/** Publishes a review resolution (appended; never replaces the original grade). */
export async function publishReviewResolution(js: JetStreamClient, resolution: ReviewResolution): Promise<void> {
  try {
    await publishResult(js, subjects.review, resolution, `review/${resolution.resolution_id}`, resolution.run_id)
  } catch (error) {
    throw new BusError(`publishing review resolution ${resolution.resolution_id} failed: ${(error as Error).message}`, { cause: error })
  }
}

/** How far the ingester has got through the results stream. */
export interface IngestProgress {
  /** the stream's last sequence when the wait began: everything published before it */
  target: number
  /** the ingester consumer's ack floor (every message up to it is stored, or rejected) */
  acked: number
  /** messages not yet delivered plus delivered but not acked */
  pending: number
}

/**
 * Tells the ingester that someone now waits for what was published (the end of a run, a seal): it
 * inserts what it holds at once instead of after its quiet window (workers/ingester.ts). Core NATS,
 * no answer: a lost request only costs that window.
 */
export function requestIngesterFlush(nc: NatsConnection): void {
  try {
    nc.publish(subjects.ingesterFlush)
  } catch {
    // a closed connection: the ingester's own windows still store everything
  }
}

/**
 * Whether the store fails the ingester's inserts (a full disk, a server down), from its ping's answer
 * (workers/ingester.ts IngesterStats.failing); undefined when inserts go in or no ingester answers.
 */
export async function storeFailureOf(nc: NatsConnection, timeoutMs = 1_000): Promise<StoreFailure | undefined> {
  try {
    const msg = await nc.request(subjects.ingesterPing, new Uint8Array(), { timeout: timeoutMs })
    const failing = msg.json<{ stats?: { failing?: unknown } }>().stats?.failing
    if (typeof failing !== 'object' || failing === null) return undefined
    const { since, error } = failing as Record<string, unknown>
    return typeof since === 'number' && typeof error === 'string' ? { since, error: error.slice(0, 500) } : undefined
  } catch {
    return undefined
  }
}

/**
 * Waits until the ingester has acked every message published to the results stream before the call
 * (its ack floor reaches the stream's last sequence then). Returns the progress seen last and
 * whether it caught up within `timeoutMs`.
 */
export async function waitForIngestedBacklog(
  nc: NatsConnection,
  opts: { timeoutMs: number; pollMs?: number },
): Promise<{ caughtUp: boolean; progress: IngestProgress }> {
  const deadline = Date.now() + opts.timeoutMs
  let jsm: JetStreamManager
  let target: number
  try {
    jsm = await managerOf(nc)
    target = (await jsm.streams.info(RESULTS_STREAM)).state.last_seq
    requestIngesterFlush(nc)
  } catch (error) {
    throw new BusError(`reading the results stream failed: ${(error as Error).message}`, { cause: error })
  }
  for (;;) {
    let progress: IngestProgress
    try {
      const consumer = await jsm.consumers.info(RESULTS_STREAM, INGESTER_CONSUMER)
      progress = { target, acked: consumer.ack_floor.stream_seq, pending: consumer.num_pending + consumer.num_ack_pending }
    } catch (error) {
      throw new BusError(`reading the ingester's consumer failed: ${(error as Error).message}`, { cause: error })
    }
    if (progress.acked >= target || progress.pending === 0) return { caughtUp: true, progress }
    if (Date.now() >= deadline) return { caughtUp: false, progress }
    await new Promise((resolve) => setTimeout(resolve, opts.pollMs ?? 25))
  }
}
