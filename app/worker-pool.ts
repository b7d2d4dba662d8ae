/** The worker processes of one `forge run --workers N`: children that exit with their parent. */
import { busAccessEnv } from '../store/bus-auth.js'
import { fork, type ChildProcess } from 'node:child_process'
import { closeSync, mkdirSync, openSync } from 'node:fs'
import { join } from 'node:path'
import { settingsEnv } from '../config/index.js'
import { distEntry } from '../stack/paths.js'

export interface WorkerPool {
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
  /** more environment for the workers (e.g. where the stack's model server is) */
  env?: Record<string, string>
}

export function startWorkerPool(opts: WorkerPoolOptions): WorkerPool {
  mkdirSync(opts.logDir, { recursive: true })
  const entry = distEntry('workers/worker-process.js')
  const workers = Array.from({ length: opts.count }, (_, i) => {
    const fd = openSync(join(opts.logDir, `worker-${i}.log`), 'a')
    try {
      return fork(entry, [], {
        stdio: ['ignore', fd, fd, 'ipc'],
        // the rest of the worker's settings (judge, log level) it inherits from this process's environment
        env: {
          ...process.env,
          ...opts.env,
          ...settingsEnv({
            temporalAddress: opts.temporalAddress,
            natsUrl: opts.natsUrl,
            temporalNamespace: opts.namespace,
            taskQueue: opts.taskQueue,
            workerId: `${opts.runId}-w${i}`,
            workerConcurrency: opts.concurrency,
            exitWithParent: true,
          }),
          // its NATS credentials and the results key it signs with (store/bus-auth.ts)
          ...busAccessEnv(opts.natsUrl, 'worker'),
        },
      })
    } finally {
      closeSync(fd)
    }
  })
  const ready = Promise.all(
    workers.map(
      (child, i) =>
        new Promise<void>((resolve, reject) => {
          child.once('message', () => resolve())
          child.once('exit', (code) => reject(new Error(`worker ${i} exited during start-up (code ${code}); see ${join(opts.logDir, `worker-${i}.log`)}`)))
        }),
    ),
  ).then(() => undefined)
  return {
    workers,
    ready,
    async stop() {
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
