/**
 * `forge run`: plan the run (app/plan-run.ts), bring up what is not running, start worker processes,
 * start RunWorkflow, follow progress over NATS, wait until ClickHouse holds every published attempt,
 * and answer with the run's statistics computed from ClickHouse.
 */
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { readSetting, settingsEnv, type ForgeConfig } from '../config/index.js'
import type { RunPlan, Task } from '../core/contracts/index.js'
import { describeCompleteness, describeHarnessErrors, type FinalRunStatus, type RunCompleteness } from '../core/completeness.js'
import { ConfigError, ForgeError } from '../core/errors.js'
import { checkTaskSizes, formatBytes } from '../core/message-size.js'
import { busAccess } from '../store/bus-auth.js'
import { grantPlan } from '../store/grants.js'
import { ingesterLogOf, watchStore } from './store-watch.js'
import { busMaxPayload, connectBus, progressEventsOf, requestIngesterFlush, subjects, type NatsConnection, type ProgressEvent } from '../store/bus.js'
import { getRun } from '../store/repositories.js'
import { superviseStack } from '../stack/supervisor.js'
import { leaveWarmWorkers } from '../stack/warm-workers.js'
import type { RunWorkflowResult } from '../workflows/run.js'
import type { SealReport } from './audit.js'
import { attemptLanesFor, planRun } from './plan-run.js'
import type { RunConfigInput } from './run-config.js'
import { refuseReusedRunId } from './run-id.js'
import { openRunTemporal, TemporalWorkflowEndedError, type RunHandle, type RunTemporal } from './run-temporal.js'
import { openReader } from './store-access.js'
import type { RunStats } from './stats.js'
import { maxLocalWorkerProcesses, startWorkerPool, WorkerStartError, workerLayout, workerLayoutNote } from './worker-pool.js'
import { adoptWarmWorkers, discardPreforked, preforkWorkers, settleLoadingClaims } from './worker-prefork.js'
import { runWorkflowHost } from './workflow-host.js'
import { refuseLocalModelWithoutWorkers, runEndpoints, type PollerWatch } from './fleet-workers.js'
import { tracesUrl } from './otlp-url.js'
import { describeOtlpExport, followOtlpExports, type OtlpRunSummary } from './otlp-live.js'
import { localModelConcurrency, startRunModelServer } from './local-model.js'

export { dryRun, type DryRunReport } from './plan-run.js'
export type { RunConfig, RunConfigInput } from './run-config.js'

/** how long a cancelled or failed run waits for its final record to be stored */
const FINAL_RECORD_WAIT_MS = 5_000

/** how long the end of a run waits for the workers' last OTLP exports (a request times out after 10 s) */
const OTLP_SETTLE_MS = 30_000

/** follows the run live (progress, log records: app/progress.ts) from before it starts until its results are stored */
export type RunObserver = (nc: NatsConnection, runId: string, planned: number) => { stop(): void }

export type RunEvent =
  | { kind: 'stack'; message: string }
  | { kind: 'workers'; pids: number[] }
  | { kind: 'started'; run_id: string; tasks: number; attempts: number; total: number; workers: number; seed: string }
  | { kind: 'task-done'; task_id: string; k: number; n: number; done_tasks: number; total_tasks: number }
  | { kind: 'ingesting'; stored: number; expected: number }
  /** something the user should know before the run's statistics (e.g. a task field results carry truncated) */
  | { kind: 'notice'; message: string }

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
  /** how the run ended: completed, degraded (harness errors > 2%) or incomplete (attempts missing) */
  status: FinalRunStatus
  /** what the completeness check at the end of the run found (null for a run started before it existed) */
  completeness: RunCompleteness | null
  /** --otlp-url: how the workers' live export of spans went (app/otlp-live.ts) */
  otlp?: OtlpRunSummary
}

/**
 * Plans the run, then runs it: the local stack (when not external), `workers` worker processes,
 * RunWorkflow, live progress, and the wait until ClickHouse holds every published attempt.
 * Aborting `signal` (Ctrl-C) cancels the run's workflow; the run is recorded as cancelled.
 */
