/**
 * The ingester: consumes the results stream in batches, inserts into ClickHouse and acks only after
 * the insert committed. In embedded mode it is the single owner of the chDB directory, so it also
 * answers store queries for every other process over NATS request/reply.
 */
import type { ClickHouseClient } from '@clickhouse/client'
import { jetstream, type JsMsg } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import { AttemptRegrade, AttemptResult, BaselineRecord, JudgeOutcome, ReviewResolution, RunRecord, StoredTrace } from '../core/contracts/index.js'
import { queryRows } from '../store/clickhouse.js'
import { QueryRefusedError } from '../store/errors.js'
import { encodeJson, INGESTER_CONSUMER, RESULTS_STREAM, subjects, type StoreQueryReply, type StoreQueryRequest } from '../store/bus.js'
import { insertAttempts, insertBaselines, insertRuns } from '../store/repositories.js'
import { insertAttemptGrading, insertJudgeOutcomes, insertRegrades, insertResolutions, insertStoredTraces } from '../store/grading-repositories.js'
import type { Logger } from '../engine/logger.js'

export interface IngesterOptions {
  nc: NatsConnection
  store: ClickHouseClient
  /** the connection store queries run on (default `store`): a second one, so a slow read never holds up an insert */
  queryStore?: ClickHouseClient
  logger: Logger
  /** serve store queries over NATS (embedded mode: this process owns chDB) */
  serveQueries: boolean
  batchSize?: number
  flushIntervalMs?: number
  /** how often grading rows (metrics, judgements, traces, regrades, resolutions) are inserted (default 500 ms) */
  gradingFlushMs?: number
}

export interface IngesterStats {
  inserted_attempts: number
  inserted_runs: number
  rejected: number
  batches: number
}

export interface Ingester {
  stats: IngesterStats
  stop(): Promise<void>
}

