/**
 * The ingester: consumes the results stream in batches, inserts into ClickHouse and acks only after
 * the insert committed. In embedded mode it is the single owner of the chDB directory, so it also
 * answers store queries for every other process over NATS request/reply.
 */
import type { ClickHouseClient } from '@clickhouse/client'
import { jetstream, type JsMsg } from '@nats-io/jetstream'
import type { MsgHdrs, NatsConnection, Subscription } from '@nats-io/transport-node'
import { AttemptMessage, AttemptRegrade, AttemptResult, AuditRecord, BaselineRecord, JudgeOutcome, ReviewResolution, RunRecord, StoredTrace } from '../core/contracts/index.js'
import { insertAuditRecords } from '../store/audit.js'
import { queryRows } from '../store/clickhouse.js'
import { respondInParts } from '../store/bus-reader.js'
import { QueryRefusedError, refusedAsData } from '../store/errors.js'
import { SIGNATURE_HEADER, verifyMessage } from '../store/bus-auth.js'
import { AUDIT_KEY_ID, encodeJson, INGESTER_CONSUMER, RESULTS_STREAM, subjects, type StoreQueryReply, type StoreQueryRequest } from '../store/bus.js'
import { insertAttempts, insertBaselines, insertRuns } from '../store/repositories.js'
import { insertAttemptGrading, insertJudgeOutcomes, insertRegrades, insertResolutions, insertStoredTraces } from '../store/grading-repositories.js'
import { SweepRecord } from '../core/contracts/sweep.js'
import { SWEEP_SUBJECT } from '../store/sweep-bus.js'
import { insertSweeps } from '../store/sweep-repositories.js'
import { createLogger, type Logger } from '../engine/logger.js'
import type { StoreFailure } from '../core/store-watch.js'
import { attemptFields, countByRun, processFields, rejectedMessageFields, runFields } from './ingester-log.js'
import { sealFinalRecords } from './ingester-seal.js'

export interface IngesterOptions {
  nc: NatsConnection
  store: ClickHouseClient
  /** the connection store queries run on (default `store`): a second one, so a slow read never holds up an insert */
  queryStore?: ClickHouseClient
  /** checks every message's Forge-Signature (store/bus-auth.ts); a message without a valid one is rejected */
  resultsKey?: string
  logger: Logger
  /** serve store queries over NATS (embedded mode: this process owns chDB) */
  serveQueries: boolean
  batchSize?: number
  flushIntervalMs?: number
  /** how long grading rows (metrics, judgements, traces, regrades, resolutions) wait for company (default GRADING_WINDOW_MS) */
  gradingFlushMs?: number
  /**
   * A JIT warm-up as it starts (FORGE_INGESTER_WARMUP): the ingest path — decoding, the signature
   * check, validation, row conversion and encoding, the grading lane — run over `samples`
   * (app/ingester-warmup.ts) against a store that drops every row, until the ingester has handled
   * `messages` in all (real ones counted). It waits while results come in; nothing is stored, acked or
   * logged but its summary.
   */
  warmup?: { messages: number; samples: () => Promise<WarmupSample[]> }
}

/** A result message as a worker publishes it: what the warm-up runs through the ingest path. */
export interface WarmupSample {
  subject: string
  data: Uint8Array
  headers?: MsgHdrs
}

export interface IngesterStats {
  inserted_attempts: number
  inserted_runs: number
  rejected: number
  batches: number
  /** inserts the store failed for a reason of its own (not a value it refused): their messages were redelivered */
  insert_failures: number
  /** stored messages trimmed off the results stream (workers/results-trimmer.ts) */
  trimmed_messages: number
  /** while the store fails every insert (a full disk, a server down): since when, and its error; absent once one goes in */
  failing?: StoreFailure
}

/** Counts a failed insert (messages redelivered) and remembers the spell it belongs to. */
export function noteInsertFailure(stats: IngesterStats, error: unknown, now: number = Date.now()): void {
  stats.insert_failures++
  // a ClickHouse error's type (NOT_ENOUGH_SPACE) is what a person searches for
  const type = typeof error === 'object' && error !== null && 'type' in error && typeof error.type === 'string' ? error.type : undefined
  const message = firstLineOf(error).trim()
  stats.failing = { since: stats.failing?.since ?? now, error: type !== undefined && !message.includes(type) ? `${message} (${type})` : message }
}