export async function runSuite(config: ForgeConfig, input: RunConfigInput, onEvent: (event: RunEvent) => void = () => undefined, signal?: AbortSignal, observe?: RunObserver): Promise<RunReport> {
  // warm workers an earlier run left take the first slots; the others load their code while the run is
  // planned (forge run's init hook did both sooner)
  if (typeof input.workers !== 'number' || input.workers > 0) {
    const count = Math.min(typeof input.workers === 'number' ? input.workers : 1, maxLocalWorkerProcesses())
    await adoptWarmWorkers(config.home, count)
    preforkWorkers(count, join(config.home, 'logs'))
  }
  try {
    return await planAndRun(config, input, onEvent, signal, observe)
  } finally {
    // a run that failed before its workers started leaves none behind
    discardPreforked()
  }
}

async function planAndRun(config: ForgeConfig, input: RunConfigInput, onEvent: (event: RunEvent) => void, signal: AbortSignal | undefined, observe: RunObserver | undefined): Promise<RunReport> {
  const { run, suite, tasks, plan: planned, localModel } = await planRun(config, input)
  refuseLocalModelWithoutWorkers(run.workers, localModel)
  const endpoints = await runEndpoints(config, run.workers, (message) => onEvent({ kind: 'stack', message }))
  // a run id the user chose must be new (generated ones are)
  if (run.run_id !== undefined) await withReader(config, (reader) => refuseReusedRunId(reader, planned.run_id))
  const modelServer = await startRunModelServer(config, localModel, (message) => onEvent({ kind: 'stack', message }))
  const concurrency = localModelConcurrency(run.concurrency, run.workers, modelServer.parallel, planned.adapter_config['model'])
  // the worker processes Forge starts here have `layout.concurrency` attempt slots each: an attempt
  // activity may run several attempts at once, and each of them reserves that many slots to poll
  const maxProcesses = maxLocalWorkerProcesses()
  const layout = workerLayout(run.workers, concurrency, maxProcesses)
  const shardAttempts = Math.min(planned.shard_size, planned.task_ids.length * planned.attempts)
  const lanes = run.workers === 0 ? 1 : attemptLanesFor(layout.concurrency, { maxInFlight: planned.max_in_flight, processes: layout.processes, shardAttempts })
  // granted under the results key (store/grants.ts): the workers run only what Forge's own components planned
  const plan: RunPlan = grantPlan(lanes > 1 ? { ...planned, attempt_lanes: lanes } : planned, busAccess(endpoints.natsUrl, 'cli').resultsKey)
  if (concurrency < run.concurrency) onEvent({ kind: 'stack', message: `${concurrency} attempt(s) at once per worker: the model server generates ${modelServer.parallel} at once (FORGE_MODEL_PARALLEL)` })
  const nc = await connectBus(endpoints.natsUrl, 'forge-run')
  try {
    // a field too big for one message of this bus stops the run before its first attempt
    for (const message of taskSizeNotices(suite, tasks, busMaxPayload(nc))) onEvent({ kind: 'notice', message })
  } catch (error) {
    await nc.drain().catch(() => undefined)
    throw error
  }
  // --otlp-url / FORGE_OTLP_URL: workers export spans live and report their counts here
  const otlp = config.otlpUrl === undefined ? undefined : followOtlpExports(nc, plan.run_id, tracesUrl(config.otlpUrl, '--otlp-url'))
  // warm workers that were still loading when the run started take their slots now
  if (run.workers > 0) await settleLoadingClaims(join(config.home, 'logs'))
  // the next run of this home starts on workers that have loaded their code (stack/warm-workers.ts):
  // the workers of the first warm slots (claimed warm ones, or forked for this run) wait for it,
  // compiled hot by this run; a slot left without one gets a new one (read before any worker starts:
  // a FORGE_WARM_WORKERS it refuses stops the run here, not its end)
  const warmSlots = run.workers === 0 ? 0 : Math.min(readSetting('warmWorkers'), layout.processes)
  // --workers 0: no worker here; `forge worker` processes elsewhere (a fleet) run the attempts
  const pool = run.workers === 0 ? undefined : startWorkerPool({
    count: run.workers,
    temporalAddress: endpoints.temporalAddress,
    natsUrl: endpoints.natsUrl,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    concurrency,
    maxProcesses,
    attemptLanes: lanes,
    logDir: join(config.home, 'logs'),
    runId: plan.run_id,
    onNotice: (message) => onEvent({ kind: 'stack', message }),
    env: { ...modelServer.env, ...settingsEnv({ otlpUrl: config.otlpUrl }) },
  })
  // while it waits, forge run restarts whatever of the local stack dies (so does the stack's own supervisor)
  const supervisor = endpoints.local ? superviseStack(config, { log: (message) => onEvent({ kind: 'stack', message }) }) : undefined
  // the local dev server over its HTTP API when this run's workers are Forge's own; the SDK otherwise
  // (a fleet's Temporal may want TLS or an API key, FORGE_TEMPORAL_TLS* / FORGE_TEMPORAL_API_KEY, as its workers do)
  const temporal = await openRunTemporal(config, { address: endpoints.temporalAddress, httpUrl: pool !== undefined && endpoints.local ? endpoints.temporalHttpUrl : undefined })
  const started = Date.now()
  // the run's first workflow tasks are answered here while the workers start (app/workflow-host.ts); warm
  // workers have loaded already and serve them sooner than this process could load the SDK and the bundle
  const host = pool === undefined || pool.warm === pool.layout.processes ? undefined : runWorkflowHost({ temporalAddress: endpoints.temporalAddress, namespace: config.temporal.namespace, taskQueue: config.temporal.taskQueue, runId: plan.run_id, logDir: join(config.home, 'logs') })
  let reporting: Promise<typeof import('./run-report.js')> | undefined
  const loadReporting = (): Promise<typeof import('./run-report.js')> => (reporting ??= import('./run-report.js'))
  let observer: { stop(): void } | undefined
  let fleet: PollerWatch | undefined
  let poolStopped: Promise<void> | undefined
  // says so when the store fails the ingester's inserts (a full disk): the run would wait on it without a word
  const storeWatch = watchStore(nc, ingesterLogOf(config, endpoints.local), (message) => onEvent({ kind: 'notice', message }))
  try {
    const progress = followProgress(nc, plan.run_id, tasks, plan.attempts, onEvent)
    observer = observe?.(nc, plan.run_id, tasks.length * plan.attempts)
    // the workflow starts while the workers start up (its first tasks wait on the queue for them): ~0.8 s sooner
    let workersReady: Promise<void> = Promise.resolve()
    const workersLost = pool?.lost ?? new Promise<never>(() => undefined)
    if (pool !== undefined) {
      if (pool.layout.processes < run.workers) onEvent({ kind: 'stack', message: workerLayoutNote(run.workers, pool.layout) })
      workersReady = pool.ready.then(() => onEvent({ kind: 'workers', pids: pool.pids() }))
      workersReady.catch(() => undefined)
    }
    const result = await runWorkflow(
      temporal,
      plan,
      signal,
      workersReady,
      workersLost,
      () => {
        // the report's modules (statistics, the audit trail) load while the workflow runs, not before it starts
        loadReporting().catch(() => undefined)
        onEvent({ kind: 'started', run_id: plan.run_id, tasks: tasks.length, attempts: plan.attempts, total: tasks.length * plan.attempts, workers: run.workers, seed: plan.seed })
        if (pool === undefined) fleet = temporal.watchFleet?.((message) => onEvent({ kind: 'notice', message }))
      },
      (message) => onEvent({ kind: 'stack', message }),
    ).catch(async (error: unknown) => {
      // a cancelled or failed run recorded its status on its way out: forge run ends once the store holds it
      if (error instanceof RunFailedError) {
        requestIngesterFlush(nc)
        await withReader(config, (reader) => untilRunEnded(reader, plan.run_id, FINAL_RECORD_WAIT_MS))
      }
      throw error
    })
    // the run's final record is on its way to the store: forge run waits for it next
    requestIngesterFlush(nc)
    // a fleet worker that came and finished the run between two looks of the watch is named now
    await fleet?.settle()
    progress.stop()
    const wallMs = Date.now() - started
    // the run's workers are done with it: a warm one goes back to waiting (its attempt worker stopped)
    // while the report is read, not after it (~10 ms of forge run's end, issue 15); a worker exporting
    // spans live stops once they settled, after the report
    if (otlp === undefined) poolStopped = pool?.stop({ keepWarm: warmSlots })
    const { reportRun } = await loadReporting()
    // read over this run's own bus connection: no new one for the final record, the statistics or the seal
    const report = await reportRun(config, plan, result, wallMs, run.ingest_timeout_ms, onEvent, { bus: nc })
    if (otlp === undefined) return report
    // every stored attempt's spans were sent, failed or dropped by now, unless a worker died or the collector hangs
    const exported = await otlp.settled(report.attempts, OTLP_SETTLE_MS)
    onEvent({ kind: 'notice', message: describeOtlpExport(exported) })
    return { ...report, otlp: exported }
  } finally {
    storeWatch.stop()
    fleet?.stop()
    otlp?.stop()
    await supervisor?.stop()
    observer?.stop()
    await host?.stop()
    await (poolStopped ?? pool?.stop({ keepWarm: warmSlots }))
    // (best effort: a home it cannot write to costs the next run its start-up, never this run its report)
    if (pool !== undefined) {
      try {
        // where the next run's workflows will be served and its results published: a warm worker prepares its
        // workflow worker there while it waits, and its JIT warm-up publishes onto that NATS server's warm-up stream
        const target = settingsEnv({ temporalAddress: endpoints.temporalAddress, temporalNamespace: config.temporal.namespace, taskQueue: config.temporal.taskQueue, natsUrl: endpoints.natsUrl })
        leaveWarmWorkers(config.home, warmSlots, { ...process.env, ...target })
      } catch {
        // the next run forks its own
      }
    }
    await temporal.close()
    await nc.drain().catch(() => undefined)
  }
}

