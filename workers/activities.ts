/**
 * Attempt activities, built from their clients (`createActivities(deps)`) so tests can hand in
 * stubs. Agent failure is data (a published result), never an activity failure; only
 * infrastructure errors throw (retried), and configuration errors throw non-retryable.
 */
import { defaultMaxListeners, setMaxListeners } from 'node:events'
import { Context } from '@temporalio/activity'
import { ApplicationFailure } from '@temporalio/common'
import type { JetStreamClient } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import { attemptMessageOf, busMaxPayload, createProgressPublisher, publishAttempt, resultsKey } from '../store/bus.js'
import { attemptScopeOf, type AttemptScope } from '../core/run-scope.js'
import { grantHolds, grantRefusal } from '../store/grants.js'
import { auditEntryOf } from '../core/audit.js'
import type { AttemptResult, StoredTrace } from '../core/contracts/index.js'
import { selectJudgeMetrics } from '../core/metrics/index.js'
import { attemptAuditRows } from '../store/audit.js'
import type { AttemptBatchInput, AttemptInput, AttemptSummary, RunActivities, RunStatusInput } from './activity-types.js'
import { startHeartbeat } from './heartbeat.js'
import { publishRunStatus } from './run-record.js'
import { getAdapter } from '../engine/adapters/index.js'
import { runAttempt as executeAttemptFully } from '../engine/attempt-runner.js'
import { SecretRefError, SuiteLoadError, UnknownAdapterError } from '../engine/errors.js'
import { PriceTableError } from '../engine/llm/errors.js'
import { loadPriceTable } from '../engine/llm/price-table.js'
import type { Logger } from '../engine/logger.js'
import { loadSuiteCached } from '../engine/suite-loader.js'
import { STORED_TRACE_MAX_BYTES, storedTraceOf } from '../engine/trace-store.js'
import { fitAttemptResult } from '../engine/message-fit.js'
import { MESSAGE_HEADROOM_BYTES } from '../core/message-size.js'
import { hasLoneSurrogateEscape, wellFormed } from '../core/well-formed.js'
import { logAttempt } from '../engine/attempt-log.js'
import type { OtlpExporter } from './otlp-exporter.js'
import { sandboxRequested } from '../engine/sandbox/config.js'
import { SandboxUnavailableError } from '../engine/sandbox/errors.js'
import { sandboxSupport } from '../engine/sandbox/host.js'

export interface ActivityDeps {
  nc: NatsConnection
  js: JetStreamClient
  workerId: string
  logger: Logger
  now?: () => number
  /** live OTLP export of each finished attempt's spans (never blocks or fails the attempt) */
  otlp?: Pick<OtlpExporter, 'add'>
  /** attempts this worker runs at once at most, over all its batch activities' lanes (absent: no limit) */
  attemptSlots?: number
  /** how long finished attempts' progress events wait for company (default PROGRESS_WINDOW_MS) */
  progressWindowMs?: number
  /** the key grants are checked under (store/grants.ts; default: the bus connection's results key, none: unchecked) */
  resultsKey?: () => string | undefined
}

/** attempts this process has run, any run's (a JIT warm-up's too, app/jit-warmup.ts): a worker that ran many is compiled hot */
let attemptsRun = 0
export const attemptsRunInThisProcess = (): number => attemptsRun

