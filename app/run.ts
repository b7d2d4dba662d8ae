/**
 * `forge run`: plan the run (app/plan-run.ts), bring up what is not running, start worker processes,
 * start RunWorkflow, follow progress over NATS, wait until ClickHouse holds every published attempt,
 * and answer with the run's statistics computed from ClickHouse.
 */
import { Client, Connection, WorkflowExecutionAlreadyStartedError, WorkflowFailedError } from '@temporalio/client'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { ForgeConfig } from '../config/index.js'
import type { RunPlan, Task } from '../core/contracts/index.js'
import { ForgeError } from '../core/errors.js'
import { connectBus, subjects, type NatsConnection, type ProgressEvent } from '../store/bus.js'
import { countAttempts, getRun } from '../store/repositories.js'
import { stackUp } from '../stack/local-stack.js'
import { isolationOf } from '../engine/sandbox/config.js'
import type { RunWorkflow, RunWorkflowResult } from '../workflows/run.js'
import { sealRunWhenStored, type SealReport } from './audit.js'
import { planRun } from './plan-run.js'
import type { RunConfigInput } from './run-config.js'
import { refuseReusedRunId, runIdTakenByTemporal } from './run-id.js'
import { openReader } from './store-access.js'
import { getRunStats, type RunStats } from './stats.js'
import { startWorkerPool } from './worker-pool.js'
import { localModelConcurrency, startRunModelServer } from './local-model.js'

export { dryRun, type DryRunReport } from './plan-run.js'
export type { RunConfig, RunConfigInput } from './run-config.js'

/** follows the run live (progress, log records: app/progress.ts) from before it starts until its results are stored */
export type RunObserver = (nc: NatsConnection, runId: string, planned: number) => { stop(): void }

export type RunEvent =
  | { kind: 'stack'; message: string }
  | { kind: 'workers'; pids: number[] }
  | { kind: 'started'; run_id: string; tasks: number; attempts: number; total: number; workers: number; seed: string }
  | { kind: 'task-done'; task_id: string; k: number; n: number; done_tasks: number; total_tasks: number }
  | { kind: 'ingesting'; stored: number; expected: number }

export interface RunReport extends RunStats {
  run_id: string
  seed: string
  suite: string
  adapter: string
  /** how agent code was isolated (engine/sandbox/config.ts isolationOf); '' when the adapter runs none */
  isolation: string
  expected_attempts: number
  not_executed: number
  wall_ms: number
  attempts_per_second: number
  /** runs with a judge: judge activities that completed, and those that failed after every retry (their tier 2 stays pending) */
  judged?: number
  judge_not_executed?: number
  /** the run's audit chain once sealed: its head (also on the run record) and signature (with FORGE_AUDIT_KEY) */
  audit: SealReport
}

/**
 * Plans the run, then runs it: the local stack (when not external), `workers` worker processes,
 * RunWorkflow, live progress, and the wait until ClickHouse holds every published attempt.
 * Aborting `signal` (Ctrl-C) cancels the run's workflow; the run is recorded as cancelled.
 */
export async function runSuite(config: ForgeConfig, input: RunConfigInput, onEvent: (event: RunEvent) => void = () => undefined, signal?: AbortSignal, observe?: RunObserver): Promise<RunReport> {
  const { run, suite, tasks, plan, localModel } = await planRun(config, input)
  const endpoints = await stackUp(config, (message) => onEvent({ kind: 'stack', message }))
  // a run id the user chose must be new (generated ones are)
  if (run.run_id !== undefined) await withReader(config, (reader) => refuseReusedRunId(reader, plan.run_id))
  const modelServer = await startRunModelServer(config, localModel, (message) => onEvent({ kind: 'stack', message }))
  const concurrency = localModelConcurrency(run.concurrency, run.workers, modelServer.parallel, plan.adapter_config['model'])
  if (concurrency < run.concurrency) onEvent({ kind: 'stack', message: `${concurrency} attempt(s) at once per worker: the model server generates ${modelServer.parallel} at once (FORGE_MODEL_PARALLEL)` })
  const nc = await connectBus(endpoints.natsUrl, 'forge-run')
  const pool = startWorkerPool({
    count: run.workers,
    temporalAddress: endpoints.temporalAddress,
    natsUrl: endpoints.natsUrl,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    concurrency,
    logDir: join(config.home, 'logs'),
    runId: plan.run_id,
    env: modelServer.env,
  })
  const connection = await Connection.connect({ address: endpoints.temporalAddress })
  const started = Date.now()
  let observer: { stop(): void } | undefined
  try {
    const progress = followProgress(nc, plan.run_id, tasks, plan.attempts, onEvent)
    observer = observe?.(nc, plan.run_id, tasks.length * plan.attempts)
    await pool.ready
    onEvent({ kind: 'workers', pids: pool.workers.map((w) => w.pid ?? 0) })
    const result = await runWorkflow(new Client({ connection, namespace: config.temporal.namespace }), config.temporal.taskQueue, plan, signal, () =>
      onEvent({ kind: 'started', run_id: plan.run_id, tasks: tasks.length, attempts: plan.attempts, total: tasks.length * plan.attempts, workers: run.workers, seed: plan.seed }),
    )
    const wallMs = Date.now() - started
    progress.stop()
    // a sequential run schedules fewer attempts than tasks × attempts when tasks stop early
    const scheduled = result.total
    const reader = await openReader(config)
    try {
      const published = Object.values(result.tally.outcomes).reduce((a, b) => a + b, 0)
      await waitForStorage(reader, plan.run_id, published, run.ingest_timeout_ms, onEvent)
      const stats = await getRunStats(reader, plan.run_id)
      // every stored result is hash-linked into the run's chain; its head goes on the run record
      const audit = await sealRunWhenStored(config, plan.run_id, { attempts: stats.attempts, judged: result.tally.judged ?? 0 }, run.ingest_timeout_ms)
      return {
        ...stats,
        run_id: plan.run_id,
        seed: plan.seed,
        suite: suite.name,
        adapter: plan.adapter,
        isolation: isolationOf(plan.adapter, plan.adapter_config),
        expected_attempts: scheduled,
        not_executed: result.tally.not_executed,
        wall_ms: wallMs,
        attempts_per_second: scheduled / Math.max(wallMs / 1000, 0.001),
        ...(plan.judge !== undefined ? { judged: result.tally.judged ?? 0, judge_not_executed: result.tally.judge_not_executed ?? 0 } : {}),
        audit,
      }
    } finally {
      await reader.close()
    }
  } finally {
    observer?.stop()
    await pool.stop()
    await connection.close()
    await nc.drain().catch(() => undefined)
  }
}

