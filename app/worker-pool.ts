/**
 * The worker processes of one `forge run --workers N`. Each runs in its own process group, so a
 * Ctrl-C in the terminal (SIGINT to the whole foreground group) reaches only `forge run`, which
 * cancels the run and then stops its workers. A worker that dies is started again in its slot
 * (issue 12). When `forge run` itself dies, its workers serve its run to the end, then exit.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { availableParallelism } from 'node:os'
import { readSetting, settingsEnv } from '../config/index.js'
import { busAccessEnv } from '../store/bus-auth.js'
import { WarmWorker } from '../stack/warm-workers.js'
import { discardWorker, forkWorkerProcess, sendWorkerSettings, takePreforked, type WorkerProcess } from './worker-prefork.js'

export interface WorkerPool {
  /** how the requested workers were laid out on this machine: processes × attempt slots each */
  layout: WorkerLayout
  /** the live worker of each slot (a restarted worker replaces its predecessor) */
  workers: WorkerProcess[]
  /** slots whose worker is a warm worker an earlier run left (stack/warm-workers.ts): loaded already */
  warm: number
  /** resolves when every worker said it is ready */
  ready: Promise<void>
  stop(): Promise<void>
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
  /** a worker died and was started again in its slot */
  onRestart?: (event: { slot: number; pid: number; exit: string }) => void
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
  const spawnWorker = (slot: number): WorkerProcess => forkWorkerProcess(join(opts.logDir, `worker-${slot}.log`), envOf(slot), false)
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
  const ready = Promise.all(
    workers.map(
      (child, i) =>
        new Promise<void>((resolve, reject) => {
          // a worker forked early says first that it waits for its settings (app/worker-prefork.ts)
          const onMessage = (message: unknown): void => {
            if ((message as { ready?: boolean } | null)?.ready !== true) return
            child.off('message', onMessage)
            resolve()
          }
          child.on('message', onMessage)
          child.once('exit', (code) => reject(new Error(`worker ${i} exited during start-up (code ${code}); see ${join(opts.logDir, `worker-${i}.log`)}`)))
        }),
    ),
  ).then(() => undefined)
  // once all are up, a worker that dies is replaced: its attempts are retried by Temporal after the heartbeat timeout
  const supervise = (slot: number): void => {
    workers[slot]!.once('exit', (code, signal) => {
      if (stopping) return
      const child = spawnWorker(slot)
      workers[slot] = child
      opts.onRestart?.({ slot, pid: child.pid ?? 0, exit: signal ?? `code ${String(code)}` })
      supervise(slot)
    })
  }
  void ready.then(
    () => workers.forEach((_, slot) => supervise(slot)),
    () => undefined,
  )
  return {
    layout,
    workers,
    warm,
    ready,
    async stop() {
      stopping = true
      await Promise.all(
        workers.map(
          (child) =>
            new Promise<void>((resolve) => {
              if (child.exitCode !== null || child.signalCode !== null) return resolve()
              const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
              child.once('exit', () => {
                clearTimeout(timer)
                resolve()
              })
              child.kill('SIGTERM')
            }),
        ),
      )
    },
  }
}
