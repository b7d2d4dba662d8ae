/**
 * Forge's own engine in one process (issue 15): the attempts a `forge run` would schedule, run by the
 * worker's very attempt activity (`createActivities(deps).runAttempt`, workers/activities.ts) — suite
 * loader, adapter, tool proxy, grading, invariants, metrics, redaction, message fit, stored trace,
 * audit hashes and the JSON encoding (and signing, when this process holds a results key) of both
 * messages — with no Temporal, no NATS and no ClickHouse: the JetStream client is a sink that
 * counts what would have been published, and lanes of a local pool stand in for Temporal's.
 * What `forge run` costs beyond this loop is orchestration: the figure the targets compare against.
 */
import type { ForgeConfig } from '../config/index.js'
import { runEngineLoop } from '../app/engine-loop.js'
import type { RunConfigInput } from '../app/run-config.js'
import { createLogger } from '../engine/logger.js'
import { resultsKey } from '../store/bus.js'
import { perSecond } from './measure.js'

export interface InProcessReport {
  attempts: number
  concurrency: number
  wall_ms: number
  attempts_per_second: number
  /** CPU seconds (user + system) this process used meanwhile: on a shared machine the steadier figure */
  cpu_s: number
  /** attempts by outcome (what the activities returned) */
  outcomes: Record<string, number>
  /** messages the activities would have published (results stream: one per attempt, its result with its stored trace) and their bytes */
  published: { messages: number; bytes: number }
}

/**
 * Plans and grants the run as `forge run` does under `key` (the results key this process signs with,
 * if any) and runs every attempt of the plan in this process, `concurrency` at once, through the
 * worker's `runAttempt` activity (app/engine-loop.ts); the clocks start at its first attempt.
 */
export async function inProcessEngineLoop(config: ForgeConfig, input: RunConfigInput, key: string | undefined = resultsKey()): Promise<InProcessReport> {
  let cpuBefore = process.cpuUsage()
  let started = performance.now()
  const loop = await runEngineLoop(config, input, { key, logger: createLogger('bench-in-process', config.logLevel) }, () => {
    cpuBefore = process.cpuUsage()
    started = performance.now()
  })
  const wallMs = performance.now() - started
  const cpu = process.cpuUsage(cpuBefore)
  return {
    attempts: loop.attempts,
    concurrency: loop.concurrency,
    wall_ms: wallMs,
    attempts_per_second: perSecond(loop.attempts, wallMs),
    cpu_s: (cpu.user + cpu.system) / 1e6,
    outcomes: loop.outcomes,
    published: loop.published,
  }
}
