/**
 * Following a run live over NATS: progress events (`forge.progress.<run>`) feed the progress
 * tracker; at `--log-level steps` and above, each attempt's stored trace and result (the messages
 * the workers publish to the results stream, read here as plain subscribers — nothing is consumed
 * or acked) become log records. One observer per `forge run`; `stop()` flushes what is pending.
 */
import type { AttemptMessage, AttemptResult, StoredTrace } from '../core/contracts/index.js'
import { attemptRecords, needsTraces, shows, type LogFilter, type LogRecord } from '../core/log-records.js'
import { ProgressTracker, type ProgressInput, type ProgressSnapshot } from '../core/progress.js'
import { buildTraceView } from '../core/span-tree.js'
import { progressEventsOf, subjects, type NatsConnection } from '../store/bus.js'

export interface RunObserverOptions {
  filter: LogFilter
  planned: number
  now?: () => number
  onRecord(record: LogRecord): void
  /** after every newly finished attempt */
  onProgress(snapshot: ProgressSnapshot): void
}

export interface RunObserver {
  tracker: ProgressTracker
  /** stops listening; records of attempts whose trace arrived without its result are written without cost */
  stop(): void
}

/** A run's log records from its trace and result messages; facts the trace lacks (cost, model) come from the result. */
export function recordsOf(stored: StoredTrace, result: AttemptResult | undefined, filter: LogFilter): LogRecord[] {
  const view = buildTraceView(stored, result ? { model: result.model, cost_usd: result.cost_usd, latency_ms: result.latency_ms, input_tokens: result.input_tokens, output_tokens: result.output_tokens } : {})
  return attemptRecords(view).filter((r) => shows(filter, r))
}

export function observeRun(nc: NatsConnection, runId: string, opts: RunObserverOptions): RunObserver {
  const now = opts.now ?? Date.now
  const tracker = new ProgressTracker(opts.planned, now())
  const subscriptions = [
    nc.subscribe(subjects.progress(runId), {
      callback: (error, msg) => {
        if (error) return
        let events: ProgressInput[]
        try {
          events = progressEventsOf(msg.json())
        } catch {
          return
        }
        let changed = false
        for (const event of events) changed = tracker.record(event) || changed
        if (changed) opts.onProgress(tracker.snapshot(now()))
      },
    }),
  ]
  // an attempt's result and trace travel as one message, or (too big together) as two in no fixed order: pair those by uid
  const pending = new Map<string, { trace?: StoredTrace; result?: AttemptResult }>()
  const emitted = new Set<string>()
  const emit = (uid: string, entry: { trace?: StoredTrace; result?: AttemptResult }) => {
    pending.delete(uid)
    if (!entry.trace || emitted.has(uid)) return
    emitted.add(uid)
    for (const record of recordsOf(entry.trace, entry.result, opts.filter)) opts.onRecord(record)
  }
  if (needsTraces(opts.filter)) {
    const take = (kind: 'trace' | 'result' | 'both') => (error: Error | null, msg: { json<T>(): T }) => {
      if (error) return
      let body: StoredTrace | AttemptResult | AttemptMessage
      try {
        body = msg.json<StoredTrace | AttemptResult | AttemptMessage>()
      } catch {
        return
      }
      if (body.run_id !== runId || emitted.has(body.attempt_uid)) return
      const entry = pending.get(body.attempt_uid) ?? {}
      if (kind === 'trace') entry.trace = body as StoredTrace
      else if (kind === 'result') entry.result = body as AttemptResult
      else {
        const { stored_trace, ...result } = body as AttemptMessage
        Object.assign(entry, { trace: stored_trace, result })
      }
      if (entry.trace && entry.result) emit(body.attempt_uid, entry)
      else pending.set(body.attempt_uid, entry)
    }
    subscriptions.push(
      nc.subscribe(`${subjects.attemptPrefix}>`, { callback: take('both') }),
      nc.subscribe(`${subjects.tracePrefix}>`, { callback: take('trace') }),
      nc.subscribe(subjects.attempt, { callback: take('result') }),
    )
  }
  return {
    tracker,
    stop() {
      for (const sub of subscriptions) sub.unsubscribe()
      for (const [uid, entry] of [...pending]) emit(uid, entry)
    },
  }
}
