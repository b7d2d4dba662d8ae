/** Bootstraps one attempt worker process: a Temporal worker whose activities publish to NATS. */
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client'
import { NativeConnection, Worker, type WorkerOptions as TemporalWorkerOptions } from '@temporalio/worker'
import { setTimeout as sleep } from 'node:timers/promises'
import { existsSync } from 'node:fs'
import { hostname } from 'node:os'
import { fileURLToPath } from 'node:url'
import type { JetStreamClient } from '@nats-io/jetstream'
import { connectBus, encodeJson, resultsKey, type NatsConnection } from '../store/bus.js'
import { otlpReportSubject } from '../core/otlp.js'
import { createOtlpExporter } from './otlp-exporter.js'
import { busReader } from '../store/bus-reader.js'
import { publishingJetStream } from '../store/jetstream-publish.js'
import { directReader, openClickHouse } from '../store/clickhouse.js'
import { createActivities } from './activities.js'
import { LaneSlots, laneSlotSupplier } from './lane-slots.js'
import { createReconcileActivities } from './reconcile.js'
import { createJudgeActivities } from './judge/activities.js'
import type { LogLevel } from '../config/index.js'
import { createLogger } from '../engine/logger.js'
import { startHealthServer, type HealthServer } from './health.js'
import { createWorkerTelemetry } from './worker-telemetry.js'
import { distEntry } from '../stack/paths.js'
import { processTaint } from '../engine/process-taint.js'

export interface WorkerOptions {
  temporalAddress: string
  namespace: string
  taskQueue: string
  natsUrl: string
  /** default: `<hostname>-<pid>` */
  workerId?: string
  /** a ClickHouse server to read the store from (fleet); unset: ask the ingester over NATS (embedded) */
  clickhouseUrl?: string
  /** attempts this process runs at once (FORGE_WORKER_CONCURRENCY) */
  concurrency: number
  /**
   * attempts one batch activity of the runs this worker serves runs at once (FORGE_WORKER_ATTEMPT_LANES,
   * set by `forge run` for the workers it starts; at most `concurrency`): activity polls then reserve
   * that many attempt slots each (workers/lane-slots.ts). Absent or 1: one slot per activity.
   */
  attemptLanes?: number
  /** exit when the parent process (a `forge run`) goes away (with `runId`: once that run has ended) */
  exitWithParent?: boolean
  /** the run a `forge run` started this worker for */
  runId?: string
  /** FORGE_LOG_LEVEL */
  logLevel: LogLevel
  /** resolves when the worker should stop; defaults to SIGTERM/SIGINT */
  shutdown?: Promise<void>
  /**
   * The judge worker in the same process: judge activities (tier 2, judge metrics) from their own task
   * queue, rate-limited apart from agents (FORGE_JUDGE_*). `false`: this process serves attempts only.
   */
  judge: false | { taskQueue: string; /** across the judge queue; 0: unlimited */ activitiesPerSecond: number; concurrency: number }
  /** false: serve the judge queue only (the chart's judge Deployment) */
  attempts?: boolean
  /** more activities on the attempt queue (the sweep's, from the process's composition root) */
  extraActivities?: (deps: { nc: NatsConnection; js: JetStreamClient }) => object
  /** serve /healthz, /readyz and /metrics on this port (FORGE_HEALTH_PORT) */
  healthPort?: number
  /** how long in-flight attempts may finish after SIGTERM before they are cancelled (default 5 s) */
  shutdownGraceMs?: number
  /** export each attempt's spans to this OTLP/HTTP collector as it finishes (FORGE_OTLP_URL; workers/otlp-exporter.ts) */
  otlp?: { url: string; version: string }
  /** where the worker says it is ready (`{ ready, workerId }`); default: its IPC channel, when it has one */
  report?: (message: { ready: true; workerId: string }) => void
  /**
   * With `exitWithParent`: resolves when the parent is gone. Default: the parent pid changed (a forked
   * worker); a warm worker claimed over a socket (stack/warm-workers.ts) has no such parent: its socket closes.
   */
  parentGone?: Promise<void>
  /** TLS / API key of a Temporal cluster (stack/temporal-connection.ts) */
  temporalConnection?: TemporalConnectionOptions
  /**
   * A workflow worker a warm worker created while it waited (`prepareWorkflowWorker`): used, with its
   * connection, when it was made for this worker's Temporal server, namespace and task queue.
   */
  preparedWorkflows?: Promise<PreparedWorkflows | undefined>
  /**
   * Asked as the worker stops: true keeps the prepared workflow worker it used polling, its connection
   * open, for the process's next run (a warm worker that waits again), and `runWorker` resolves with it.
   */
  keepWorkflows?: () => boolean
}