/** Starts RunWorkflow and waits for its result; aborting `signal` cancels it. */
async function runWorkflow(
  temporal: RunTemporal,
  plan: RunPlan,
  signal: AbortSignal | undefined,
  workersReady: Promise<void>,
  workersLost: Promise<never>,
  onStarted: () => void,
  onOutage: (message: string) => void,
): Promise<RunWorkflowResult> {
  const handle = await temporal.start(plan)
  try {
    await workersReady
  } catch (error) {
    // no worker of ours came up: nothing of the run ran, so nothing is left to record
    await handle.terminate(`forge run: the workers did not start (${errorMessage(error)})`).catch(() => undefined)
    throw error
  }
  onStarted()
  // every worker of ours gone for good (each kept dying before it was ready): nothing would run the rest
  const lost = workersLost.catch(async (error: unknown) => {
    await handle.terminate(`forge run: ${errorMessage(error)}`).catch(() => undefined)
    throw new WorkerStartError(`${errorMessage(error)}; run ${plan.run_id} was terminated, what finished is stored (forge stats --run-id ${plan.run_id})`, { cause: error })
  })
  return Promise.race([awaitRunResult(handle, plan.run_id, signal, onOutage), lost])
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/**
 * Waits for a run's workflow to close, through Temporal outages (a restarted dev server comes back on
 * the same address); aborting `signal` cancels the run. Throws RunFailedError when it failed or was cancelled.
 */
export async function awaitRunResult(
  handle: RunHandle,
  runId: string,
  signal: AbortSignal | undefined,
  onOutage: (message: string) => void,
): Promise<RunWorkflowResult> {
  const cancel = () => void retryThroughOutage(() => handle.cancel(), 120_000).catch(() => undefined)
  if (signal?.aborted) cancel()
  signal?.addEventListener('abort', cancel, { once: true })
  try {
    return await retryThroughOutage(() => handle.result(), 600_000, () => onOutage('Temporal is unreachable; waiting for it to come back…'))
  } catch (error) {
    if (error instanceof TemporalWorkflowEndedError) {
      throw new RunFailedError(signal?.aborted === true ? `run ${runId} was cancelled; what finished is stored (forge stats --run-id ${runId})` : `run ${runId} failed: ${error.message}`, { cause: error })
    }
    throw error
  } finally {
    signal?.removeEventListener('abort', cancel)
  }
}

/**
 * Checks every task's instruction and input against the bus's max_payload: throws a ConfigError
 * naming the suite, task, field and sizes when one cannot fit a message; returns notices for
 * instructions that results carry truncated (with a marker; the verbatim text stays in the suite).
 */
export function taskSizeNotices(suite: { name: string; path: string }, tasks: readonly Task[], maxPayload: number): string[] {
  const { refused, truncated } = checkTaskSizes(tasks, maxPayload)
  if (refused.length > 0) {
    const problems = refused.map((p) => `task ${p.task_id}: ${p.field} is ${formatBytes(p.bytes)}, over the ${formatBytes(p.limit)} one message of the bus can carry (max_payload ${formatBytes(maxPayload)} less headroom)`)
    throw new ConfigError(`suite ${suite.name} (${suite.path}): ${problems.join('; ')}; keep large content in a fixture file and name it in the task`)
  }
  return truncated.map((p) => `task ${p.task_id}: its ${formatBytes(p.bytes)} instruction is stored with each result truncated to ${formatBytes(p.limit)} (marked); the verbatim text stays in the suite`)
}

/** Thrown when the run ended with attempts missing from the store after reconciliation; names them. */
export class RunIncompleteError extends ForgeError {
  override name = 'RunIncompleteError'
  readonly kind = 'run_failed'
}

/** Thrown when the run completed but harness errors exceed 2% of its attempts (exit code 7). */
export class RunDegradedError extends ForgeError {
  override name = 'RunDegradedError'
  readonly kind = 'degraded'
}

/** The error a finished run's report ends with: incomplete (exit 1) or degraded (exit 7); undefined when it completed. */
export function runOutcomeError(report: Pick<RunReport, 'run_id' | 'status' | 'completeness'>): RunIncompleteError | RunDegradedError | undefined {
  const c = report.completeness
  if (c === null) return undefined
  if (report.status === 'incomplete') return new RunIncompleteError(`run ${report.run_id} is incomplete: ${describeCompleteness(c)}`)
  if (report.status === 'degraded') return new RunDegradedError(`run ${report.run_id} is degraded: ${describeHarnessErrors(c)}`)
  return undefined
}

/** `call`, again every second while Temporal is unreachable (UNAVAILABLE), for at most `timeoutMs`. */
async function retryThroughOutage<T>(call: () => Promise<T>, timeoutMs: number, onRetry: () => void = () => undefined): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let said = false
  for (;;) {
    try {
      return await call()
    } catch (error) {
      if (!isUnavailable(error) || Date.now() > deadline) throw error
      if (!said) onRetry()
      said = true
      await sleep(1_000)
    }
  }
}

