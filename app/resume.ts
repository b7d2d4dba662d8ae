/**
 * `forge runs resume RUN` (issue 12): a run survives its CLI. Its workflow keeps running in Temporal
 * (and the workers of a `forge run` that died serve it to its end); resuming re-attaches: it brings
 * the stack up, starts workers when the run still runs, follows it to its end and reports it like
 * `forge run` does, completeness check included. `workers: 0` starts none: the run's workers run
 * elsewhere (a fleet), and while none polls its task queue it says so (app/fleet-workers.ts).
 */
import type { WorkflowHandle } from '@temporalio/client'
import { join } from 'node:path'
import type { ForgeConfig } from '../config/index.js'
import { ConfigError } from '../core/errors.js'
import type { RunPlan } from '../core/contracts/index.js'
import { connectBus } from '../store/bus.js'
import { superviseStack } from '../stack/supervisor.js'
import { ingesterLogOf, watchStore } from './store-watch.js'
import { temporalConnectOptions } from '../stack/temporal-connection.js'
import type { RunWorkflow, RunWorkflowInput } from '../workflows/run.js'
import { awaitRunResult, followProgress, type RunEvent, type RunReport } from './run.js'
import { reportRun } from './run-report.js'
import { maxLocalWorkerProcesses, startWorkerPool, WorkerStartError, workerLayout, workerLayoutNote, type WorkerPool } from './worker-pool.js'
import { runEndpoints, watchFleetWorkers, type PollerWatch } from './fleet-workers.js'

export interface ResumeOptions {
  run_id: string
  /** worker processes to start when the run is still running; 0: none, workers elsewhere serve it */
  workers: number
  concurrency: number
  ingest_timeout_ms?: number
}

/** Re-attaches to a run by id and waits for it like `forge run`; aborting `signal` cancels the run. */
export async function resumeRun(config: ForgeConfig, opts: ResumeOptions, onEvent: (event: RunEvent) => void = () => undefined, signal?: AbortSignal): Promise<RunReport> {
  if (!Number.isInteger(opts.workers) || opts.workers < 0 || opts.workers > 256) throw new ConfigError(`--workers must be a whole number from 0 to 256, got ${opts.workers}`)
  const endpoints = await runEndpoints(config, opts.workers, (message) => onEvent({ kind: 'stack', message }))
  // the SDK, loaded only here: `forge run` (which imports this module) goes without it on the local stack
  const [{ Client, Connection, WorkflowNotFoundError }, { sdkRunHandle }] = await Promise.all([import('@temporalio/client'), import('./run-temporal-sdk.js')])
  const connection = await Connection.connect(temporalConnectOptions(endpoints.temporalAddress))
  const nc = await connectBus(endpoints.natsUrl, 'forge-resume')
  const supervisor = endpoints.local ? superviseStack(config, { log: (message) => onEvent({ kind: 'stack', message }) }) : undefined
  const storeWatch = watchStore(nc, ingesterLogOf(config, endpoints.local), (message) => onEvent({ kind: 'notice', message }))
  let pool: WorkerPool | undefined
  let fleet: PollerWatch | undefined
  const started = Date.now()
  try {
    const client = new Client({ connection, namespace: config.temporal.namespace })
    const handle = client.workflow.getHandle<typeof RunWorkflow>(`forge-run-${opts.run_id}`)
    let running: boolean
    try {
      running = (await handle.describe()).status.name === 'RUNNING'
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) {
        throw new ConfigError(`Temporal at ${endpoints.temporalAddress} knows no run "${opts.run_id}" (forge runs list shows the stored runs)`, { cause: error })
      }
      throw error
    }
    const plan = await planOf(handle)
    const progress = followProgress(nc, plan.run_id, plan.task_ids, plan.attempts, onEvent)
    if (running && opts.workers === 0) fleet = watchFleetWorkers(client, config, onEvent)
    if (running && opts.workers > 0) {
      const maxProcesses = maxLocalWorkerProcesses()
      const slots = workerLayout(opts.workers, opts.concurrency, maxProcesses).concurrency
      const lanes = plan.attempt_lanes ?? 1
      pool = startWorkerPool({
        count: opts.workers,
        temporalAddress: endpoints.temporalAddress,
        natsUrl: endpoints.natsUrl,
        namespace: config.temporal.namespace,
        taskQueue: config.temporal.taskQueue,
        concurrency: opts.concurrency,
        maxProcesses,
        // the run's batches reserve their lanes (all the slots, when there are fewer)
        attemptLanes: Math.min(lanes, slots),
        logDir: join(config.home, 'logs'),
        runId: plan.run_id,
        onNotice: (message) => onEvent({ kind: 'stack', message }),
      })
      if (pool.layout.processes < opts.workers) onEvent({ kind: 'stack', message: workerLayoutNote(opts.workers, pool.layout) })
      await pool.ready
      onEvent({ kind: 'workers', pids: pool.pids() })
    }
    onEvent({ kind: 'notice', message: `resumed run ${plan.run_id} (${running ? 'still running' : 'already ended'})` })
    // every worker of ours gone for good: the run stays open for the next resume
    const lost = pool?.lost.catch((error: unknown) => {
      throw new WorkerStartError(`${(error as Error).message}; run ${plan.run_id} is still open: forge runs resume ${plan.run_id} goes on with it`, { cause: error })
    })
    const result = await Promise.race([awaitRunResult(sdkRunHandle(handle), plan.run_id, signal, (message) => onEvent({ kind: 'stack', message })), ...(lost === undefined ? [] : [lost])])
    await fleet?.settle()
    progress.stop()
    return await reportRun(config, plan, result, Date.now() - started, opts.ingest_timeout_ms ?? 120_000, onEvent)
  } finally {
    storeWatch.stop()
    fleet?.stop()
    await supervisor?.stop()
    await pool?.stop()
    await connection.close()
    await nc.drain().catch(() => undefined)
  }
}

/** The run's plan: the input of the latest execution of its workflow (continue-as-new carries it). */
async function planOf(handle: WorkflowHandle<typeof RunWorkflow>): Promise<RunPlan> {
  const history = await handle.fetchHistory()
  const payload = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]
  if (payload === undefined || payload === null) throw new Error(`the workflow ${handle.workflowId} has no input in its history`)
  const { defaultPayloadConverter } = await import('@temporalio/common')
  return defaultPayloadConverter.fromPayload<RunWorkflowInput>(payload).plan
}
