/**
 * Forge's own engine in one process (issue 15): the attempts a `forge run` would schedule, run by the
 * worker's very attempt activity (`createActivities(deps).runAttempt`, workers/activities.ts) — suite
 * loader, adapter, tool proxy, grading, invariants, metrics, redaction, message fit, stored trace,
 * audit hashes and the JSON encoding (and signing, when this process holds a results key) of both
 * messages — with no Temporal, no NATS and no ClickHouse: the JetStream client is a sink that
 * counts what would have been published, and lanes of a local pool stand in for Temporal's.
 * What `forge run` costs beyond this loop is orchestration: the figure the targets compare against.
 */
import type { JetStreamClient } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import type { ForgeConfig } from '../config/index.js'
import { planRun } from '../app/plan-run.js'
import type { RunConfigInput } from '../app/run-config.js'
import { createLogger } from '../engine/logger.js'
import { resultsKey } from '../store/bus.js'
import { grantPlan } from '../store/grants.js'
import { createActivities } from '../workers/activities.js'
import { attemptInputOf } from '../workflows/tally.js'
import { perSecond, runPool } from './measure.js'

/** the embedded stack's nats-server max_payload (stack/local-stack.ts): results are fitted to it */
const STACK_MAX_PAYLOAD = 8 * 1024 * 1024

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

/** A JetStream client and connection that accept every publish and keep only counts. */
function publishSink(): { nc: NatsConnection; js: JetStreamClient; published: { messages: number; bytes: number } } {
  const published = { messages: 0, bytes: 0 }
  let seq = 0
  const js = {
    publish: (_subject: string, body?: Uint8Array | string) => {
      published.messages++
      published.bytes += typeof body === 'string' ? Buffer.byteLength(body) : (body?.byteLength ?? 0)
      return Promise.resolve({ stream: 'FORGE_RESULTS', seq: ++seq, duplicate: false, domain: '' })
    },
  }
  // progress events go over core NATS: dropped here
  const nc = { info: { max_payload: STACK_MAX_PAYLOAD }, publish: () => undefined }
  return { nc: nc as unknown as NatsConnection, js: js as unknown as JetStreamClient, published }
}

/**
 * Plans and grants the run as `forge run` does (app/plan-run.ts, store/grants.ts) under `key` (the
 * results key this process signs with, if any) and runs every attempt of the plan in this
 * process, `concurrency` at once, through the worker's `runAttempt` activity, in ShardWorkflow's order.
 */
export async function inProcessEngineLoop(config: ForgeConfig, input: RunConfigInput, key: string | undefined = resultsKey()): Promise<InProcessReport> {
  const { plan: planned, run } = await planRun(config, input)
  // granted as `forge run` grants it (app/run.ts): the activity checks the grant, as a worker does
  const plan = grantPlan(planned, key)
  const sink = publishSink()
  const activities = createActivities({ nc: sink.nc, js: sink.js, workerId: 'bench-in-process', logger: createLogger('bench-in-process', config.logLevel), resultsKey: () => key })
  const total = plan.task_ids.length * plan.attempts
  const outcomes: Record<string, number> = {}
  const cpuBefore = process.cpuUsage()
  const started = performance.now()
  await runPool(total, run.concurrency, async (index) => {
    const summary = await activities.runAttempt(attemptInputOf(plan, plan.task_ids[Math.floor(index / plan.attempts)]!, index % plan.attempts))
    outcomes[summary.outcome] = (outcomes[summary.outcome] ?? 0) + 1
  })
  const wallMs = performance.now() - started
  const cpu = process.cpuUsage(cpuBefore)
  return {
    attempts: total,
    concurrency: run.concurrency,
    wall_ms: wallMs,
    attempts_per_second: perSecond(total, wallMs),
    cpu_s: (cpu.user + cpu.system) / 1e6,
    outcomes,
    published: { ...sink.published },
  }
}