/** An insert went in: the store takes rows again. */
export function noteInsertSuccess(stats: IngesterStats): void {
  if (stats.failing !== undefined) delete stats.failing
}

export interface Ingester {
  stats: IngesterStats
  /** settles when consuming ended, whatever the reason (stop, or the consumer failed): its process should then exit */
  consuming: Promise<void>
  stop(): Promise<void>
}

export async function startIngester(opts: IngesterOptions): Promise<Ingester> {
  const { nc, store, logger } = opts
  const batchSize = opts.batchSize ?? 2000
  const stats: IngesterStats = { inserted_attempts: 0, inserted_runs: 0, rejected: 0, batches: 0, insert_failures: 0, trimmed_messages: 0 }
  const querySub = opts.serveQueries ? serveStoreQueries(nc, opts.queryStore ?? store) : undefined
  const pingSub = answerPings(nc, opts.serveQueries, stats)
  const consumer = await jetstream(nc).consumers.get(RESULTS_STREAM, INGESTER_CONSUMER)
  // short pulls: a pull lost with a restarted server is noticed by its missed heartbeats within seconds
  const consume = () => consumer.consume({ max_messages: Math.max(batchSize * 2, 1000), expires: 5_000 })
  let messages = await consume()
  let stopping = false
  const grading = createGradingLane(store, logger, batchSize, opts.gradingFlushMs ?? GRADING_WINDOW_MS, stats, (msg, problem) => rejectMessage(msg, problem, { logger, stats }))
  const rounds = createInsertRounds(batchSize, opts.flushIntervalMs ?? INSERT_WINDOW_MS, grading, (batch) => ingestBatch(batch, { store, logger, stats, grading, resultsKey: opts.resultsKey }))
  // the end of a run, a seal: whoever is about to wait for the store says so (store/bus.ts requestIngesterFlush)
  const flushSub = nc.subscribe(subjects.ingesterFlush, { callback: (error) => void (error ? undefined : rounds.urgent()) })
  // results coming in pause the JIT warm-up: the ingester's CPU is the run's then
  const traffic = { handled: 0, lastAt: 0 }
  let stopWarmup = (): void => undefined
  const warmupStopped = new Promise<void>((resolve) => (stopWarmup = resolve))
  const warmup = opts.warmup !== undefined && opts.warmup.messages > 0 ? warmUpIngestPath(opts.warmup, opts.resultsKey, batchSize, traffic, () => stopping, warmupStopped, logger) : undefined
  const loop = (async () => {
    // after NATS reconnects (a restarted server), consuming starts over with a fresh pull (issue 12)
    for (;;) {
      for await (const msg of messages) {
        traffic.handled++
        traffic.lastAt = Date.now()
        rounds.add(msg)
      }
      if (stopping) return
      logger.warn(processFields('bus'), 'the results consumer ended; consuming again')
      messages = await consume()
    }
  })()
  void (async () => {
    for await (const status of nc.status()) {
      if (stopping) return
      if (status.type === 'reconnect') await messages.close()
    }
  })()
  return {
    stats,
    consuming: loop,
    async stop() {
      stopping = true
      // a warm-up still waiting for its samples ends now; one running ends after its batch
      stopWarmup()
      await warmup
      flushSub.unsubscribe()
      await messages.close()
      await loop.catch(() => undefined)
      await rounds.drain()
      querySub?.unsubscribe()
      pingSub.unsubscribe()
    },
  }
}

/** sample messages per warm-up batch (~20 ms): the event loop (a real message, a store query) runs between two */
const WARMUP_BATCH = 100
/** the JIT warm-up waits while results come in, until the stream has been quiet this long */
const WARMUP_QUIET_MS = 1_000

/**
 * The ingester's JIT warm-up (IngesterOptions.warmup): `ingestBatch` and the grading lane, as a real
 * round runs them, over batches of sample messages, against a store that encodes each row as the
 * client does and drops it — until the ingester has handled `messages` in all, real ones counted (a
 * run compiles the same code hot), or it stops. While results come in it waits: it goes on once the
 * stream has been quiet for WARMUP_QUIET_MS.
 */