export function createActivities(deps: ActivityDeps): RunActivities {
  const now = deps.now ?? Date.now
  const slots = new Slots(deps.attemptSlots ?? Number.POSITIVE_INFINITY)
  const progress = createProgressPublisher(deps.nc, deps.progressWindowMs)
  const key = deps.resultsKey ?? resultsKey
  // before anything of the input is used: its suite is code this process imports, its adapter config a command it starts
  const checkAttemptGrant = (input: AttemptScope & { grant?: string | undefined }): void => {
    if (!grantHolds(key(), 'attempts', attemptScopeOf(input), input.grant)) throw ApplicationFailure.nonRetryable(grantRefusal(`the attempts of run ${input.run_id}`), 'GrantError')
  }
  /**
   * one attempt, its grant checked already (runAttempt checks each input, runAttempts its batch's base
   * once); `env`: the worker's environment, whose secrets are redacted from what the attempt leaves
   * behind (a batch copies it once for all its attempts: listing process.env calls into the runtime for
   * every variable)
   */
  const runOne = async (input: AttemptInput, env: NodeJS.ProcessEnv): Promise<AttemptSummary> => {
    const suite = await loadSuiteCached(input.suite_path, input.run_id).catch((error: unknown) => {
      throw error instanceof SuiteLoadError ? ApplicationFailure.nonRetryable(error.message, 'SuiteLoadError') : error
    })
    const task = suite.tasks.find((t) => t.id === input.task_id)
    if (!task) {
      throw ApplicationFailure.nonRetryable(`suite ${suite.name} (${suite.path}) has no task "${input.task_id}"`, 'UnknownTaskError')
    }
    let adapter
    try {
      adapter = getAdapter(input.adapter)
    } catch (error) {
      if (error instanceof UnknownAdapterError) throw ApplicationFailure.nonRetryable(error.message, 'UnknownAdapterError')
      throw error
    }
    const priceTable = await loadPriceTable(input.price_table).catch((error: unknown) => {
      throw error instanceof PriceTableError ? ApplicationFailure.nonRetryable(error.message, 'PriceTableError') : error
    })
    if (sandboxRequested(input.adapter, input.adapter_config)) {
      const sandbox = await sandboxSupport()
      if (!sandbox.ok) throw ApplicationFailure.nonRetryable(new SandboxUnavailableError(sandbox.reason).message, 'SandboxUnavailableError')
    }
    if (input.judge !== undefined) {
      try {
        selectJudgeMetrics(input.judge.metrics)
      } catch (error) {
        throw ApplicationFailure.nonRetryable((error as Error).message, 'ConfigError')
      }
    }
    const cancellation = cancellationSignal()
    const execution = await executeAttemptFully({
      suite,
      task,
      adapter,
      runId: input.run_id,
      configId: input.config_id,
      attempt: input.attempt,
      runSeed: input.seed,
      adapterConfig: input.adapter_config,
      workerId: deps.workerId,
      now,
      env,
      priceTable,
      ...(cancellation !== undefined ? { signal: cancellation } : {}),
      ...(input.judge !== undefined ? { judge: { settings: input.judge } } : {}),
      ...(input.faults !== undefined ? { faults: input.faults } : {}),
      redact: input.no_redact !== true,
      guardAnswers: input.guard_answers === true,
    }).catch((error: unknown) => {
      throw error instanceof SecretRefError ? ApplicationFailure.nonRetryable(error.message, 'SecretRefError') : error
    })
    // a cancelled attempt (its run was cancelled) is not a sample: its agent was stopped, nothing is published
    if (cancellation?.aborted === true) throw cancellation.reason
    attemptsRun++
    const { grading } = execution
    const maxPayload = busMaxPayload(deps.nc)
    const storedAt = now()
    // the content hash of what is stored, over the rows the ingester will insert; a judge worker that runs tier 2 replaces the judgement
    const judgementReplaced = input.judge !== undefined && grading.judge?.golden_divergence === true
    const messageOf = (graded: AttemptResult, trace: StoredTrace) =>
      attemptMessageOf({ ...graded, audit: auditEntryOf(graded.run_id, 'attempt', graded.attempt_uid, attemptAuditRows(graded, trace, !judgementReplaced)) }, trace)
    let source = { result: execution.result, trace: execution.trace, env: grading.env }
    let whole = { ...source.result, metrics: grading.metrics, judgement: grading.judgement }
    // encoded once, uncut: when the pair fits in one message and under the stored trace's limit, neither
    // part can be over its own limit, so nothing would be cut (nearly every attempt)
    let message = messageOf(whole, storedTraceOf(source.result, source.trace, source.env, storedAt, Number.POSITIVE_INFINITY))
    if (hasLoneSurrogateEscape(message.body)) {
      // half a UTF-16 pair somewhere (an agent's "\ud800"): the store cannot take it, so the attempt is
      // stored with U+FFFD in its place — made so before its audit digests, which then match what is stored
      source = wellFormed(source)
      whole = wellFormed(whole)
      message = messageOf(whole, storedTraceOf(source.result, source.trace, source.env, storedAt, Number.POSITIVE_INFINITY))
    }
    if (message.body.byteLength > Math.min(STORED_TRACE_MAX_BYTES, maxPayload - MESSAGE_HEADROOM_BYTES)) {
      // a result over the bus's max_payload would be refused and lost: cut it and the trace (with markers) to fit
      message = messageOf(fitAttemptResult(whole, maxPayload), storedTraceOf(source.result, source.trace, source.env, storedAt))
    }
    const { result, trace: storedTrace } = message
    // one message when result and trace fit together, acknowledged before the activity returns: the judge activity reads the trace back by attempt_uid
    await publishAttempt(deps.js, message, maxPayload - MESSAGE_HEADROOM_BYTES, input.republish)
    logAttempt(deps.logger, storedTrace, result)
    deps.otlp?.add(storedTrace, result)
    progress.add(input.run_id, {
      attempt_uid: result.attempt_uid,
      task_id: result.task_id,
      attempt: result.attempt,
      outcome: result.outcome,
      failure_bucket: result.failure_bucket,
      worker_id: deps.workerId,
    })
    return {
      attempt_uid: result.attempt_uid,
      outcome: result.outcome,
      failure_bucket: result.failure_bucket,
      ...(input.judge !== undefined && grading.judge !== undefined ? { judge: grading.judge } : {}),
    }
  }
  return {
    async runAttempt(input: AttemptInput): Promise<AttemptSummary> {
      const stopHeartbeat = startHeartbeat()
      try {
        checkAttemptGrant(input)
        return await slots.run(() => runOne(input, process.env))
      } finally {
        stopHeartbeat()
        // what the activity finished is on the bus before Temporal hears that it did
        progress.flush()
      }
    },

    async runAttempts({ base, items, lanes }: AttemptBatchInput): Promise<AttemptSummary[]> {
      checkAttemptGrant(base)
      // a retry runs only the attempts the last try did not heartbeat as done (those are published already)
      const done = resumedSummaries(items.length)
      const env = { ...process.env }
      // each attempt running listens on the activity's cancellation signal until its agent stops: as many
      // as the batch has lanes, not a leak (Node warned "Possible EventTarget memory leak" past 10)
      const cancellation = cancellationSignal()
      if (cancellation !== undefined) setMaxListeners(defaultMaxListeners + (lanes ?? 1), cancellation)
      const stopHeartbeat = startHeartbeat(() => done)
      let heartbeatAt = now()
      let next = 0
      let failure: { error: unknown } | undefined
      // each lane takes the next item not done; after a failure no lane takes another, and the
      // activity fails once the attempts already running have ended (and are heartbeated as done)
      const lane = async (): Promise<void> => {
        for (;;) {
          while (next < items.length && done[next] !== null) next++
          if (next >= items.length || failure !== undefined) return
          const index = next++
          const item = items[index]!
          try {
            done[index] = await slots.run(() => runOne({ ...base, task_id: item.task_id, attempt: item.attempt }, env))
          } catch (error) {
            failure ??= { error }
            return
          }
          // the SDK sends the latest details to the server at most every few seconds anyway; handing it the
          // list after every attempt of a fast agent only serialised it again and again
          if (now() - heartbeatAt >= PROGRESS_HEARTBEAT_MS) {
            heartbeatAt = now()
            heartbeatNow(done)
          }
        }
      }
      try {
        await Promise.all(Array.from({ length: Math.max(1, Math.min(lanes ?? 1, items.length)) }, lane))
        if (failure !== undefined) {
          heartbeatNow(done)
          throw failure.error
        }
        return done as AttemptSummary[]
      } finally {
        stopHeartbeat()
        progress.flush()
      }
    },

    async recordRunStatus(input: RunStatusInput): Promise<number> {
      return publishRunStatus(deps.js, key(), input, now())
    },
  }
}