type TemporalConnectionOptions = { tls?: boolean | { serverNameOverride?: string; serverRootCACertificate?: Buffer; clientCertPair?: { crt: Buffer; key: Buffer } }; apiKey?: string }

/** Where a workflow worker polls: what a prepared one must match to be used. */
interface WorkflowTarget {
  temporalAddress: string
  namespace: string
  taskQueue: string
  temporalConnection?: TemporalConnectionOptions
}

/** A workflow worker created before its run was known, and the connection it polls through. */
export interface PreparedWorkflows {
  target: string
  connection: NativeConnection
  worker: Worker
  /** its `run()`, once it polls: kept from the run before, it serves the next one already compiled hot */
  running?: Promise<void>
}

const targetKey = (t: WorkflowTarget): string => JSON.stringify([t.temporalAddress, t.namespace, t.taskQueue, t.temporalConnection ?? {}])

/** A path beside dist/workers (or beside the sources); from the package root when `forge worker` runs this code from the CLI's bundle (scripts/bundle-cli.mjs). */
const besideWorkers = (relative: string): string => (import.meta.url.includes('/dist/cli-bundle/') ? distEntry(relative) : fileURLToPath(new URL(`../${relative}`, import.meta.url)))
const workflowBundlePath = (): string => besideWorkers('workflow-bundle.js')

/** The workflow worker (run, shard, sweep workflows) of a worker process on `connection`. */
function createWorkflowWorker(connection: NativeConnection, target: WorkflowTarget, identity: string, shutdownGraceTime: number | string): Promise<Worker> {
  const bundlePath = workflowBundlePath()
  return Worker.create({
    connection,
    namespace: target.namespace,
    taskQueue: target.taskQueue,
    identity,
    ...(existsSync(bundlePath) ? { workflowBundle: { codePath: bundlePath } } : { workflowsPath: besideWorkers('workflows/index.js') }),
    maxConcurrentWorkflowTaskExecutions: 40,
    shutdownGraceTime,
  })
}

/** Stops a prepared workflow worker (polling or not) and closes its connection. */
export async function retireWorkflows(prepared: PreparedWorkflows): Promise<void> {
  if (prepared.running === undefined) {
    await prepared.worker.runUntil(Promise.resolve()).catch(() => undefined)
  } else {
    if (prepared.worker.getState() === 'RUNNING') prepared.worker.shutdown()
    await prepared.running.catch(() => undefined)
  }
  await prepared.connection.close().catch(() => undefined)
}

/**
 * Connects and creates the workflow worker a run on `target` will need, without polling: a warm worker
 * does this while it waits, so that a run's first workflow task does not wait ~0.5 s for the bundle
 * to load into its VM context after the claim (issue 15). Its identity is the process's, not a run's.
 */
export async function prepareWorkflowWorker(target: WorkflowTarget): Promise<PreparedWorkflows> {
  const connection = await NativeConnection.connect({ ...target.temporalConnection, address: target.temporalAddress })
  try {
    return { target: targetKey(target), connection, worker: await createWorkflowWorker(connection, target, `${hostname()}-${process.pid}`, '5s') }
  } catch (error) {
    await connection.close().catch(() => undefined)
    throw error
  }
}

/**
 * The attempt worker's activity slots: `concurrency` activities at once, or — when its runs' batch
 * activities run several attempts at once — `concurrency` attempts, reserved a batch's lanes at a time.
 */
