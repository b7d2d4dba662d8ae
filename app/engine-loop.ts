/**
 * Forge's engine in a loop, in this process (issue 15): the attempts a `forge run` would schedule, run
 * by the worker's own attempt activity (`createActivities(deps).runAttempt`, workers/activities.ts) —
 * suite loader, adapter, tool proxy, grading, invariants, metrics, redaction, message fit, stored
 * trace, audit hashes and the JSON encoding and signing of each message — against a stand-in for the
 * bus that only counts what would have been published: no Temporal, no NATS, no ClickHouse, nothing
 * stored or sent. The throughput bench's in-process figure (bench/in-process.ts) and a warm worker's
 * JIT warm-up (app/jit-warmup.ts) run it; the warm-up publishes for real, onto the warm-up stream that
 * nobody reads (`options.bus`).
 */
import { setImmediate as yieldToEvents } from 'node:timers/promises'
import type { JetStreamClient } from '@nats-io/jetstream'
import type { MsgHdrs, NatsConnection } from '@nats-io/transport-node'
import type { ForgeConfig } from '../config/index.js'
import type { Logger } from '../engine/logger.js'
import { warmupSubjectOf } from '../store/bus.js'
import { grantPlan } from '../store/grants.js'
import { createActivities } from '../workers/activities.js'
import type { AttemptBatchInput } from '../workers/activity-types.js'
import { batchInputOf } from '../workflows/attempt-batches.js'
import { attemptInputOf } from '../workflows/tally.js'
import { planRun } from './plan-run.js'
import type { RunConfigInput } from './run-config.js'

/** the embedded stack's nats-server max_payload (stack/local-stack.ts): results are fitted to it */
const STACK_MAX_PAYLOAD = 8 * 1024 * 1024

export interface EngineLoopOptions {
  /** the results key the loop grants its plan under, checks and signs with; undefined: none, as in a process that has none */
  key: string | undefined
  logger: Logger
  /** aborted: no lane takes another attempt (no batch starts); the loop ends once the attempts already running have */
  signal?: AbortSignal
  /** each lane lets the event loop run between two attempts (a mock agent never waits on I/O, so its attempts would otherwise keep it from sockets and timers) */
  yieldBetweenAttempts?: boolean
  /**
   * run the attempts as a run's workers do: batch activities (`runAttempts`) of this many attempts,
   * `--concurrency` lanes each, their input JSON round-tripped as Temporal's payload converter hands it
   * over (a warm worker's JIT warm-up: warmed up on one `runAttempt` per attempt, the batch path's
   * first 1,000 attempts still cost ~0.1 ms more CPU each, a warm worker's first run ~0.04). The event
   * loop runs between two batches. Absent: one `runAttempt` per attempt.
   */
  batchSize?: number
  /** hands over each message the activities would have published, as it would have gone (an ingester's JIT warm-up samples them: app/ingester-warmup.ts) */
  capture?: (message: CapturedMessage) => void
  /**
   * publish for real, through this connection and its JetStream client, on the warm-up stream's
   * subjects (store/bus.ts `warmupSubjectOf`): a warm worker's JIT warm-up, so that the client code a
   * run's publishes take is compiled hot too. Absent: the stand-in that counts.
   */
  bus?: { nc: NatsConnection; js: JetStreamClient }
}

/** A message the engine loop's activities published to its stand-in bus: subject, body and headers (its signature, when signed). */
export interface CapturedMessage {
  subject: string
  data: Uint8Array
  headers?: MsgHdrs
}

export interface EngineLoopResult {
  /** attempts the plan holds */
  planned: number
  /** attempts run (fewer than planned when the signal stopped the loop) */
  attempts: number
  concurrency: number
  /** attempts by outcome (what the activities returned) */
  outcomes: Record<string, number>
  /** messages the activities would have published (one per attempt: its result with its stored trace) and their bytes */
  published: { messages: number; bytes: number }
}

interface PublishSink {
  nc: NatsConnection
  js: JetStreamClient
  published: { messages: number; bytes: number }
}

const byteLength = (body?: Uint8Array | string): number => (typeof body === 'string' ? Buffer.byteLength(body) : (body?.byteLength ?? 0))