/** Starts RunWorkflow and waits for its result; aborting `signal` cancels it. */
async function runWorkflow(client: Client, taskQueue: string, plan: RunPlan, signal: AbortSignal | undefined, onStarted: () => void): Promise<RunWorkflowResult> {
  const handle = await client.workflow
    .start<typeof RunWorkflow>('RunWorkflow', { taskQueue, workflowId: `forge-run-${plan.run_id}`, args: [{ plan }], workflowIdReusePolicy: 'REJECT_DUPLICATE' })
    .catch((error: unknown) => {
      throw error instanceof WorkflowExecutionAlreadyStartedError ? runIdTakenByTemporal(plan.run_id, error) : error
    })
  onStarted()
  const cancel = () => void handle.cancel().catch(() => undefined)
  if (signal?.aborted) cancel()
  signal?.addEventListener('abort', cancel, { once: true })
  try {
    return await handle.result()
  } catch (error) {
    if (error instanceof WorkflowFailedError) {
      const runId = plan.run_id
      throw new RunFailedError(signal?.aborted === true ? `run ${runId} was cancelled; what finished is stored (forge stats --run-id ${runId})` : `run ${runId} failed: ${rootMessage(error)}`, { cause: error })
    }
    throw error
  } finally {
    signal?.removeEventListener('abort', cancel)
  }
}

/** Thrown when the run workflow itself failed (a configuration error, or it was cancelled). */
export class RunFailedError extends ForgeError {
  override name = 'RunFailedError'
  readonly kind = 'run_failed'
}

function rootMessage(error: Error): string {
  let current: unknown = error
  while (current instanceof Error && current.cause instanceof Error) current = current.cause
  return current instanceof Error ? current.message : String(current)
}

/** Counts finished attempts per task from live progress events; duplicates (retries) count once. */
function followProgress(
  nc: Awaited<ReturnType<typeof connectBus>>,
  runId: string,
  tasks: Task[],
  attempts: number,
  onEvent: (event: RunEvent) => void,
): { stop(): void } {
  const seen = new Map<string, Map<number, boolean>>()
  let doneTasks = 0
  const sub = nc.subscribe(subjects.progress(runId), {
    callback: (error, msg) => {
      if (error) return
      const event = msg.json<ProgressEvent>()
      const task = seen.get(event.task_id) ?? new Map<number, boolean>()
      seen.set(event.task_id, task)
      if (task.has(event.attempt)) return
      task.set(event.attempt, event.outcome === 'pass')
      if (task.size === attempts) {
        doneTasks++
        const k = [...task.values()].filter(Boolean).length
        onEvent({ kind: 'task-done', task_id: event.task_id, k, n: attempts, done_tasks: doneTasks, total_tasks: tasks.length })
      }
    },
  })
  return { stop: () => sub.unsubscribe() }
}

/** Waits (at most `timeoutMs`) until the store holds every published attempt and the run's final record. */
async function waitForStorage(
  reader: Awaited<ReturnType<typeof openReader>>,
  runId: string,
  published: number,
  timeoutMs: number,
  onEvent: (event: RunEvent) => void,
): Promise<void> {
  const count = async () => {
    const [stored, run] = await Promise.all([countAttempts(reader, runId), getRun(reader, runId)])
    // the run's final record travels the same stream; count it as stored once it landed
    return run?.status === 'running' || run === undefined ? Math.min(stored, published - 1) : stored
  }
  const deadline = Date.now() + timeoutMs
  let stored = await count()
  let lastReport = 0
  while (stored < published && Date.now() < deadline) {
    if (Date.now() - lastReport > 2_000) {
      onEvent({ kind: 'ingesting', stored, expected: published })
      lastReport = Date.now()
    }
    await sleep(100)
    stored = await count()
  }
  if (stored < published) onEvent({ kind: 'ingesting', stored, expected: published })
}

async function withReader<T>(config: ForgeConfig, use: (reader: Awaited<ReturnType<typeof openReader>>) => Promise<T>): Promise<T> {
  const reader = await openReader(config)
  try {
    return await use(reader)
  } finally {
    await reader.close()
  }
}