export async function startIngester(opts: IngesterOptions): Promise<Ingester> {
  const { nc, store, logger } = opts
  const batchSize = opts.batchSize ?? 2000
  const flushIntervalMs = opts.flushIntervalMs ?? 50
  const gradingFlushMs = opts.gradingFlushMs ?? 500
  const stats: IngesterStats = { inserted_attempts: 0, inserted_runs: 0, rejected: 0, batches: 0 }

  const querySub = opts.serveQueries
    ? nc.subscribe(subjects.storeQuery, {
        callback: (error, msg) => {
          if (error) return
          void answerQuery(opts.queryStore ?? store, msg.data).then((reply) => msg.respond(encodeJson(reply)))
        },
      })
    : undefined

  const pingSub = nc.subscribe(subjects.ingesterPing, {
    callback: (error, msg) => {
      if (!error) msg.respond(encodeJson({ pid: process.pid, serves_queries: opts.serveQueries, stats }))
    },
  })

  const consumer = await jetstream(nc).consumers.get(RESULTS_STREAM, INGESTER_CONSUMER)
  const messages = await consumer.consume({ max_messages: Math.max(batchSize * 2, 1000) })

  let buffer: JsMsg[] = []
  let timer: NodeJS.Timeout | undefined
  let running: Promise<void> | undefined
  let stopping = false

  // Grading rows (metrics, judgements, traces, regrades, review resolutions) go into wide tables, and
  // a chDB insert costs ~7–12 ms whatever its size: they are inserted every gradingFlushMs, not every
  // round, so they cost the attempt path nothing. Their messages are acked once they are in.
  const grading = { attempts: [] as AttemptResult[], traces: new Map<string, StoredTrace>(), judged: [] as JudgeOutcome[], regrades: [] as AttemptRegrade[], resolutions: [] as ReviewResolution[], msgs: [] as JsMsg[], since: 0 }
  let gradingTimer: NodeJS.Timeout | undefined
  const gradingDue = (): boolean =>
    grading.msgs.length > 0 && (stopping || grading.msgs.length >= batchSize || Date.now() - grading.since >= gradingFlushMs)

  // One insert round at a time, and what arrives meanwhile goes whole into the next batch: batches
  // grow with load instead of queueing up tiny ones.
  const flush = (): Promise<void> => {
    if (timer) clearTimeout(timer)
    timer = undefined
    if (running) return running
    if (buffer.length === 0 && !gradingDue()) {
      scheduleGrading()
      return Promise.resolve()
    }
    running = (async () => {
      while (buffer.length > 0 || gradingDue()) {
        if (buffer.length > 0) await ingestBatch(buffer.splice(0, batchSize))
        if (gradingDue()) await ingestGrading()
      }
    })().finally(() => {
      running = undefined
      scheduleGrading()
    })
    return running
  }

  function scheduleGrading(): void {
    if (grading.msgs.length === 0 || gradingTimer !== undefined) return
    gradingTimer = setTimeout(
      () => {
        gradingTimer = undefined
        void flush()
      },
      Math.max(0, gradingFlushMs - (Date.now() - grading.since)),
    )
  }

  async function ingestGrading(): Promise<void> {
    const lane = { ...grading, traces: [...grading.traces.values()] }
    Object.assign(grading, { attempts: [], traces: new Map(), judged: [], regrades: [], resolutions: [], msgs: [], since: 0 })
    try {
      const now = Date.now()
      await insertAttemptGrading(store, lane.attempts, now)
      await insertStoredTraces(store, lane.traces, now)
      await insertJudgeOutcomes(store, lane.judged, now)
      await insertRegrades(store, lane.regrades, now)
      await insertResolutions(store, lane.resolutions)
    } catch (error) {
      logger.error({ err: error, messages: lane.msgs.length }, 'grading insert failed; messages will be redelivered')
      for (const msg of lane.msgs) msg.nak(1000)
      return
    }
    for (const msg of lane.msgs) msg.ack()
    logger.debug({ messages: lane.msgs.length }, 'grading rows ingested')
  }

  async function ingestBatch(batch: JsMsg[]): Promise<void> {
    const attempts = new Map<string, AttemptResult>()
    const runs: RunRecord[] = []
    const baselines: BaselineRecord[] = []
    const now = Date.now()
    const primary: JsMsg[] = []
    const graded: { msg: JsMsg; add(): void }[] = []
    for (const msg of batch) {
      const parsed = parseMessage(msg)
      if (!parsed.ok) {
        stats.rejected++
        logger.error({ subject: msg.subject, seq: msg.seq, problem: parsed.error }, 'rejected a malformed result message')
        msg.term(parsed.error)
        continue
      }
      if (parsed.kind === 'attempt') {
        const attempt = parsed.value
        attempts.set(attempt.attempt_uid, attempt)
        // an attempt with metrics or a judgement is acked with the grading rows
        if (attempt.metrics !== undefined || attempt.judgement !== undefined) graded.push({ msg, add: () => grading.attempts.push(attempt) })
        else primary.push(msg)
      } else if (parsed.kind === 'baseline') {
        baselines.push(parsed.value)
        primary.push(msg)
      } else if (parsed.kind === 'run') {
        runs.push(parsed.value)
        primary.push(msg)
      } else {
        const value = parsed
        graded.push({
          msg,
          add: () => {
            if (value.kind === 'trace') grading.traces.set(value.value.attempt_uid, value.value)
            else if (value.kind === 'judge') grading.judged.push(value.value)
            else if (value.kind === 'regrade') grading.regrades.push(value.value)
            else grading.resolutions.push(value.value)
          },
        })
      }
    }
    try {
      await insertAttempts(store, [...attempts.values()], now)
      await insertRuns(store, runs)
      await insertBaselines(store, baselines)
    } catch (error) {
      logger.error({ err: error, messages: primary.length + graded.length }, 'insert failed; messages will be redelivered')
      for (const msg of [...primary, ...graded.map((g) => g.msg)]) msg.nak(1000)
      return
    }
    for (const msg of primary) msg.ack()
    if (graded.length > 0 && grading.msgs.length === 0) grading.since = now
    for (const g of graded) {
      g.add()
      grading.msgs.push(g.msg)
    }
    stats.inserted_attempts += attempts.size
    stats.inserted_runs += runs.length
    stats.batches++
    logger.debug({ attempts: attempts.size, runs: runs.length }, 'batch ingested')
  }

  const loop = (async () => {
    for await (const msg of messages) {
      buffer.push(msg)
      if (buffer.length >= batchSize) void flush()
      else if (!timer) timer = setTimeout(() => void flush(), flushIntervalMs)
    }
  })()

  return {
    stats,
    async stop() {
      await messages.close()
      await loop.catch(() => undefined)
      stopping = true
      if (gradingTimer) clearTimeout(gradingTimer)
      await flush()
      querySub?.unsubscribe()
      pingSub.unsubscribe()
    },
  }
}