/** A JetStream client and connection that publish through `bus` onto the warm-up stream's subjects, counting. */
function warmupSink(bus: { nc: NatsConnection; js: JetStreamClient }): PublishSink {
  const published = { messages: 0, bytes: 0 }
  const js = {
    publish: (subject: string, body?: Uint8Array | string, options?: Parameters<JetStreamClient['publish']>[2]) => {
      published.messages++
      published.bytes += byteLength(body)
      return bus.js.publish(warmupSubjectOf(subject), body, options)
    },
  }
  const nc = {
    get info() {
      return bus.nc.info
    },
    publish: (subject: string, data?: Uint8Array | string, options?: Parameters<NatsConnection['publish']>[2]) => bus.nc.publish(warmupSubjectOf(subject), data, options),
  }
  return { nc: nc as unknown as NatsConnection, js: js as unknown as JetStreamClient, published }
}

/** A JetStream client and connection that accept every publish and keep only counts. */
function publishSink(capture?: (message: CapturedMessage) => void): PublishSink {
  const published = { messages: 0, bytes: 0 }
  let seq = 0
  const js = {
    publish: (subject: string, body?: Uint8Array | string, options?: { headers?: MsgHdrs }) => {
      published.messages++
      published.bytes += byteLength(body)
      if (capture !== undefined) capture({ subject, data: typeof body === 'string' ? new TextEncoder().encode(body) : (body ?? new Uint8Array()), ...(options?.headers !== undefined ? { headers: options.headers } : {}) })
      return Promise.resolve({ stream: 'FORGE_RESULTS', seq: ++seq, duplicate: false, domain: '' })
    },
  }
  // progress events go over core NATS: dropped here
  const nc = { info: { max_payload: STACK_MAX_PAYLOAD }, publish: () => undefined }
  return { nc: nc as unknown as NatsConnection, js: js as unknown as JetStreamClient, published }
}

/**
 * Plans and grants the run as `forge run` does (app/plan-run.ts, store/grants.ts) and runs its
 * attempts in this process, `--concurrency` at once, in ShardWorkflow's order, through the worker's
 * `runAttempt` activity (its `runAttempts` with `options.batchSize`). `before` runs once the run is
 * planned, just before its first attempt (the bench starts its clocks there).
 */
export async function runEngineLoop(config: ForgeConfig, input: RunConfigInput, options: EngineLoopOptions, before: () => void = () => undefined): Promise<EngineLoopResult> {
  const { plan: planned, run } = await planRun(config, input)
  const { key } = options
  // granted as `forge run` grants it (app/run.ts): the activity checks the grant, as a worker does
  const plan = grantPlan(planned, key)
  const sink = options.bus !== undefined ? warmupSink(options.bus) : publishSink(options.capture)
  const activities = createActivities({ nc: sink.nc, js: sink.js, workerId: 'engine-loop', logger: options.logger, resultsKey: () => key })
  const total = plan.task_ids.length * plan.attempts
  const outcomes: Record<string, number> = {}
  let next = 0
  let attempts = 0
  const inputAt = (index: number) => attemptInputOf(plan, plan.task_ids[Math.floor(index / plan.attempts)]!, index % plan.attempts)
  const lane = async (): Promise<void> => {
    while (next < total && options.signal?.aborted !== true) {
      const index = next++
      const summary = await activities.runAttempt(inputAt(index))
      outcomes[summary.outcome] = (outcomes[summary.outcome] ?? 0) + 1
      attempts++
      if (options.yieldBetweenAttempts === true) await yieldToEvents()
    }
  }
  const batches = async (size: number): Promise<void> => {
    for (let from = 0; from < total && options.signal?.aborted !== true; from += size) {
      const inputs = Array.from({ length: Math.min(size, total - from) }, (_, i) => inputAt(from + i))
      const batch = JSON.parse(JSON.stringify({ ...batchInputOf(inputs), lanes: run.concurrency })) as AttemptBatchInput
      for (const summary of await activities.runAttempts(batch)) outcomes[summary.outcome] = (outcomes[summary.outcome] ?? 0) + 1
      attempts += batch.items.length
      if (options.yieldBetweenAttempts === true) await yieldToEvents()
    }
  }
  before()
  if (options.batchSize !== undefined) await batches(options.batchSize)
  else await Promise.all(Array.from({ length: Math.min(run.concurrency, total) }, lane))
  return { planned: total, attempts, concurrency: run.concurrency, outcomes, published: { ...sink.published } }
}