/** A gRPC UNAVAILABLE (code 14) anywhere in the cause chain: the server is down or restarting. */
function isUnavailable(error: unknown): boolean {
  for (let e = error; e instanceof Error; e = e.cause) {
    if ((e as { code?: unknown }).code === 14 || /\b14 UNAVAILABLE\b|ECONNREFUSED/.test(e.message)) return true
  }
  return false
}

/** Thrown when the run workflow itself failed (a configuration error, or it was cancelled). */
export class RunFailedError extends ForgeError {
  override name = 'RunFailedError'
  readonly kind = 'run_failed'
}

/** Counts finished attempts per task from live progress events; duplicates (retries) count once. */
export function followProgress(
  nc: Awaited<ReturnType<typeof connectBus>>,
  runId: string,
  tasks: readonly unknown[],
  attempts: number,
  onEvent: (event: RunEvent) => void,
): { stop(): void } {
  const seen = new Map<string, Map<number, boolean>>()
  let doneTasks = 0
  const sub = nc.subscribe(subjects.progress(runId), {
    callback: (error, msg) => {
      if (error) return
      let events: ProgressEvent[]
      try {
        events = progressEventsOf(msg.json())
      } catch {
        return
      }
      for (const event of events) {
        const task = seen.get(event.task_id) ?? new Map<number, boolean>()
        seen.set(event.task_id, task)
        if (task.has(event.attempt)) continue
        task.set(event.attempt, event.outcome === 'pass')
        if (task.size === attempts) {
          doneTasks++
          const k = [...task.values()].filter(Boolean).length
          onEvent({ kind: 'task-done', task_id: event.task_id, k, n: attempts, done_tasks: doneTasks, total_tasks: tasks.length })
        }
      }
    },
  })
  return { stop: () => sub.unsubscribe() }
}

/** Waits (at most `timeoutMs`: a run terminated from outside records nothing) until the store holds the run's record as ended. */
async function untilRunEnded(reader: Awaited<ReturnType<typeof openReader>>, runId: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const run = await getRun(reader, runId).catch(() => undefined)
    if (run !== undefined && run.status !== 'running') return
    await sleep(50)
  }
}

async function withReader<T>(config: ForgeConfig, use: (reader: Awaited<ReturnType<typeof openReader>>) => Promise<T>): Promise<T> {
  const reader = await openReader(config)
  try {
    return await use(reader)
  } finally {
    await reader.close()
  }
}