async function warmUpIngestPath(
  warmup: NonNullable<IngesterOptions['warmup']>,
  resultsKey: string | undefined,
  batchSize: number,
  traffic: { readonly handled: number; readonly lastAt: number },
  stopping: () => boolean,
  stopped: Promise<void>,
  logger: Logger,
): Promise<void> {
  const started = performance.now()
  const stats: IngesterStats = { inserted_attempts: 0, inserted_runs: 0, rejected: 0, batches: 0, insert_failures: 0, trimmed_messages: 0 }
  let samples: WarmupSample[] | undefined
  try {
    samples = await Promise.race([warmup.samples(), stopped.then(() => undefined)])
    // stopped while the samples were made
    if (samples === undefined) return
    if (samples.length === 0) throw new Error('no sample messages')
  } catch (error) {
    logger.warn({ ...processFields('ingest'), error: error instanceof Error ? error.message : String(error) }, 'no JIT warm-up: its sample messages could not be made; the first run compiles the ingest path itself')
    return
  }
  const store = discardingStore()
  const quiet = createLogger('ingester-warmup', 'silent')
  let firstProblem: string | undefined
  const onReject = (problem: string): void => void (firstProblem ??= problem)
  const grading = createGradingLane(store, quiet, batchSize, 0, stats, (_msg, problem) => {
    stats.rejected++
    onReject(problem)
  })
  const deps: BatchDeps = { store, logger: quiet, stats, grading, resultsKey, onReject, sealRuns: false }
  let messages = 0
  let paused = 0
  let waiting = false
  while (!stopping() && messages + traffic.handled < warmup.messages) {
    const quietFor = Date.now() - traffic.lastAt
    if (quietFor < WARMUP_QUIET_MS) {
      if (!waiting) {
        paused++
        logger.debug({ ...processFields('ingest'), messages }, 'JIT warm-up paused: results are coming in')
      }
      waiting = true
      await Promise.race([new Promise((resolve) => setTimeout(resolve, WARMUP_QUIET_MS - quietFor)), stopped])
      continue
    }
    waiting = false
    const batch = Array.from({ length: Math.min(WARMUP_BATCH, warmup.messages - messages - traffic.handled) }, (_, i) => sampleMessage(samples[(messages + i) % samples.length]!, messages + i + 1))
    await ingestBatch(batch, deps)
    await deps.grading.ingest()
    messages += batch.length
    await new Promise((resolve) => setImmediate(resolve))
  }
  const stoppedEarly = messages + traffic.handled < warmup.messages
  const said = { ...processFields('ingest'), messages, handled: traffic.handled, paused, ms: Math.round(performance.now() - started), stopped: stoppedEarly, rejected: stats.rejected }
  // a sample the ingester rejects is one it would reject from a worker of this build: a contract gone astray
  if (stats.rejected > 0) logger.error({ ...said, problem: firstProblem }, 'JIT warm-up: the ingest path rejected sample messages of this build')
  else logger.info(said, stoppedEarly ? 'JIT warm-up stopped with the ingester' : 'JIT warm-up done: sample messages through the ingest path (nothing stored)')
}

const sampleDecoder = new TextDecoder()

/** A sample as the consumer would hand it over: acks and naks go nowhere. */
function sampleMessage(sample: WarmupSample, seq: number): JsMsg {
  const ignore = (): void => undefined
  return {
    subject: sample.subject,
    data: sample.data,
    seq,
    headers: sample.headers,
    json: () => JSON.parse(sampleDecoder.decode(sample.data)) as unknown,
    ack: ignore,
    nak: ignore,
    term: ignore,
  } as unknown as JsMsg
}

/** A store that takes every insert and keeps nothing: each row is encoded as the client encodes it (JSONEachRow), then dropped. */
function discardingStore(): ClickHouseClient {
  const insert = ({ values }: { values: unknown }): Promise<{ executed: boolean; query_id: string }> => {
    if (Array.isArray(values)) for (const row of values) JSON.stringify(row)
    return Promise.resolve({ executed: true, query_id: '' })
  }
  return { insert } as unknown as ClickHouseClient
}

