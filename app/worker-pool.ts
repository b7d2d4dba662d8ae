/**
 * The worker processes of one `forge run --workers N`. Each runs in its own process group, so a
 * Ctrl-C in the terminal (SIGINT to the whole foreground group) reaches only `forge run`, which
 * cancels the run and then stops its workers. A worker that dies is started again in its slot
 * (issue 12); a slot whose worker keeps dying before it is ready is given up (MAX_START_TRIES). When
 * `forge run` itself dies, its workers serve its run to the end, then exit.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { availableParallelism } from 'node:os'
import { readSetting, settingsEnv } from '../config/index.js'
import { ForgeError } from '../core/errors.js'
import { busAccessEnv } from '../store/bus-auth.js'
import { WARM_SLOT_ARG, WarmWorker } from '../stack/warm-workers.js'
import { discardWorker, forkWorkerProcess, sendWorkerSettings, takePreforked, type WorkerProcess } from './worker-prefork.js'

export interface WorkerPool {
  /** how the requested workers were laid out on this machine: processes × attempt slots each */
  layout: WorkerLayout
  /** the live worker of each slot (a restarted worker replaces its predecessor) */
  workers: WorkerProcess[]
  /** the process ids of the workers alive now (a given-up slot has none) */
  pids(): number[]
  /** slots whose worker is a warm worker an earlier run left (stack/warm-workers.ts): loaded already */
  warm: number
  /**
   * resolves when every slot's worker said it is ready or its slot was given up (below), at least one
   * ready; rejects, naming the worker and its log, when every slot was given up first
   */
  ready: Promise<void>
  /**
   * rejects when no worker process is left: each slot's worker exited during start-up MAX_START_TRIES
   * times in a row (a slot whose worker dies after it was ready is started again without limit)
   */
  lost: Promise<never>
  /**
   * Stops every worker (SIGTERM, SIGKILL after 10 s) and resolves once each has exited — but for the
   * workers of slots below `keepWarm`: told that their run is over (a claimed warm worker over its
   * socket, `WarmWorker.finishRun`; a forked one over IPC), they wait for the next run on their slot's
   * warm socket; resolved for once they listen there (or exited).
   */
  stop(opts?: { keepWarm?: number }): Promise<void>
}

export interface WorkerPoolOptions {
  /** workers asked for (--workers): at most `maxProcesses` processes, the rest as attempt slots in them */
  count: number
  /** default: FORGE_LOCAL_WORKER_PROCESSES, else the larger of 4 and the CPU count */
  maxProcesses?: number
  temporalAddress: string
  natsUrl: string
  namespace: string
  taskQueue: string
  concurrency: number
  /** attempts one batch activity of the run runs at once (RunPlan.attempt_lanes; at most each process's slots, best a divisor of them; default 1) */
  attemptLanes?: number
  logDir: string
  runId: string
  /** a worker died and was started again in its slot, or its slot was given up */
  onNotice?: (message: string) => void
  /** how a worker process is started (default: workers/worker-process.js); a test passes its own program */
  fork?: typeof forkWorkerProcess
  /** more environment for the workers (e.g. where the stack's model server is) */
  env?: Record<string, string>
}

/** Processes and attempt slots per process for `workers` workers of `concurrency` each. */
export interface WorkerLayout {
  processes: number
  concurrency: number
}

/**
 * Lays out `workers` × `concurrency` attempt slots on at most `maxProcesses` local processes: on one
 * machine a worker process more only costs start-up time and memory once there is one per core, so
 * `--workers 50` becomes a few processes whose slots add up to at least what 50 would have had.
 */
export function workerLayout(workers: number, concurrency: number, maxProcesses: number): WorkerLayout {
  const processes = Math.max(1, Math.min(workers, maxProcesses))
  return { processes, concurrency: Math.ceil((workers * concurrency) / processes) }
}

/** What `forge run` says when it laid out fewer processes than workers. */
export function workerLayoutNote(workers: number, layout: WorkerLayout): string {
  return `${workers} workers as ${layout.processes} worker processes × ${layout.concurrency} attempt slots (FORGE_LOCAL_WORKER_PROCESSES; more processes than cores only cost start-up and memory)`
}

/** FORGE_LOCAL_WORKER_PROCESSES, or (0, auto) the larger of 4 and the CPU count. */
export function maxLocalWorkerProcesses(env: NodeJS.ProcessEnv = process.env): number {
  const setting = readSetting('localWorkerProcesses', env)
  return setting > 0 ? setting : Math.max(4, availableParallelism())
}

/** Local worker processes could not be started (each kept exiting before it said it was ready): exit code 4, as a stack that did not start. */
export class WorkerStartError extends ForgeError {
  override name = 'WorkerStartError'
  readonly kind = 'stack'
}

/** Starts in a row that end before the worker says it is ready, after which its slot is given up. */
export const MAX_START_TRIES = 3

