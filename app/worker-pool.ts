/**
 * The worker processes of one `forge run --workers N`. Each runs in its own process group, so a
 * Ctrl-C in the terminal (SIGINT to the whole foreground group) reaches only `forge run`, which
 * cancels the run and then stops its workers. A worker that dies is started again in its slot
 * (issue 12). When `forge run` itself dies, its workers serve its run to the end, then exit.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { closeSync, mkdirSync, openSync } from 'node:fs'
import { join } from 'node:path'
import { settingsEnv } from '../config/index.js'
import { distEntry } from '../stack/paths.js'
import { busAccessEnv } from '../store/bus-auth.js'

export interface WorkerPool {
  /** the live worker of each slot (a restarted worker replaces its predecessor) */
  workers: ChildProcess[]
  /** resolves when every worker said it is ready */
  ready: Promise<void>
  stop(): Promise<void>
}

export interface WorkerPoolOptions {
  count: number
  temporalAddress: string
  natsUrl: string
  namespace: string
  taskQueue: string
  concurrency: number
  logDir: string
  runId: string
  /** a worker died and was started again in its slot */
  onRestart?: (event: { slot: number; pid: number; exit: string }) => void
  /** more environment for the workers (e.g. where the stack's model server is) */
  env?: Record<string, string>
}

export function startWorkerPool(opts: WorkerPoolOptions): WorkerPool {
  mkdirSync(opts.logDir, { recursive: true })
  const entry = distEntry('workers/worker-process.js')
  let stopping = false
  const spawnWorker = (slot: number): ChildProcess => {
    const fd = openSync(join(opts.logDir, `worker-${slot}.log`), 'a')
    try {
      return fork(entry, [], {
        stdio: ['ignore', fd, fd, 'ipc'],
        // its own process group: the terminal's SIGINT is for forge run, which cancels the run first
        detached: true,
        // the rest of the worker's settings (judge, log level) it inherits from this process's environment
        env: {
          ...process.env,
          ...opts.env,
          ...settingsEnv({
            temporalAddress: opts.temporalAddress,
            natsUrl: opts.natsUrl,
            temporalNamespace: opts.namespace,
            taskQueue: opts.taskQueue,
            workerId: `${opts.runId}-w${slot}`,
            workerConcurrency: opts.concurrency,
            exitWithParent: true,
            workerRunId: opts.runId,
          }),
          // its NATS credentials and the results key it signs with (store/bus-auth.ts)
          ...busAccessEnv(opts.natsUrl, 'worker'),
        },
      })
    } finally {
      closeSync(fd)
    }
  }
  const workers = Array.from({ length: opts.count }, (_, slot) => spawnWorker(slot))
  const ready = Promise.all(
    workers.map(
      (child, i) =>
        new Promise<void>((resolve, reject) => {
          child.once('message', () => resolve())
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
    workers,
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