/** Embedded mode: this process owns chDB, so it answers every other process's read-only queries. */
function serveStoreQueries(nc: NatsConnection, store: ClickHouseClient): Subscription {
  return nc.subscribe(subjects.storeQuery, {
    callback: (error, msg) => {
      if (error) return
      void answerQuery(store, msg.data)
        .then((reply) => respondInParts(nc, msg, encodeJson(reply)))
        // the asker gave up or the connection closed: a failed answer never stops the ingester
        .catch(() => undefined)
    },
  })
}

/** `forge stack status` and the store readers ask whether an ingester runs, and whether it serves queries. */
function answerPings(nc: NatsConnection, servesQueries: boolean, stats: IngesterStats): Subscription {
  return nc.subscribe(subjects.ingesterPing, {
    callback: (error, msg) => {
      if (!error) msg.respond(encodeJson({ pid: process.pid, serves_queries: servesQueries, stats }))
    },
  })
}

/**
 * One insert round at a time. What arrives during a round waits for its own window (from its first
 * message) unless it fills a batch, the stream goes quiet or someone waits for the store: a round
 * costs ~10–15 ms of chDB CPU per table whatever its size, and inserting whatever had arrived
 * meanwhile made three rounds in four of a busy 1,000-attempt run hold a few attempts each (issue 15).
 * A round inserts the waiting messages (at most `batchSize` per insert), then the grading lane when
 * it is due.
 */
/**
 * How long the first message of a batch waits for more: a chDB insert into a wide table costs
 * ~10–15 ms whatever its size, so at a few hundred attempts/s a 50 ms window spent ~0.4 ms of
 * ingester CPU per attempt on inserts of ~15 rows; 200 ms makes batches 4× larger for 150 ms more
 * until a result is visible.
 */
export const INSERT_WINDOW_MS = 200

/**
 * A stream this long without a message is quiet: nothing waits for a window then (the end of a run).
 * A busy run's results come in bursts with gaps of 25–50 ms between them: at 25 ms half the inserts of a
 * 1,000-attempt run held 1–10 attempts (55 inserts; ingester 1.5 ms CPU per attempt), at 100 ms a
 * quarter fewer CPU (1.15 ms) for at most 75 ms more at the end of a run.
 */
export const QUIET_MS = 100

/**
 * How long grading rows wait for company: as long as attempt rows (INSERT_WINDOW_MS). At 500 ms a
 * 1,000-attempt run on a warm worker (~0.9 s) inserted all its grading rows after its last attempt —
 * ~130 ms of inserts the completeness check waited for; at 200 ms they go in during the run, on the
 * core the worker leaves: 8 runs each, interleaved, 983 → 1,070 attempts/s (issue 15).
 */
export const GRADING_WINDOW_MS = INSERT_WINDOW_MS

/**
 * After a flush request (`forge.ingester.flush`: someone now waits for the store, e.g. the end of a
 * run or a seal) the ingester is urgent for this long: what it holds goes in at once, and a message
 * arriving meanwhile waits URGENT_QUIET_MS for company instead of QUIET_MS.
 */
export const URGENT_MS = 500
export const URGENT_QUIET_MS = 5