function activitySlotOptions(concurrency: number, lanes: number): Pick<TemporalWorkerOptions, 'maxConcurrentActivityTaskExecutions' | 'tuner'> {
  if (lanes <= 1) return { maxConcurrentActivityTaskExecutions: concurrency }
  // this worker polls activities only: the other kinds of slot never fill
  const one = { type: 'fixed-size', numSlots: 1 } as const
  return {
    tuner: {
      activityTaskSlotSupplier: laneSlotSupplier(new LaneSlots(concurrency, lanes)),
      workflowTaskSlotSupplier: { type: 'fixed-size', numSlots: 2 },
      localActivityTaskSlotSupplier: one,
      nexusTaskSlotSupplier: one,
    },
  }
}

/** how often a fleet worker looks whether agent code tainted its process */
const TAINT_CHECK_MS = 1_000

/**
 * Serves the attempt (and judge) queues and the workflows until the worker stops; resolves once it
 * has, everything it opened closed — but the prepared workflow worker, when `keepWorkflows` kept it:
 * then with it, still polling.
 */
export async function runWorker(opts: WorkerOptions): Promise<PreparedWorkflows | undefined> {
  const workerId = opts.workerId ?? `${hostname()}-${process.pid}`
  const logger = createLogger('worker', opts.logLevel).child({ worker_id: workerId })
  // Temporal's connection is made while NATS answers; when both fail, NATS's failure is the one reported
  // a warm worker's workflow worker, made while it waited, when it polls where this run's must
  const prepared = await opts.preparedWorkflows?.catch(() => undefined)
  const usable = prepared !== undefined && opts.attempts !== false && prepared.target === targetKey(opts) && serviceable(prepared.worker) ? prepared : undefined
  // one made for elsewhere would keep the process alive unused: it starts and stops at once (a workflow
  // task it might take meanwhile is one any worker of this build may run)
  if (prepared !== undefined && usable === undefined) void retireWorkflows(prepared)
  const connecting = usable !== undefined ? Promise.resolve(usable.connection) : NativeConnection.connect({ ...opts.temporalConnection, address: opts.temporalAddress })
  connecting.catch(() => undefined)
  let nc: NatsConnection
  try {
    nc = await connectBus(opts.natsUrl, `forge-worker-${workerId}`, 'worker')
  } catch (error) {
    void connecting.then((connection) => connection.close()).catch(() => undefined)
    throw error
  }
  // an ingester holding a results key rejects whatever this worker cannot sign
  if (resultsKey() === undefined) logger.warn('results are not signed: no FORGE_RESULTS_KEY (give the workers, ingesters and CLI of a fleet the same hex key)')
  // live OTLP export: counts per run go to `forge run` over core NATS after every request
  const otlp = opts.otlp === undefined ? undefined : createOtlpExporter({ ...opts.otlp, report: (runId, counts) => nc.publish(otlpReportSubject(runId), encodeJson({ worker_id: workerId, ...counts })) })
  const connection = await connecting
  const reader = opts.clickhouseUrl !== undefined ? directReader(await openClickHouse({ kind: 'server', url: opts.clickhouseUrl })) : busReader(nc)
  const judgeOptions = opts.judge === false ? undefined : opts.judge
  const telemetry = createWorkerTelemetry({
    backlog: { service: connection.workflowService, namespace: opts.namespace, taskQueues: [...(opts.attempts === false ? [] : [opts.taskQueue]), ...(judgeOptions ? [judgeOptions.taskQueue] : [])] },
  })
  const shutdownGraceTime = opts.shutdownGraceMs ?? '5s'
  // one JetStream client for every activity of this process: its publishes share one inbox for their acknowledgements
  const resultsJs = publishingJetStream(nc)
  const worker = opts.attempts === false ? undefined : await Worker.create({
    connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    identity: workerId,
    activities: {
      ...createActivities({ nc, js: resultsJs, workerId, logger, attemptSlots: opts.concurrency, ...(otlp !== undefined ? { otlp } : {}) }),
      // the completeness check at the end of a run reads the store the way every other reader does
      ...createReconcileActivities({ nc, js: resultsJs, reader, logger }),
      ...opts.extraActivities?.({ nc, js: resultsJs }),
    },
    interceptors: { activity: [telemetry.interceptor] },
    ...activitySlotOptions(opts.concurrency, opts.attemptLanes ?? 1),
    shutdownGraceTime,
  })
  // the workflows (run, shard, sweep) on the same queue come from a second worker, created once the attempt
  // slots poll: loading the workflow bundle takes ~150 ms that the first attempts need not wait for
  // one that may outlive its run (kept for the process's next: `keepWorkflows`) is named by its process, as a prepared one is
  const workflowIdentity = opts.keepWorkflows !== undefined ? `${hostname()}-${process.pid}` : workerId
  const workflowWorkerNow = (): Promise<Worker> => (usable !== undefined ? Promise.resolve(usable.worker) : createWorkflowWorker(connection, opts, workflowIdentity, shutdownGraceTime))
  const judgeWorker =
    judgeOptions === undefined
      ? undefined
      : await Worker.create({
          connection,
          namespace: opts.namespace,
          taskQueue: judgeOptions.taskQueue,
          identity: `${workerId}-judge`,
          activities: createJudgeActivities({ nc, js: resultsJs, reader, logger: logger.child({ role: 'judge' }) }),
          maxConcurrentActivityTaskExecutions: judgeOptions.concurrency,
          // the server spreads this over every worker of the judge queue: a fleet-wide rate
          ...(judgeOptions.activitiesPerSecond > 0 ? { maxTaskQueueActivitiesPerSecond: judgeOptions.activitiesPerSecond } : {}),
          interceptors: { activity: [telemetry.interceptor] },
          shutdownGraceTime,
        })

  const workers = [worker, judgeWorker].filter((w): w is Worker => w !== undefined)
  // once this resolves the process may serve another run (a warm worker): nothing of this one may act then
  let finished = false
  let fuse: NodeJS.Timeout | undefined
  // the workflow worker this run polls with (the prepared one, or one it created), kept polling for the
  // process's next run when `keepWorkflows` says so as it stops: a warm worker's next run then starts on
  // the workflow thread that ran this run's workflows, not on a prepared one that never ran one (its
  // first workflow task took ~80 ms against ~20 on a thread compiled hot, issue 15)
  let workflows: Worker | undefined = usable?.worker
  let keeping = false
  let kept = (): void => undefined
  const workflowsKept = new Promise<void>((resolve) => (kept = resolve))
  const stop = () => {
    if (telemetry.draining) return
    telemetry.draining = true
    keeping = workflows !== undefined && serviceable(workflows) && opts.keepWorkflows?.() === true
    // a shutdown waits on its server: with Temporal gone for good it would wait forever
    if (opts.exitWithParent) fuse = setTimeout(() => process.exit(1), 20_000).unref()
    for (const w of workers) if (!(keeping && w === workflows)) w.shutdown()
    if (keeping) kept()
  }
  const onSignal = () => {
    logger.info('shutting down')
    stop()
  }
  process.once('SIGTERM', onSignal)
  process.once('SIGINT', onSignal)
  void opts.shutdown?.then(stop)
  let parentWatch: NodeJS.Timeout | undefined
  if (opts.exitWithParent) {
    const parent = process.ppid
    const parentGone =
      opts.parentGone ??
      new Promise<void>((resolve) => {
        parentWatch = setInterval(() => {
          if (process.ppid !== parent) resolve()
        }, 500)
      })
    void parentGone.then(() => {
      if (finished) return
      if (parentWatch) clearInterval(parentWatch)
      if (opts.runId === undefined) {
        logger.warn({ parent }, 'parent process is gone; shutting down')
        stop()
        return
      }
      // a run survives its CLI (issue 12): serve it to its end, then go
      logger.warn({ parent, run_id: opts.runId }, 'parent process is gone; serving its run until it ends')
      void untilRunEnded(opts.temporalAddress, opts.namespace, opts.runId).then(() => {
        logger.info({ run_id: opts.runId }, 'the run ended; shutting down')
        stop()
      })
    })
  }
  // a worker that serves every run (a fleet's: no run of its own) in which agent code then ran
  // (engine/process-taint.ts) stops taking attempts and drains: no later run may share a process that
  // agent could have altered; its supervisor starts a fresh one (Kubernetes restarts the pod)
  const taintWatch =
    opts.runId === undefined
      ? setInterval(() => {
          const taint = processTaint()
          if (taint === undefined || telemetry.draining) return
          logger.error({ taint }, 'agent code ran inside this worker process: it drains and exits so that no later run shares it')
          stop()
        }, TAINT_CHECK_MS).unref()
      : undefined
  let health: HealthServer | undefined
  if (opts.healthPort !== undefined) {
    health = await startHealthServer({
      port: opts.healthPort,
      role: worker ? 'worker' : 'judge',
      probe: {
        live: () => workers.every((w) => w.getState() !== 'FAILED') && !nc.isClosed(),
        ready: () => !telemetry.draining && !nc.isClosed() && workers.every((w) => w.getState() === 'RUNNING'),
        detail: () => ({ worker_id: workerId, states: workers.map((w) => w.getState()), ...telemetry.counts() }),
      },
      metrics: () => telemetry.metrics(),
    })
  }
  logger.info({ task_queue: opts.taskQueue, temporal: opts.temporalAddress, nats: opts.natsUrl, health_port: health?.port }, 'worker ready')
  const report = opts.report ?? (process.send ? (message: object) => process.send?.(message) : undefined)
  report?.({ ready: true, workerId })
  let workflowsRun: Promise<void> | undefined
  try {
    const running = workers.map((w) => w.run())
    // a worker that fails while the workflow worker is created is awaited below, not unhandled
    for (const r of running) r.catch(() => undefined)
    if (worker !== undefined) {
      let workflowWorker: Worker
      try {
        workflowWorker = await workflowWorkerNow()
      } catch (error) {
        stop()
        await Promise.allSettled(running)
        throw error
      }
      workers.push(workflowWorker)
      workflows = workflowWorker
      // a kept one polls already (workflow worker runs once)
      workflowsRun = usable?.running ?? workflowWorker.run()
      workflowsRun.catch(() => undefined)
      running.push(Promise.race([workflowsRun, workflowsKept]))
      // a stop that came while it was created (a short run on a worker forked for it can end before the
      // bundle loaded): kept as it would have been had it been there — else the warm worker the process
      // becomes waits with none polling, and its next run's workflow tasks wait for one to be made
      if (telemetry.draining && !keeping) {
        keeping = serviceable(workflowWorker) && opts.keepWorkflows?.() === true
        if (keeping) kept()
        else workflowWorker.shutdown()
      }
    }
    await Promise.all(running)
  } finally {
    finished = true
    clearInterval(taintWatch)
    await health?.close()
    if (parentWatch) clearInterval(parentWatch)
    // spans of finished attempts still waiting go out before the bus closes (each request is bounded by its timeout)
    await otlp?.flush()
    process.off('SIGTERM', onSignal)
    process.off('SIGINT', onSignal)
    await reader.close().catch(() => undefined)
    await nc.drain().catch(() => undefined)
    if (!keeping) await connection.close()
    clearTimeout(fuse)
  }
  // (a stop before it polled keeps it prepared, not polling); one this run created keeps the run's connection
  if (!keeping || workflows === undefined) return undefined
  return { target: targetKey(opts), connection, worker: workflows, ...(workflowsRun !== undefined ? { running: workflowsRun } : {}) }
}

/** A workflow worker that polls or can: not one that failed or stops. */
const serviceable = (worker: Worker): boolean => ['INITIALIZED', 'RUNNING'].includes(worker.getState())

/** Resolves once the run's workflow is no longer running (polls Temporal; waits through an outage of up to 2 minutes). */
async function untilRunEnded(address: string, namespace: string, runId: string): Promise<void> {
  let unreachableSince: number | undefined
  for (;;) {
    try {
      const connection = await Connection.connect({ address, connectTimeout: 2_000 })
      try {
        for (;;) {
          const description = await new Client({ connection, namespace }).workflow.getHandle(`forge-run-${runId}`).describe()
          unreachableSince = undefined
          if (description.status.name !== 'RUNNING') return
          await sleep(2_000)
        }
      } finally {
        await connection.close()
      }
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return
      // a stack that stays down (or came back elsewhere) has no use for this worker
      unreachableSince ??= Date.now()
      if (Date.now() - unreachableSince > 120_000) return
      await sleep(2_000)
    }
  }
}
