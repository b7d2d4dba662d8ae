/** The worker processes of one `forge run --workers N`: children that exit with their parent. */
import { fork, type ChildProcess } from 'node:child_process'
import { closeSync, mkdirSync, openSync } from 'node:fs'
import { join } from 'node:path'
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
        env: {
          ...process.env,
          ...opts.env,
          FORGE_TEMPORAL_ADDRESS: opts.temporalAddress,
          FORGE_NATS_URL: opts.natsUrl,
          FORGE_TEMPORAL_NAMESPACE: opts.namespace,
          FORGE_TASK_QUEUE: opts.taskQueue,
          FORGE_WORKER_ID: `${opts.runId}-w${i}`,
          FORGE_WORKER_CONCURRENCY: String(opts.concurrency),
          FORGE_EXIT_WITH_PARENT: '1',
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