/** The ingester's insert rounds (exported for their unit tests). */
export function createInsertRounds(
  batchSize: number,
  flushIntervalMs: number,
  grading: Pick<GradingLane, 'due' | 'ingest' | 'schedule' | 'cancelSchedule'>,
  ingest: (batch: JsMsg[]) => Promise<void>,
) {
  const buffer: JsMsg[] = []
  let timer: NodeJS.Timeout | undefined
  let quietTimer: NodeJS.Timeout | undefined
  let running: Promise<void> | undefined
  let stopping = false
  // the stream went quiet (QUIET_MS without a message): what waits goes in now, grading rows too, so
  // the end of a run is stored at once while a busy stream still fills its batches
  let quiet = false
  // when the oldest message waiting came in: what arrives during a round waits for the rest of its window after it
  let firstAt = 0
  const armWindow = (): void => {
    if (!timer && buffer.length > 0) timer = setTimeout(() => void flush(), Math.max(0, flushIntervalMs - (Date.now() - firstAt)))
  }
  const flush = (): Promise<void> => {
    if (timer) clearTimeout(timer)
    timer = undefined
    if (running) return running
    if (buffer.length === 0 && !grading.due(stopping || quiet)) {
      grading.schedule(flush)
      return Promise.resolve()
    }
    running = (async () => {
      // the batch this round was started for; after it only a full batch, a quiet stream, a flush request or the end goes in at once
      let take = buffer.length > 0
      while (take || grading.due(stopping || quiet)) {
        if (take) await ingest(buffer.splice(0, batchSize))
        if (grading.due(stopping || quiet)) await grading.ingest()
        take = buffer.length >= batchSize || (buffer.length > 0 && (stopping || quiet))
      }
    })().finally(() => {
      running = undefined
      // the stream went quiet (or someone asked) after the round's last look: what came meanwhile goes in now
      if (buffer.length > 0 && (stopping || quiet)) void flush()
      else armWindow()
      grading.schedule(flush)
    })
    return running
  }
  let urgentUntil = 0
  return {
    add(msg: JsMsg): void {
      if (buffer.length === 0) firstAt = Date.now()
      buffer.push(msg)
      quiet = false
      if (quietTimer) clearTimeout(quietTimer)
      quietTimer = setTimeout(
        () => {
          quietTimer = undefined
          quiet = true
          void flush()
        },
        Date.now() < urgentUntil ? URGENT_QUIET_MS : QUIET_MS,
      )
      if (buffer.length >= batchSize) void flush()
      else armWindow()
    },
    /** someone waits for the store: insert what waits now, grading rows too, and keep quiet windows short for a while */
    urgent(): Promise<void> {
      urgentUntil = Date.now() + URGENT_MS
      if (quietTimer) clearTimeout(quietTimer)
      quietTimer = undefined
      quiet = true
      return flush()
    },
    /** inserts everything still waiting, grading rows included */
    drain(): Promise<void> {
      stopping = true
      grading.cancelSchedule()
      if (quietTimer) clearTimeout(quietTimer)
      return flush()
    },
  }
}

/** The grading rows of lane messages, table by table. */
interface LaneRows {
  attempts: AttemptResult[]
  traces: Map<string, StoredTrace>
  judged: JudgeOutcome[]
  regrades: AttemptRegrade[]
  resolutions: ReviewResolution[]
  audits: AuditRecord[]
}

const noRows = (): LaneRows => ({ attempts: [], traces: new Map(), judged: [], regrades: [], resolutions: [], audits: [] })

/** A message acked with the grading lane, and how it adds its rows to a lane's. */
interface GradedMessage {
  msg: JsMsg
  add(rows: LaneRows): void
}

/**
 * Grading rows (metrics, judgements, traces, regrades, review resolutions) go into wide tables, and
 * a chDB insert costs ~7–12 ms whatever its size: they are inserted once their oldest has waited
 * `flushMs` (or once `batchSize` messages wait), after the round's attempt rows, so an attempt row
 * never waits for them. Their messages are acked once they are in. When the store refuses a value of
 * one of them (refusedAsData), they go in message by message and only that one is rejected.
 */
interface GradingLane {
  /** messages whose grading rows `add` puts in the lane; acked when the lane is inserted */
  accept(graded: readonly GradedMessage[], now: number): void
  due(stopping: boolean): boolean
  ingest(): Promise<void>
  /** calls `flush` when the lane becomes due (once at a time) */
  schedule(flush: () => Promise<void>): void
  cancelSchedule(): void
}

