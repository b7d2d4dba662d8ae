/**
 * The workflows of a local run, served from the `forge run` process as well as from its workers
 * (issue 15). A worker process is ready to take attempts ~0.6 s after it is forked; the planning
 * steps before the first attempt (RunWorkflow's first task, the shard workflows' first tasks) then
 * waited for it, and so did the ~150 ms it takes a worker to load the workflow bundle. `forge run` is
 * idle while its workers start, so it loads the bundle and answers those first workflow tasks itself,
 * and the attempts are already scheduled when the first worker polls.
 *
 * Only an optimisation: the worker processes still serve the same workflows on the same task queue,
 * so a run survives the CLI (its workflows move to a worker after the short sticky timeout below), and
 * a host that fails to start costs nothing but the time it would have saved.
 */
import { appendFileSync, existsSync, mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { distEntry } from '../stack/paths.js'
import { temporalConnectOptions } from '../stack/temporal-connection.js'

export interface WorkflowHostOptions {
  temporalAddress: string
  namespace: string
  taskQueue: string
  identity: string
  /** the host's own errors go here (the run does not depend on it) */
  logFile: string
}

export interface WorkflowHost {
  /** resolves once the host polls its task queue, or rejects when it could not start */
  ready: Promise<void>
  /** waits for the workflow tasks in flight, then closes its connection; never throws */
  stop(): Promise<void>
}

/** a workflow task given to this process and not started in this long moves to another worker */
const STICKY_TIMEOUT = '2s'

let runtimeQuieted = false

/** Starts serving the run's workflows from this process (in the background: nothing waits for it). */
export function hostWorkflows(opts: WorkflowHostOptions): WorkflowHost {
  let stopped = false
  let stopWorker: (() => Promise<void>) | undefined
  const log = (message: string): void => {
    try {
      mkdirSync(dirname(opts.logFile), { recursive: true })
      appendFileSync(opts.logFile, `${new Date().toISOString()} ${message}\n`)
    } catch {
      // a log that cannot be written loses only the host's own messages
    }
  }
  const ready = (async () => {
    const { DefaultLogger, NativeConnection, Runtime, Worker } = await import('@temporalio/worker')
    if (!runtimeQuieted) {
      runtimeQuieted = true
      // the SDK's own log lines would land in the CLI's output; only its errors are kept, in the log file
      try {
        Runtime.install({
          logger: new DefaultLogger('ERROR', (entry) => log(`${entry.level} ${entry.message} ${JSON.stringify(entry.meta ?? {})}`)),
          // the native core's lines too (they would go to stderr)
          telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' }, forward: {} } },
          // Ctrl-C is forge run's to handle (it cancels the run first), not the SDK's
          shutdownSignals: [],
        })
      } catch {
        // a runtime is already installed in this process (an embedding program's): keep it
      }
    }
    const bundle = distEntry('workflow-bundle.js')
    if (!existsSync(bundle)) throw new Error(`no workflow bundle at ${bundle} (npm run build)`)
    const connection = await NativeConnection.connect(temporalConnectOptions(opts.temporalAddress))
    try {
      const worker = await Worker.create({
        connection,
        namespace: opts.namespace,
        taskQueue: opts.taskQueue,
        identity: opts.identity,
        workflowBundle: { codePath: bundle },
        maxConcurrentWorkflowTaskExecutions: 40,
        stickyQueueScheduleToStartTimeout: STICKY_TIMEOUT,
      })
      const running = worker.run()
      let stopping: Promise<void> | undefined
      stopWorker = () =>
        (stopping ??= (async () => {
          if (worker.getState() === 'RUNNING') worker.shutdown()
          await running.catch(() => undefined)
          await connection.close()
        })())
      running.catch((error: unknown) => log(`the workflow host failed: ${String(error)}`))
      if (stopped) await stopWorker()
    } catch (error) {
      await connection.close()
      throw error
    }
  })()
  ready.catch((error: unknown) => log(`the workflow host did not start: ${String(error)}`))
  return {
    ready,
    async stop() {
      stopped = true
      await ready.catch(() => undefined)
      await stopWorker?.().catch((error: unknown) => log(`stopping the workflow host: ${String(error)}`))
    },
  }
}

/** The host of a local run: its identity and log file. */
export function runWorkflowHost(opts: Omit<WorkflowHostOptions, 'identity' | 'logFile'> & { runId: string; logDir: string }): WorkflowHost {
  return hostWorkflows({ ...opts, identity: `${opts.runId}-cli`, logFile: join(opts.logDir, 'cli-workflows.log') })
}
