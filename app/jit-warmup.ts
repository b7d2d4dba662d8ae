/**
 * A warm worker's JIT warm-up (issue 15). V8 compiles a function hot only once it has run many times,
 * so a worker process's first few thousand attempts cost it more CPU than later ones: in one process
 * the engine loop spent 0.94 ms of CPU per attempt on its first 1,000 smoke attempts and 0.58 on its
 * fourth 1,000. A warm worker that waits for the next run (workers/worker-process.ts) spends that
 * while it waits: it runs mock attempts of the bundled smoke suite through its own batch activity, in
 * batches shaped as a run's (app/engine-loop.ts) until the process has run FORGE_WARM_WORKER_WARMUP
 * attempts in all — a run's attempts count — and stops as soon as a run claims it, once the batch
 * running (WARMUP_BATCH attempts, ~10 ms) has ended. The plan is granted, and each message signed,
 * under a key made for the warm-up and dropped. Given the stack's NATS server, it connects as a worker
 * does and publishes each attempt for real onto the warm-up stream nobody reads (store/bus.ts
 * WARMUP_STREAM), so the JetStream client's code is compiled hot too: a first run's worker then spent
 * ~0.1 s less CPU per 1,000 attempts than with the stand-in that only counts, which it falls back to
 * when the stream does not take its probe. Nothing is stored or logged. Only Forge's own code runs in
 * it (the mock adapter and the smoke suite's tools): no agent code, so the process stays untainted.
 */
import { randomBytes } from 'node:crypto'
import type { JetStreamClient } from '@nats-io/jetstream'
import { resolveConfig } from '../config/index.js'
import { createLogger } from '../engine/logger.js'
import { publishingJetStream } from '../store/jetstream-publish.js'
import { connectBus, resultsKey, signResultsWith, subjects, warmupSubjectOf, WARMUP_STREAM, type NatsConnection } from '../store/bus.js'
import { attemptsRunInThisProcess } from '../workers/activities.js'
import { runEngineLoop } from './engine-loop.js'

/** attempts run at once: enough lanes for the activity's paths, few enough that a claim waits for little */
const WARMUP_LANES = 8
/** attempts per batch activity: a claim waits for the batch running (~10 ms) */
const WARMUP_BATCH = 20
const SMOKE_TASKS = 5
/** how long the warm-up stream's probe may take (a local server answers in a millisecond) */
const PROBE_TIMEOUT_MS = 2_000

export interface JitWarmupReport {
  /** attempts the warm-up ran */
  attempts: number
  ms: number
  /** a run claimed the worker before the warm-up had run all it meant to */
  stopped: boolean
  /** where its attempts' messages went: the warm-up stream (store/bus.ts), or nowhere (the stand-in) and why */
  published: { stream: typeof WARMUP_STREAM; messages: number } | { stream: undefined; why: string }
}

export interface JitWarmupOptions {
  /** the stack's NATS server: the warm-up publishes onto its warm-up stream; absent, onto the stand-in */
  natsUrl?: string | undefined
}

export interface JitWarmup {
  /** attempts it means to run: what the process still lacks of its target, a multiple of the smoke suite's 5 tasks */
  planned: number
  /** the warm-up's end: what it ran; never rejects (a failure is reported as `error`) */
  done: Promise<JitWarmupReport & { error?: string }>
  /** stops it (no attempt starts after this) and resolves once the attempts running have ended */
  stop(): Promise<JitWarmupReport & { error?: string }>
}

/**
 * Starts the warm-up of this process towards `target` attempts run in all; undefined when it has run
 * that many already (or `target` is 0).
 */
export function startJitWarmup(target: number, options: JitWarmupOptions = {}): JitWarmup | undefined {
  const remaining = target - attemptsRunInThisProcess()
  if (remaining <= 0) return undefined
  const perTask = Math.ceil(remaining / SMOKE_TASKS)
  const stopper = new AbortController()
  const started = performance.now()
  const run = async (): Promise<JitWarmupReport> => {
    const config = resolveConfig()
    const signing = resultsKey()
    const bus = options.natsUrl !== undefined ? await connectWarmupBus(options.natsUrl) : { why: 'no NATS server given' }
    const key = randomBytes(32).toString('hex')
    // signed as a run's messages are (the signing code compiled hot too), under the warm-up's own key
    signResultsWith(key)
    try {
      const loop = await runEngineLoop(
        config,
        { suite: 'smoke', adapter: 'mock', attempts: perTask, workers: 1, concurrency: WARMUP_LANES, seed: 'jit-warmup' },
        // silent: the warm-up's attempts are no run's, and the worker's log is its runs' (a failure ends the warm-up and is said)
        { key, logger: createLogger('jit-warmup', 'silent'), signal: stopper.signal, yieldBetweenAttempts: true, batchSize: WARMUP_BATCH, ...('nc' in bus ? { bus } : {}) },
      )
      const published: JitWarmupReport['published'] = 'nc' in bus ? { stream: WARMUP_STREAM, messages: loop.published.messages } : { stream: undefined, why: bus.why }
      return { attempts: loop.attempts, ms: performance.now() - started, stopped: loop.attempts < loop.planned, published }
    } finally {
      signResultsWith(signing)
      if ('nc' in bus) void bus.nc.close().catch(() => undefined)
    }
  }
  const done = run().catch((error: unknown) => ({
    attempts: 0,
    ms: performance.now() - started,
    stopped: stopper.signal.aborted,
    published: { stream: undefined, why: 'it failed' },
    error: error instanceof Error ? error.message : String(error),
  }))
  return {
    planned: perTask * SMOKE_TASKS,
    done,
    stop: () => {
      stopper.abort()
      return done
    },
  }
}

/**
 * A worker's connection to `natsUrl` whose JetStream client the warm-up stream takes messages from (a
 * probe published and acknowledged), or why not: no stream (an older stack's ingester made none), a
 * server that refuses the worker, none there.
 */
async function connectWarmupBus(natsUrl: string): Promise<{ nc: NatsConnection; js: JetStreamClient } | { why: string }> {
  let nc: NatsConnection | undefined
  try {
    nc = await connectBus(natsUrl, `forge-warmup-${process.pid}`, 'worker')
    // the client a worker's activities publish with (workers/worker-main.ts), so the warm-up compiles its code
    const js = publishingJetStream(nc)
    await js.publish(warmupSubjectOf(subjects.run), new Uint8Array(), { timeout: PROBE_TIMEOUT_MS })
    return { nc, js }
  } catch (error) {
    void nc?.close().catch(() => undefined)
    return { why: error instanceof Error ? error.message : String(error) }
  }
}