function createGradingLane(store: ClickHouseClient, logger: Logger, batchSize: number, flushMs: number, stats: IngesterStats, reject: (msg: JsMsg, problem: string) => void): GradingLane {
  let waiting: GradedMessage[] = []
  let rows = noRows()
  let since = 0
  let timer: NodeJS.Timeout | undefined
  const insertRows = async (taken: LaneRows): Promise<void> => {
    const now = Date.now()
    await insertAttemptGrading(store, taken.attempts, now)
    await insertStoredTraces(store, [...taken.traces.values()], now)
    await insertJudgeOutcomes(store, taken.judged, now)
    await insertRegrades(store, taken.regrades, now)
    await insertResolutions(store, taken.resolutions)
    await insertAuditRecords(store, taken.audits, now)
  }
  return {
    accept(graded, now) {
      if (graded.length > 0 && waiting.length === 0) since = now
      for (const g of graded) {
        g.add(rows)
        waiting.push(g)
      }
    },
    due: (stopping) => waiting.length > 0 && (stopping || waiting.length >= batchSize || Date.now() - since >= flushMs),
    async ingest() {
      const taken = { entries: waiting, rows }
      waiting = []
      rows = noRows()
      since = 0
      try {
        await insertRows(taken.rows)
      } catch (error) {
        if (refusedAsData(error) && taken.entries.length > 0) {
          // the store refused a value of one of them: each message on its own, so only that one is rejected
          for (const entry of taken.entries) {
            const own = noRows()
            entry.add(own)
            try {
              await insertRows(own)
              noteInsertSuccess(stats)
              entry.msg.ack()
            } catch (alone) {
              if (refusedAsData(alone)) reject(entry.msg, `the store refused its grading rows: ${firstLineOf(alone)}`)
              else {
                noteInsertFailure(stats, alone)
                logger.error({ ...processFields('store'), err: alone, seq: entry.msg.seq }, 'grading insert failed; the message will be redelivered')
                entry.msg.nak(1000)
              }
            }
          }
          return
        }
        noteInsertFailure(stats, error)
        for (const [run, counts] of gradingRowsByRun(taken.rows)) logger.error({ ...runFields(run, 'store'), err: error, rows: counts, messages: taken.entries.length }, 'grading insert failed; messages will be redelivered')
        for (const entry of taken.entries) entry.msg.nak(1000)
        return
      }
      noteInsertSuccess(stats)
      for (const entry of taken.entries) entry.msg.ack()
      if (logger.isLevelEnabled('debug')) {
        for (const [run, counts] of gradingRowsByRun(taken.rows)) logger.debug({ ...runFields(run, 'store'), rows: counts, messages: taken.entries.length }, 'grading rows ingested')
      }
    },
    schedule(flush) {
      if (waiting.length === 0 || timer !== undefined) return
      timer = setTimeout(
        () => {
          timer = undefined
          void flush()
        },
        Math.max(0, flushMs - (Date.now() - since)),
      )
    },
    cancelSchedule() {
      if (timer) clearTimeout(timer)
    },
  }
}

/** Grading rows of one lane insert, counted per run and table (audit records by the runs of their entries). */
function gradingRowsByRun(taken: LaneRows): Map<string | null, Record<string, number>> {
  const byRun = new Map<string | null, Record<string, number>>()
  const tables: [string, Iterable<{ run_id?: string }>][] = [
    ['attempt_grading', taken.attempts],
    ['traces', taken.traces.values()],
    ['judge_outcomes', taken.judged],
    ['regrades', taken.regrades],
    ['review_resolutions', taken.resolutions],
    ['audit_entries', taken.audits.flatMap((a) => a.entries)],
  ]
  for (const [table, rows] of tables) {
    for (const [run, n] of countByRun(rows)) byRun.set(run, { ...byRun.get(run), [table]: n })
  }
  return byRun
}

interface BatchDeps {
  store: ClickHouseClient
  logger: Logger
  stats: IngesterStats
  grading: GradingLane
  resultsKey: string | undefined
  /** told why each message it rejects is rejected (the JIT warm-up names the first) */
  onReject?: (problem: string) => void
  /** false: final run records go in as they came, not sealed (the JIT warm-up's store answers no reads) */
  sealRuns?: boolean
}

/** Terminates a message that can never be stored (malformed, forged, or refused by the store), saying why. */
function rejectMessage(msg: JsMsg, problem: string, deps: Pick<BatchDeps, 'logger' | 'stats' | 'onReject'>): void {
  deps.stats.rejected++
  deps.onReject?.(problem)
  deps.logger.error({ ...rejectedMessageFields(msg.subject, msg.data, [subjects.tracePrefix, subjects.attemptPrefix]), seq: msg.seq, problem }, 'rejected a malformed result message')
  msg.term(problem)
}