/**
 * How often at most a batch hands the SDK the summaries done so far (a retry skips them). The SDK
 * sends them to the server at most every 0.8 × heartbeat timeout anyway; a batch of 100 attempts in
 * 10 lanes handed over every 100 ms serialised up to 100 summaries ten times a second.
 */
const PROGRESS_HEARTBEAT_MS = 1_000

/** The activity's cancellation signal (undefined outside an activity: unit tests). */
function cancellationSignal(): AbortSignal | undefined {
  try {
    return Context.current().cancellationSignal
  } catch {
    return undefined
  }
}

/** The summaries an earlier try of this batch activity heartbeated (none on the first try). */
function resumedSummaries(batchSize: number): (AttemptSummary | null)[] {
  const done = Array.from({ length: batchSize }, (): AttemptSummary | null => null)
  let details: unknown
  try {
    details = Context.current().info.heartbeatDetails
  } catch {
    return done // called outside an activity (unit tests)
  }
  // by item, null for one not done (a try of a batch run one after another heartbeated only its done start)
  if (Array.isArray(details) && details.length <= batchSize) details.forEach((summary, i) => (done[i] = (summary as AttemptSummary | null) ?? null))
  return done
}

function heartbeatNow(details: unknown): void {
  try {
    Context.current().heartbeat(details)
  } catch {
    // outside an activity (unit tests)
  }
}

/**
 * At most `size` calls of `run` at once, the others waiting in line: a worker's attempt slots, which
 * its batch activities' lanes share (a worker may hold more activities than its slots fill).
 */
export class Slots {
  private free: number
  private readonly waiting: (() => void)[] = []

  constructor(size: number) {
    this.free = size
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free--
    else await new Promise<void>((resolve) => this.waiting.push(resolve))
    try {
      return await fn()
    } finally {
      const nextInLine = this.waiting.shift()
      if (nextInLine !== undefined) nextInLine()
      else this.free++
    }
  }
}