export function startWorkerPool(opts: WorkerPoolOptions): WorkerPool {
  mkdirSync(opts.logDir, { recursive: true })
  const layout = workerLayout(opts.count, opts.concurrency, opts.maxProcesses ?? maxLocalWorkerProcesses())
  let stopping = false
  // the rest of the worker's settings (judge, log level) it inherits from this process's environment
  const envOf = (slot: number): NodeJS.ProcessEnv => ({
    ...process.env,
    ...opts.env,
    ...settingsEnv({
      temporalAddress: opts.temporalAddress,
      natsUrl: opts.natsUrl,
      temporalNamespace: opts.namespace,
      taskQueue: opts.taskQueue,
      workerId: `${opts.runId}-w${slot}`,
      workerConcurrency: layout.concurrency,
      workerAttemptLanes: opts.attemptLanes ?? 1,
      exitWithParent: true,
      workerRunId: opts.runId,
    }),
    // its NATS credentials and the results key it signs with (store/bus-auth.ts)
    ...busAccessEnv(opts.natsUrl, 'worker'),
  })
  const logOf = (slot: number): string => join(opts.logDir, `worker-${slot}.log`)
  const spawnWorker = (slot: number): WorkerProcess => (opts.fork ?? forkWorkerProcess)(logOf(slot), envOf(slot), false)
  // warm workers earlier runs left and workers forked while forge run started (app/worker-prefork.ts) have loaded their code: they take the first slots
  const early = takePreforked()
  for (const child of early.splice(layout.processes)) discardWorker(child)
  const startWorker = (slot: number): WorkerProcess => {
    const child = early[slot]
    if (child === undefined) return spawnWorker(slot)
    sendWorkerSettings(child, envOf(slot))
    return child
  }
  const workers = Array.from({ length: layout.processes }, (_, slot) => startWorker(slot))
  const warm = workers.filter((child) => child instanceof WarmWorker).length
  // each slot's worker is watched from its start: one that exits is started again in its slot — its
  // attempts are retried by Temporal after the heartbeat timeout — unless it exited before saying it
  // was ready MAX_START_TRIES times in a row: then that slot is given up (a worker that cannot start
  // fails fast), and the run goes on with the others
  const startFailures = workers.map(() => 0)
  const everReady = new Set<number>()
  const givenUp = new Set<number>()
  let settleReady: { resolve(): void; reject(error: WorkerStartError): void } | undefined
  const ready = new Promise<void>((resolve, reject) => (settleReady = { resolve, reject }))
  let reportLost: ((error: WorkerStartError) => void) | undefined
  const lost = new Promise<never>((_, reject) => (reportLost = reject))
  lost.catch(() => undefined)
  const settle = (lastError: WorkerStartError | undefined): void => {
    if (workers.some((_, slot) => !everReady.has(slot) && !givenUp.has(slot))) return
    if (everReady.size > 0) settleReady?.resolve()
    else if (lastError !== undefined) settleReady?.reject(lastError)
  }
  const watch = (slot: number): void => {
    const child = workers[slot]!
    let isReady = false
    // a worker forked early says first that it waits for its settings (app/worker-prefork.ts)
    const onMessage = (message: unknown): void => {
      if ((message as { ready?: boolean } | null)?.ready !== true) return
      child.off('message', onMessage)
      isReady = true
      startFailures[slot] = 0
      everReady.add(slot)
      settle(undefined)
    }
    child.on('message', onMessage)
    child.once('exit', (code, signal) => {
      child.off('message', onMessage)
      if (stopping) return
      // a warm worker is not this process's child: its socket closing tells it is gone, not how
      const exit = signal ?? (code === null ? 'exit status unknown' : `code ${code}`)
      if (!isReady && ++startFailures[slot]! >= MAX_START_TRIES) {
        givenUp.add(slot)
        const live = workers.length - givenUp.size
        const error = new WorkerStartError(`worker ${slot} exited during start-up ${MAX_START_TRIES} times in a row (last: ${exit}); see ${logOf(slot)}`)
        opts.onNotice?.(`${error.message}; not started again${live > 0 ? `: the run goes on with ${live} of ${workers.length} worker processes` : ''}`)
        if (live === 0) reportLost?.(new WorkerStartError(`no worker process is left: ${error.message}`))
        settle(error)
        return
      }
      const next = spawnWorker(slot)
      workers[slot] = next
      opts.onNotice?.(
        isReady
          ? `worker ${slot} died (${exit}); started again as pid ${next.pid ?? 0}`
          : `worker ${slot} exited during start-up (${exit}); started again as pid ${next.pid ?? 0} (try ${startFailures[slot]! + 1} of ${MAX_START_TRIES}); see ${logOf(slot)}`,
      )
      watch(slot)
    })
  }
  workers.forEach((_, slot) => watch(slot))
  return {
    layout,
    workers,
    warm,
    ready,
    lost,
    pids: () => workers.filter((child) => child.exitCode === null && child.signalCode === null).map((child) => child.pid ?? 0),
    async stop({ keepWarm = 0 } = {}) {
      stopping = true
      await Promise.all(
        workers.map(
          (child, slot) =>
            new Promise<void>((resolve) => {
              if (child.exitCode !== null || child.signalCode !== null) return resolve()
              const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
              const gone = (): void => {
                clearTimeout(timer)
                resolve()
              }
              child.once('exit', gone)
              if (child instanceof WarmWorker) {
                if (!(child.slot < keepWarm && child.finishRun())) child.kill('SIGTERM')
                return
              }
              // a worker forked for the run stays as its slot's warm worker: it hangs up once it listens there
              if (slot < keepWarm && child.spawnargs.includes(WARM_SLOT_ARG) && child.connected) {
                child.once('disconnect', () => {
                  child.unref()
                  gone()
                })
                child.send({ forgeWorkerRunDone: true })
                return
              }
              child.kill('SIGTERM')
            }),
        ),
      )
    },
  }
}