function firstLineOf(error: unknown): string {
  return ((error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '').slice(0, 300)
}

/**
 * Inserts a batch's attempts, runs, baselines and sweeps and acks their messages; malformed messages are
 * terminated, never retried. Messages that also carry grading rows go to the grading lane once the
 * attempt row is in. When the store refuses a value (refusedAsData) the messages go in one by one and
 * only the one it refuses is rejected; any other failed insert naks every message for redelivery.
 */
async function ingestBatch(batch: JsMsg[], deps: BatchDeps): Promise<void> {
  const { store, logger, stats, grading } = deps
  const now = Date.now()
  const sorted = sortBatch(batch, deps.resultsKey, (msg, problem) => rejectMessage(msg, problem, deps))
  try {
    await insertAttempts(store, [...sorted.attempts.values()], now)
    // a run's final record goes in sealed: its links first (workers/ingester-seal.ts)
    await insertRuns(store, deps.sealRuns === false ? sorted.runs : await sealFinalRecords(store, sorted.runs, now, logger))
    await insertBaselines(store, sorted.baselines)
    await insertSweeps(store, sorted.sweeps, now)
  } catch (error) {
    const held = [...sorted.primary, ...sorted.graded.map((g) => g.msg)]
    if (refusedAsData(error)) {
      // the store refused a value of some message: insert them one by one, so only that one is rejected
      if (held.length > 1) {
        for (const msg of held) await ingestBatch([msg], deps)
      } else {
        for (const msg of held) rejectMessage(msg, `the store refused its rows: ${firstLineOf(error)}`, deps)
      }
      return
    }
    noteInsertFailure(stats, error)
    for (const [run, rows] of batchRowsByRun(sorted)) logger.error({ ...runFields(run, 'store'), err: error, rows, messages: held.length }, 'insert failed; messages will be redelivered')
    for (const msg of held) msg.nak(1000)
    return
  }
  if (sorted.primary.length + sorted.graded.length > 0) noteInsertSuccess(stats)
  for (const msg of sorted.primary) msg.ack()
  grading.accept(sorted.graded, now)
  stats.inserted_attempts += sorted.attempts.size
  stats.inserted_runs += sorted.runs.length
  stats.batches++
  if (logger.isLevelEnabled('debug')) {
    for (const [run, rows] of batchRowsByRun(sorted)) logger.debug({ ...runFields(run, 'store'), rows, batch: batch.length }, 'batch ingested')
  }
  if (logger.isLevelEnabled('trace')) {
    for (const attempt of sorted.attempts.values()) logger.trace({ ...attemptFields(attempt, 'store'), outcome: attempt.outcome, failure_bucket: attempt.failure_bucket }, 'attempt stored')
  }
}

/** A batch's rows counted per run and table (sweeps under no run, with their ids). */
function batchRowsByRun(sorted: { attempts: Map<string, AttemptResult>; runs: RunRecord[]; baselines: BaselineRecord[]; sweeps: SweepRecord[] }): Map<string | null, Record<string, number | string[]>> {
  const byRun = new Map<string | null, Record<string, number | string[]>>()
  const tables: [string, Iterable<{ run_id?: string }>][] = [
    ['attempts', sorted.attempts.values()],
    ['runs', sorted.runs],
    ['baselines', sorted.baselines],
  ]
  for (const [table, rows] of tables) {
    for (const [run, n] of countByRun(rows)) byRun.set(run, { ...byRun.get(run), [table]: n })
  }
  if (sorted.sweeps.length > 0) byRun.set(null, { ...byRun.get(null), sweeps: sorted.sweeps.length, sweep_ids: [...new Set(sorted.sweeps.map((s) => s.sweep_id))] })
  return byRun
}

/** A batch by what it carries: rows inserted now (acked with them), and messages acked with the grading lane. */
function sortBatch(batch: JsMsg[], resultsKey: string | undefined, reject: (msg: JsMsg, problem: string) => void) {
  const attempts = new Map<string, AttemptResult>()
  const runs: RunRecord[] = []
  const baselines: BaselineRecord[] = []
  const sweeps: SweepRecord[] = []
  const primary: JsMsg[] = []
  const graded: GradedMessage[] = []
  for (const msg of batch) {
    const parsed = authenticated(parseMessage(msg), msg, resultsKey)
    if (!parsed.ok) {
      reject(msg, parsed.error)
      continue
    }
    if (parsed.kind === 'attempt') {
      const { value: attempt, trace } = parsed
      attempts.set(attempt.attempt_uid, attempt)
      const withGrading = attempt.metrics !== undefined || attempt.judgement !== undefined
      // an attempt with metrics, a judgement or its trace is acked with the grading rows
      if (withGrading || trace !== undefined) {
        graded.push({
          msg,
          add: (rows) => {
            if (withGrading) rows.attempts.push(attempt)
            if (trace !== undefined) rows.traces.set(trace.attempt_uid, trace)
          },
        })
      } else primary.push(msg)
    } else if (parsed.kind === 'baseline') {
      baselines.push(parsed.value)
      primary.push(msg)
    } else if (parsed.kind === 'run') {
      runs.push(parsed.value)
      primary.push(msg)
    } else if (parsed.kind === 'sweep') {
      sweeps.push(parsed.value)
      primary.push(msg)
    } else {
      const value = parsed
      graded.push({
        msg,
        add: (rows) => {
          if (value.kind === 'trace') rows.traces.set(value.value.attempt_uid, value.value)
          else if (value.kind === 'judge') rows.judged.push(value.value)
          else if (value.kind === 'regrade') rows.regrades.push(value.value)
          else if (value.kind === 'audit') rows.audits.push(value.value)
          else rows.resolutions.push(value.value)
        },
      })
    }
  }
  return { attempts, runs, baselines, sweeps, primary, graded }
}

type Parsed =
  | { ok: true; kind: 'attempt'; value: AttemptResult; trace?: StoredTrace }
  | { ok: true; kind: 'run'; value: RunRecord }
  | { ok: true; kind: 'baseline'; value: BaselineRecord }
  | { ok: true; kind: 'trace'; value: StoredTrace }
  | { ok: true; kind: 'judge'; value: JudgeOutcome }
  | { ok: true; kind: 'regrade'; value: AttemptRegrade }
  | { ok: true; kind: 'review'; value: ReviewResolution }
  | { ok: true; kind: 'audit'; value: AuditRecord }
  | { ok: true; kind: 'sweep'; value: SweepRecord }
  | { ok: false; error: string }

/** A parsed message whose Forge-Signature checks out under its run's key (store/bus-auth.ts); anything else is rejected. */
function authenticated(parsed: Parsed, msg: JsMsg, resultsKey: string | undefined): Parsed {
  if (!parsed.ok || resultsKey === undefined) return parsed
  const signature = msg.headers?.get(SIGNATURE_HEADER)
  // a sweep's messages are keyed by its sweep id, everything else by its run id
  const keyId = parsed.kind === 'audit' ? AUDIT_KEY_ID : 'run_id' in parsed.value ? parsed.value.run_id : parsed.value.sweep_id
  if (verifyMessage(resultsKey, keyId, msg.subject, msg.data, signature === '' ? undefined : signature)) return parsed
  return { ok: false, error: `${signature ? 'a wrong' : 'no'} ${SIGNATURE_HEADER}: not signed by a Forge component holding the results key` }
}

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
  if (msg.subject.startsWith(subjects.attemptPrefix)) {
    const r = AttemptMessage.safeParse(data)
    if (!r.success) return { ok: false, error: summarizeIssues(r.error.issues) }
    const { stored_trace: trace, ...attempt } = r.data
    if (trace.attempt_uid !== attempt.attempt_uid) return { ok: false, error: `stored_trace.attempt_uid: attempt ${attempt.attempt_uid} carries the trace of ${trace.attempt_uid}` }
    // the subject names the attempt: a message filed under another attempt's subject would hide that one's trace from the judge
    if (msg.subject !== subjects.attemptOf(attempt.attempt_uid)) return { ok: false, error: `attempt ${attempt.attempt_uid} is not on its own subject ${subjects.attemptOf(attempt.attempt_uid)}` }
    return { ok: true, kind: 'attempt', value: attempt, trace }
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
  if (msg.subject === subjects.audit) {
    const r = AuditRecord.safeParse(data)
    return r.success ? { ok: true, kind: 'audit', value: r.data } : { ok: false, error: summarizeIssues(r.error.issues) }
  }
  if (msg.subject === SWEEP_SUBJECT) {
    const r = SweepRecord.safeParse(data)
    return r.success ? { ok: true, kind: 'sweep', value: r.data } : { ok: false, error: summarizeIssues(r.error.issues) }
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