type Parsed =
  | { ok: true; kind: 'attempt'; value: AttemptResult }
  | { ok: true; kind: 'run'; value: RunRecord }
  | { ok: true; kind: 'baseline'; value: BaselineRecord }
  | { ok: true; kind: 'trace'; value: StoredTrace }
  | { ok: true; kind: 'judge'; value: JudgeOutcome }
  | { ok: true; kind: 'regrade'; value: AttemptRegrade }
  | { ok: true; kind: 'review'; value: ReviewResolution }
  | { ok: false; error: string }

function parseMessage(msg: JsMsg): Parsed {
  let data: unknown
  try {
    data = msg.json()
  } catch (error) {
    return { ok: false, error: `not JSON: ${(error as Error).message}` }
  }
  if (msg.subject === subjects.attempt) {
    const r = AttemptResult.safeParse(data)
    return r.success ? { ok: true, kind: 'attempt', value: r.data } : { ok: false, error: summarizeIssues(r.error.issues) }
  }
  if (msg.subject === subjects.baseline) {
    const r = BaselineRecord.safeParse(data)
    return r.success ? { ok: true, kind: 'baseline', value: r.data } : { ok: false, error: summarizeIssues(r.error.issues) }
  }
  if (msg.subject.startsWith(subjects.tracePrefix)) {
    const r = StoredTrace.safeParse(data)
    return r.success ? { ok: true, kind: 'trace', value: r.data } : { ok: false, error: summarizeIssues(r.error.issues) }
  }
  if (msg.subject === subjects.judge) {
    const r = JudgeOutcome.safeParse(data)
    return r.success ? { ok: true, kind: 'judge', value: r.data } : { ok: false, error: summarizeIssues(r.error.issues) }
  }
  if (msg.subject === subjects.regrade) {
    const r = AttemptRegrade.safeParse(data)
    return r.success ? { ok: true, kind: 'regrade', value: r.data } : { ok: false, error: summarizeIssues(r.error.issues) }
  }
  if (msg.subject === subjects.review) {
    const r = ReviewResolution.safeParse(data)
    return r.success ? { ok: true, kind: 'review', value: r.data } : { ok: false, error: summarizeIssues(r.error.issues) }
  }
  if (msg.subject === subjects.run) {
    const r = RunRecord.safeParse(data)
    return r.success ? { ok: true, kind: 'run', value: r.data } : { ok: false, error: summarizeIssues(r.error.issues) }
  }
  return { ok: false, error: `unknown subject ${msg.subject}` }
}

function summarizeIssues(issues: { path: PropertyKey[]; message: string }[]): string {
  return issues
    .slice(0, 5)
    .map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.message}`)
    .join('; ')
}

async function answerQuery(store: ClickHouseClient, data: Uint8Array): Promise<StoreQueryReply> {
  let request: StoreQueryRequest
  try {
    request = JSON.parse(new TextDecoder().decode(data)) as StoreQueryRequest
    if (typeof request.sql !== 'string') throw new Error('sql must be a string')
  } catch (error) {
    return { ok: false, error: `bad store query request: ${(error as Error).message}` }
  }
  try {
    const timeout = typeof request.timeout_s === 'number' ? { timeoutSeconds: request.timeout_s } : {}
    return { ok: true, rows: await queryRows(store, request.sql, request.params ?? {}, { readOnly: true, ...timeout }) }
  } catch (error) {
    return { ok: false, error: (error as Error).message, ...(error instanceof QueryRefusedError ? { refused: true } : {}) }
  }
}
