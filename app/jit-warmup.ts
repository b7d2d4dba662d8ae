/**
 * A warm worker's JIT warm-up (issue 15). V8 compiles a function hot only once it has run many times,
 * so a worker process's first few thousand attempts cost it more CPU than later ones: in one process
 * the engine loop spent 0.94 ms of CPU per attempt on its first 1,000 smoke attempts and 0.58 on its
 * fourth 1,000. A warm worker that waits for the next run (workers/worker-process.ts) spends that
 * while it waits: it runs mock attempts of the bundled smoke suite through its own batch activity, in
 * batches shaped as a run's (app/engine-loop.ts: the bus is a stand-in that counts, the plan is
 * granted under a key made for it and dropped; nothing is published, stored or logged) until the
 * process has run FORGE_WARM_WORKER_WARMUP attempts in all — a run's attempts count — and stops as
 * soon as a run claims it, once the batch running (WARMUP_BATCH attempts, ~10 ms) has ended. Only
 * Forge's own code runs in it (the mock adapter and the smoke suite's tools): no agent code, so the
 * process stays untainted.
 */
import { randomBytes } from 'node:crypto'
import { resolveConfig } from '../config/index.js'
import { createLogger } from '../engine/logger.js'
import { attemptsRunInThisProcess } from '../workers/activities.js'
import { runEngineLoop } from './engine-loop.js'

/** attempts run at once: enough lanes for the activity's paths, few enough that a claim waits for little */
const WARMUP_LANES = 8
/** attempts per batch activity: a claim waits for the batch running (~10 ms) */
const WARMUP_BATCH = 20
const SMOKE_TASKS = 5

export interface JitWarmupReport {
  /** attempts the warm-up ran */
  attempts: number
  ms: number
  /** a run claimed the worker before the warm-up had run all it meant to */
  stopped: boolean
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
export function startJitWarmup(target: number): JitWarmup | undefined {
  const remaining = target - attemptsRunInThisProcess()
  if (remaining <= 0) return undefined
  const perTask = Math.ceil(remaining / SMOKE_TASKS)
  const stopper = new AbortController()
  const started = performance.now()
  const run = async (): Promise<JitWarmupReport> => {
    const config = resolveConfig()
    const loop = await runEngineLoop(
      config,
      { suite: 'smoke', adapter: 'mock', attempts: perTask, workers: 1, concurrency: WARMUP_LANES, seed: 'jit-warmup' },
      // silent: the warm-up's attempts are no run's, and the worker's log is its runs' (a failure ends the warm-up and is said)
      { key: randomBytes(32).toString('hex'), logger: createLogger('jit-warmup', 'silent'), signal: stopper.signal, yieldBetweenAttempts: true, batchSize: WARMUP_BATCH },
    )
    return { attempts: loop.attempts, ms: performance.now() - started, stopped: loop.attempts < loop.planned }
  }
  const done = run().catch((error: unknown) => ({ attempts: 0, ms: performance.now() - started, stopped: stopper.signal.aborted, error: error instanceof Error ? error.message : String(error) }))
  return {
    planned: perTask * SMOKE_TASKS,
    done,
    stop: () => {
      stopper.abort()
      return done
    },
  }
}
