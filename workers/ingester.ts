/**
 * The ingester: consumes the results stream in batches, inserts into ClickHouse and acks only after
 * the insert committed. In embedded mode it is the single owner of the chDB directory, so it also
 * answers store queries for every other process over NATS request/reply.
 */
import type { ClickHouseClient } from '@clickhouse/client'
import { jetstream, type JsMsg } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import { AttemptRegrade, AttemptResult, BaselineRecord, JudgeOutcome, ReviewResolution, RunRecord, StoredTrace } from '../core/contracts.js'
import { queryRows } from '../store/clickhouse.js'
import { encodeJson, INGESTER_CONSUMER, RESULTS_STREAM, subjects, type StoreQueryReply, type StoreQueryRequest } from '../store/bus.js'
import { insertAttempts, insertBaselines, insertRuns } from '../store/repositories.js'
import { insertAttemptGrading, insertJudgeOutcomes, insertRegrades, insertResolutions, insertStoredTraces } from '../store/grading-repositories.js'
import type { Logger } from './logger.js'

export interface IngesterOptions {
  nc: NatsConnection
  store: ClickHouseClient
  logger: Logger
  /** serve store queries over NATS (embedded mode: this process owns chDB) */
  serveQueries: boolean
  batchSize?: number
  flushIntervalMs?: number
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
  const stats: IngesterStats = { inserted_attempts: 0, inserted_runs: 0, rejected: 0, batches: 0 }

  const querySub = opts.serveQueries
    ? nc.subscribe(subjects.storeQuery, {
        callback: (error, msg) => {
          if (error) return
          void answerQuery(store, msg.data).then((reply) => msg.respond(encodeJson(reply)))
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
  let flushing: Promise<void> = Promise.resolve()

  const flush = (): Promise<void> => {
    if (timer) clearTimeout(timer)
    timer = undefined
    const batch = buffer
    buffer = []
    if (batch.length === 0) return flushing
    flushing = flushing.then(() => ingestBatch(batch))
    return flushing
  }

  async function ingestBatch(batch: JsMsg[]): Promise<void> {
    const attempts = new Map<string, AttemptResult>()
    const runs: RunRecord[] = []
    const baselines: BaselineRecord[] = []
    const traces = new Map<string, StoredTrace>()
    const judged: JudgeOutcome[] = []
    const regrades: AttemptRegrade[] = []
    const resolutions: ReviewResolution[] = []
    const good: JsMsg[] = []
    for (const msg of batch) {
      const parsed = parseMessage(msg)
      if (!parsed.ok) {
        stats.rejected++
        logger.error({ subject: msg.subject, seq: msg.seq, problem: parsed.error }, 'rejected a malformed result message')
        msg.term(parsed.error)
        continue
      }
      if (parsed.kind === 'attempt') attempts.set(parsed.value.attempt_uid, parsed.value)
      else if (parsed.kind === 'baseline') baselines.push(parsed.value)
      else if (parsed.kind === 'trace') traces.set(parsed.value.attempt_uid, parsed.value)
      else if (parsed.kind === 'judge') judged.push(parsed.value)
      else if (parsed.kind === 'regrade') regrades.push(parsed.value)
      else if (parsed.kind === 'review') resolutions.push(parsed.value)
      else runs.push(parsed.value)
      good.push(msg)
    }
    try {
      const now = Date.now()
      await insertAttempts(store, [...attempts.values()], now)
      await insertRuns(store, runs)
      await insertBaselines(store, baselines)
      await insertAttemptGrading(store, [...attempts.values()], now)
      await insertStoredTraces(store, [...traces.values()], now)
      await insertJudgeOutcomes(store, judged, now)
      await insertRegrades(store, regrades, now)
      await insertResolutions(store, resolutions)
    } catch (error) {
      logger.error({ err: error, messages: good.length }, 'insert failed; messages will be redelivered')
      for (const msg of good) msg.nak(1000)
      return
    }
    for (const msg of good) msg.ack()
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
    return { ok: true, rows: await queryRows(store, request.sql, request.params ?? {}, { readOnly: true }) }
  } catch (error) {
    return { ok: false, error: (error as Error).message }
  }
}
