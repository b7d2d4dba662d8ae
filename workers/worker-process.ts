/**
 * Entry point of a worker child process; configured through FORGE_* variables (config/). The
 * composition root of the process: the only file of workers/ that reaches into app/ and stack/.
 */
import { chmodSync, mkdirSync, readFileSync, rmSync, statSync, unwatchFile, watchFile, writeFileSync } from 'node:fs'
import { createServer, type Socket } from 'node:net'
import { dirname } from 'node:path'
import { lazySweepActivities } from '../app/sweep-activities-lazy.js'
import { liveOtlpOf } from '../app/otlp-url.js'
import { readSetting, resolveConfig } from '../config/index.js'
import { ConfigError } from '../core/errors.js'
import { processTaint } from '../engine/process-taint.js'
import { temporalConnectOptions } from '../stack/temporal-connection.js'
import { buildFiles, jsonLine, onJsonLines, WARM_SLOT_ARG, WARM_SOCKET_ARG, warmPidPath, workerBuildStamp } from '../stack/warm-workers.js'
import type { JitWarmup, JitWarmupReport } from '../app/jit-warmup.js'
import { attemptsRunInThisProcess } from './activities.js'
import { prepareWorkflowWorker, retireWorkflows, runWorker, type PreparedWorkflows, type WorkerOptions } from './worker-main.js'

type Channel = Pick<WorkerOptions, 'report' | 'parentGone' | 'preparedWorkflows' | 'shutdown' | 'keepWorkflows'>

/** a warm worker bigger than this once its run is over exits instead of waiting for the next run */
export const WARM_WORKER_MAX_RSS = 1024 * 1024 * 1024

/**
 * Whether a worker that has served `runs` runs may wait for another: FORGE_WARM_WORKER_RUNS,
 * WARM_WORKER_MAX_RSS, and no agent code ran inside it (engine/process-taint.ts) — the next run's
 * attempts must not share a process some earlier agent could have altered.
 */
const mayServeAgain = (runs: number): boolean => runs < readSetting('warmWorkerRuns') && process.memoryUsage().rss <= WARM_WORKER_MAX_RSS && processTaint() === undefined

/** The line a worker that may not serve again says as it exits, after `runs` runs. */
function exitingLine(who: string, runs: number): string {
  const taint = processTaint()
  const why = taint !== undefined ? `its process is tainted (${taint})` : `RSS ${Math.round(process.memoryUsage().rss / 2 ** 20)} MiB`
  return `${who}: served ${runs} run(s), ${why}; exiting for a fresh one`
}

/** The `shutdown` of a run its forge run ends by saying it is done (`forgeWorkerRunDone`), and whether it has. */
function runDoneSignal(): { shutdown: Promise<void>; runDone: () => void; isDone: () => boolean } {
  let done = false
  let runDone = (): void => undefined
  const shutdown = new Promise<void>((resolve) => (runDone = () => ((done = true), resolve())))
  return { shutdown, runDone: () => runDone(), isDone: () => done }
}

/** Takes a run's settings: its whole environment and (from a warm worker's claimer) its working directory. */
function applySettings(settings: Record<string, string>, cwd: unknown): void {
  for (const name of Object.keys(process.env)) if (!(name in settings)) delete process.env[name]
  Object.assign(process.env, settings)
  if (typeof cwd === 'string') process.chdir(cwd)
}

/** When a build file was last written (0: missing). */
function mtimeOf(file: string): number {
  try {
    return statSync(file).mtimeMs
  } catch {
    return 0
  }
}

/** The build this process loaded: each build file's mtime as the process started. */
const loadedBuild = new Map(buildFiles().map((file) => [file, mtimeOf(file)]))
/** What it runs, as a claimer compares it: its Node, flags and build as it started, not as the files are now */
const loadedStamp = workerBuildStamp()

/** A forked worker's settings are its environment: at once, or (forked early, `--await-settings`) over IPC once its run is planned. */
function start(): void {
  const socketAt = process.argv.indexOf(WARM_SOCKET_ARG)
  if (socketAt >= 0) return awaitRunOnSocket(process.argv[socketAt + 1] ?? '')
  if (!process.argv.includes('--await-settings')) return serveForked()
  // its forge run went away before it needed this worker
  const orphaned = (): never => process.exit(0)
  process.once('disconnect', orphaned)
  process.once('message', (message: { forgeWorkerSettings?: Record<string, string>; cwd?: string } | null) => {
    const settings = message?.forgeWorkerSettings
    if (settings === undefined) process.exit(2)
    process.off('disconnect', orphaned)
    applySettings(settings, message?.cwd)
    serveForked()
  })
  // forge run may have gone while this process loaded its code (the event came before the listener)
  if (!process.connected) orphaned()
  // forge run sends the settings only once this is heard: a message sent before the listener would be lost
  process.send?.({ awaitingSettings: true })
  console.error(`worker ${process.pid} forked early: loaded, waiting for its run's settings`)
}

/**
 * A worker forked for a run serves it; when its forge run then says over IPC that the run is done
 * (`forgeWorkerRunDone`, `WorkerPool.stop({ keepWarm })`), it stays as its slot's warm worker on the
 * socket it was forked with (WARM_SLOT_ARG), compiled hot by that run, and hangs up the IPC channel
 * once it listens there; on a signal, or when its forge run went away, it exits as before.
 */
function serveForked(): void {
  const at = process.argv.indexOf(WARM_SLOT_ARG)
  const warmSocket = at >= 0 ? process.argv[at + 1] : undefined
  if (warmSocket === undefined || !process.connected) return void main()
  const { shutdown, runDone, isDone } = runDoneSignal()
  const onMessage = (message: unknown): void => {
    if ((message as { forgeWorkerRunDone?: boolean } | null)?.forgeWorkerRunDone === true) runDone()
  }
  process.on('message', onMessage)
  // listening for it must not keep the worker alive once its run is over, as the channel did not before
  process.channel?.unref()
  const waitsAgain = (): boolean => isDone() && process.connected && mayServeAgain(1)
  // its workflow worker polls on, compiled hot by this run, for the next run it serves as a warm worker
  void main({ shutdown, keepWorkflows: waitsAgain }).then(async (keptWorkflows) => {
    process.off('message', onMessage)
    if (!waitsAgain()) {
      if (keptWorkflows !== undefined) await retireWorkflows(keptWorkflows)
      // its forge run wanted it to stay, but it may not
      if (isDone() && process.connected) console.error(exitingLine(`worker ${process.pid}`, 1))
      return
    }
    console.error(`worker ${process.pid}: served its run; now the warm worker of ${warmSocket}${keptWorkflows?.running !== undefined ? ', its workflow worker polling on' : ''}`)
    awaitRunOnSocket(warmSocket, 1, () => process.disconnect(), keptWorkflows)
  })
}

/** Removes a warm worker's pid file once it is a run's (`stack down` stops only waiting ones), unless it names another. */
function forgetPidFile(file: string): void {
  try {
    if (readFileSync(file, 'utf8').trim() === String(process.pid)) rmSync(file, { force: true })
  } catch {
    // none
  }
}

/**
 * A warm worker (stack/warm-workers.ts): loaded, it waits on a unix socket for the next run of its
 * FORGE_HOME, one connection at a time, until claimed, told to stop, or idle for FORGE_WARM_WORKER_IDLE.
 * Claimed, it serves the run; when its claimer then says the run is done (`forgeWorkerRunDone`) it
 * waits on the socket again for the run after — with its code loaded and compiled hot by the run
 * before — unless it has served FORGE_WARM_WORKER_RUNS runs or outgrown WARM_WORKER_MAX_RSS; it
 * closes its claimer's connection once it listens again (or exits), so the claimer leaves no other
 * warm worker for the slot. `served` counts the runs it served before.
 */
function awaitRunOnSocket(path: string, served = 0, listening: () => void = () => undefined, kept?: PreparedWorkflows): void {
  const idleMs = readSetting('warmWorkerIdle') * 1000
  const server = createServer()
  let quitting = false
  const quit = (code = 0): void => {
    if (quitting) return
    quitting = true
    // closing the server removes its socket file: the slot is free for another warm worker
    server.close()
    forgetPidFile(warmPidPath(path))
    // a workflow worker still polling from the run before stops first (at most a few seconds: it may wait on its server)
    const stopping = kept?.running !== undefined ? retireWorkflows(kept) : Promise.resolve()
    void Promise.race([stopping, new Promise((resolve) => setTimeout(resolve, 3_000))]).finally(() => process.exit(code))
  }
  const waitIdle = (): NodeJS.Timeout =>
    setTimeout(() => {
      console.error(`warm worker ${process.pid}: no run came for ${idleMs / 1000} s; exiting`)
      quit()
    }, idleMs)
  let idle: NodeJS.Timeout | undefined = waitIdle()
  // a new build (npm run build, an upgrade): its runs are not this worker's, and its workflow worker,
  // polling between runs, must not take their workflow tasks with this build's code
  // compared with the build this process loaded, not with the file as the watch first saw it: a build
  // written between a run's end and this watch's first look is a new one too
  const built = [...loadedBuild.keys()]
  const onBuild = (): void => {
    if (built.every((file) => mtimeOf(file) === loadedBuild.get(file))) return
    console.error(`warm worker ${process.pid}: a new build is there (${built.join(', ')}); exiting`)
    quit()
  }
  onBuild()
  if (quitting) return
  for (const file of built) watchFile(file, { persistent: false, interval: 250 }, onBuild)
  const onSignal = (): void => quit()
  process.once('SIGTERM', onSignal)
  process.once('SIGINT', onSignal)
  // one claimer at a time, the others in line (each gives up after its own timeout)
  const line: Socket[] = []
  let serving: Socket | undefined
  let claimed = false
  let runDone = (): void => undefined
  const serveNext = (): void => {
    serving = line[0]
    if (serving === undefined) {
      idle = waitIdle()
      return
    }
    const socket = serving
    socket.write(jsonLine({ warmWorker: { pid: process.pid, build: loadedStamp } }))
    onJsonLines(socket, (message) => {
      if (claimed) {
        if (message['forgeWorkerRunDone'] === true) runDone()
        return
      }
      if (message['forgeWorkerStop'] === true) return quit()
      const settings = message['forgeWorkerSettings']
      if (typeof settings !== 'object' || settings === null) return void socket.destroy()
      claimed = true
      const warmupStopped = stopWarmup()
      for (const file of built) unwatchFile(file, onBuild)
      // this worker is the run's now: the others in line go, and the slot is free for the next warm worker
      server.close()
      for (const other of line.splice(0)) if (other !== socket) other.destroy()
      process.off('SIGTERM', onSignal)
      process.off('SIGINT', onSignal)
      forgetPidFile(warmPidPath(path))
      console.error(`warm worker ${process.pid} claimed by a run`)
      // the run's connection must not keep the worker alive once it is done, as an IPC channel would not
      socket.unref()
      const parentGone = new Promise<void>((resolve) => socket.once('close', () => resolve()))
      const signal = runDoneSignal()
      runDone = signal.runDone
      const { shutdown, isDone } = signal
      const runs = served + 1
      // told its run is done by a claimer still there, and not served enough: it waits for the next run
      const waitsAgain = (): boolean => isDone() && !socket.destroyed && mayServeAgain(runs)
      // the run's settings (its environment, its working directory) once no warm-up attempt is left running
      void warmupStopped.then(() => applySettings(settings as Record<string, string>, message['cwd'])).then(() => main({
        report: (reply) => void socket.write(jsonLine(reply)),
        parentGone,
        shutdown,
        // its workflow worker polls on, compiled hot, for the next run
        keepWorkflows: waitsAgain,
        ...(preparing !== undefined ? { preparedWorkflows: preparing } : {}),
      })).then(async (keptWorkflows) => {
        if (waitsAgain()) {
          console.error(`warm worker ${process.pid}: served ${runs} run(s); waiting again${keptWorkflows?.running !== undefined ? ', its workflow worker polling on' : ''}`)
          return awaitRunOnSocket(path, runs, () => socket.destroy(), keptWorkflows)
        }
        if (keptWorkflows !== undefined) await retireWorkflows(keptWorkflows)
        // a claimer that died, a signal: it goes as a forked one does; one that served enough says so
        if (isDone() && !socket.destroyed) console.error(exitingLine(`warm worker ${process.pid}`, runs))
        socket.destroy()
      })
    })
  }
  server.on('connection', (socket: Socket) => {
    socket.on('error', () => undefined)
    if (claimed || line.length >= 16) return void socket.destroy()
    clearTimeout(idle)
    line.push(socket)
    socket.once('close', () => {
      if (claimed) return
      const at = line.indexOf(socket)
      if (at >= 0) line.splice(at, 1)
      // a claimer that went without settings (a refused run, a timeout): the next in line, or wait again
      if (socket === serving) serveNext()
    })
    if (serving === undefined) serveNext()
  })
  server.on('error', (error: NodeJS.ErrnoException) => {
    // the slot has its warm worker already (its socket file is the lock)
    console.error(error.code === 'EADDRINUSE' ? `warm worker ${process.pid}: ${path} is taken; exiting` : `warm worker ${process.pid}: ${error.message}`)
    quit()
  })
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
  // its workflow worker, made while it waits (after it listens: a claim need not wait for it)
  let preparing: Promise<PreparedWorkflows | undefined> | undefined
  // then its JIT warm-up, until a run claims it (app/jit-warmup.ts)
  let warmup: JitWarmup | undefined
  const stopWarmup = async (): Promise<void> => {
    const running = warmup
    warmup = undefined
    if (running === undefined) return
    const report = await running.stop()
    if (report.stopped) console.error(`warm worker ${process.pid}: JIT warm-up stopped for the run after ${report.attempts} attempt(s) in ${Math.round(report.ms)} ms`)
  }
  server.listen(path, () => {
    chmodSync(path, 0o600)
    // waiting again after a run: its pid file lets `forge stack down` stop it as it stops a new one
    if (served > 0) writeFileSync(warmPidPath(path), `${process.pid}\n`, { mode: 0o600 })
    console.error(served > 0 ? `warm worker ${process.pid} waiting on ${path} for the next run` : `warm worker ${process.pid} loaded: waiting on ${path} for the next run`)
    listening()
    preparing = kept !== undefined ? Promise.resolve(kept) : prepareWarmWorkflows()
    const cancelled = (): boolean => claimed || quitting
    void preparing.then(async (workflows) => {
      const jit = await warmUp(cancelled, (started) => (warmup = started))
      await jit?.done
      // then its workflow worker, when it polls between runs (app/workflow-warmup.ts)
      if (workflows?.running !== undefined && !cancelled()) await warmUpWorkflows(workflows)
    })
  })
}

/** the process ran its workflow warm-up already: once is enough (its workflow worker stays for its next runs) */
let workflowsWarmed = false

/**
 * Runs one warm-up workflow on a waiting warm worker's polling workflow worker (app/workflow-warmup.ts),
 * once per process and when FORGE_WARM_WORKER_WARMUP is not 0; says how it went.
 */
async function warmUpWorkflows(workflows: PreparedWorkflows): Promise<void> {
  if (workflowsWarmed) return
  try {
    if (readSetting('warmWorkerWarmup') === 0) return
  } catch {
    return
  }
  workflowsWarmed = true
  try {
    const config = resolveConfig()
    const { warmUpWorkflowWorker } = await import('../app/workflow-warmup.js')
    const report = await warmUpWorkflowWorker(workflows.connection, { namespace: config.temporal.namespace, taskQueue: config.temporal.taskQueue })
    console.error(`warm worker ${process.pid}: workflow warm-up ${report.workflow_id} scheduled ${report.scheduled} batch activities nobody runs, in ${Math.round(report.ms)} ms`)
  } catch (error) {
    console.error(`warm worker ${process.pid}: no workflow warm-up (${(error as Error).message}); the next run compiles its workflow code itself`)
  }
}

/**
 * Starts a waiting warm worker's JIT warm-up (FORGE_WARM_WORKER_WARMUP attempts in all), hands it to
 * `started` and says how it ended; none once `cancelled()` (a run claimed the worker, or it is stopping),
 * or when the process has run enough attempts already. Loaded only then: a worker's start-up does not
 * load the planner it needs.
 */
async function warmUp(cancelled: () => boolean, started: (warmup: JitWarmup) => void): Promise<JitWarmup | undefined> {
  if (cancelled()) return undefined
  let target: number
  try {
    target = readSetting('warmWorkerWarmup')
  } catch (error) {
    console.error(`warm worker ${process.pid}: no JIT warm-up (${(error as Error).message})`)
    return undefined
  }
  if (target === 0) return undefined
  // a worker compiled hot by the runs it served does not load the planner for nothing
  if (attemptsRunInThisProcess() >= target) {
    console.error(`warm worker ${process.pid}: no JIT warm-up: it has run ${attemptsRunInThisProcess()} attempt(s) (FORGE_WARM_WORKER_WARMUP ${target})`)
    return undefined
  }
  const { startJitWarmup } = await import('../app/jit-warmup.js')
  // claimed (or stopping) while the planner loaded: the run has the process now
  if (cancelled()) return undefined
  // the NATS server of the run that left it (its environment names it): the warm-up publishes onto its warm-up stream
  let natsUrl: string | undefined
  try {
    natsUrl = readSetting('natsUrl')
  } catch {
    natsUrl = undefined
  }
  const warmup = startJitWarmup(target, { natsUrl })
  if (warmup === undefined) return undefined
  started(warmup)
  console.error(`warm worker ${process.pid}: JIT warm-up while it waits, ${warmup.planned} mock attempt(s) (FORGE_WARM_WORKER_WARMUP ${target} in all)`)
  void warmup.done.then((report) => {
    if (report.error !== undefined) console.error(`warm worker ${process.pid}: JIT warm-up failed after ${report.attempts} attempt(s) (${report.error}); the next run compiles the code itself`)
    else if (!report.stopped) console.error(`warm worker ${process.pid}: JIT warm-up ran ${report.attempts} attempt(s) in ${Math.round(report.ms)} ms (${describePublished(report.published)})`)
  })
  return warmup
}

/** Where a JIT warm-up's messages went, as its log line says it. */
function describePublished(published: JitWarmupReport['published']): string {
  return published.stream !== undefined
    ? `${published.messages} message(s) published to the warm-up stream ${published.stream}, nothing stored`
    : `nothing published: no warm-up stream (${published.why})`
}

/**
 * The workflow worker a warm worker's next run will most likely need: on the Temporal server,
 * namespace and task queue the run that left it used (its environment names them). A run elsewhere
 * does not use it (workers/worker-main.ts compares); none when it cannot be made.
 */
function prepareWarmWorkflows(): Promise<PreparedWorkflows | undefined> {
  let config: ReturnType<typeof resolveConfig>
  try {
    config = resolveConfig()
  } catch {
    return Promise.resolve(undefined)
  }
  const address = config.temporal.address
  if (address === undefined || config.worker.role === 'judge') return Promise.resolve(undefined)
  const { address: _address, ...temporalConnection } = temporalConnectOptions(address)
  return prepareWorkflowWorker({ temporalAddress: address, namespace: config.temporal.namespace, taskQueue: config.temporal.taskQueue, temporalConnection }).catch((error: unknown) => {
    console.error(`warm worker ${process.pid}: no workflow worker prepared (${(error as Error).message}); its run creates one`)
    return undefined
  })
}

/** Serves a run (or, on a fleet, every run) until the worker stops; resolves once it has, everything it opened closed. */
function main(channel: Channel = {}): Promise<PreparedWorkflows | undefined> {
  try {
    const config = resolveConfig()
    const { address } = config.temporal
    if (address === undefined || config.natsUrl === undefined) {
      throw new ConfigError(`${address === undefined ? 'FORGE_TEMPORAL_ADDRESS' : 'FORGE_NATS_URL'} is not set: a worker process needs the Temporal and NATS servers of its run`)
    }
    const { address: _address, ...temporalConnection } = temporalConnectOptions(address)
    const role = config.worker.role
    const { concurrency, attemptLanes } = config.worker
    if (attemptLanes > concurrency) {
      throw new ConfigError(`FORGE_WORKER_ATTEMPT_LANES (${attemptLanes}) must not exceed FORGE_WORKER_CONCURRENCY (${concurrency}): a worker reserves its attempt slots a batch's lanes at a time`)
    }
    return runWorker({
      temporalAddress: address,
      natsUrl: config.natsUrl,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
      ...(config.worker.id !== undefined ? { workerId: config.worker.id } : {}),
      ...(config.clickhouseUrl !== undefined ? { clickhouseUrl: config.clickhouseUrl } : {}),
      concurrency,
      attemptLanes,
      exitWithParent: config.worker.exitWithParent,
      ...(config.worker.runId !== undefined ? { runId: config.worker.runId } : {}),
      logLevel: config.logLevel,
      attempts: role !== 'judge',
      extraActivities: lazySweepActivities(),
      temporalConnection,
      ...(config.healthPort !== undefined ? { healthPort: config.healthPort } : {}),
      ...(config.otlpUrl !== undefined ? { otlp: liveOtlpOf(config.otlpUrl)! } : {}),
      shutdownGraceMs: config.worker.shutdownGraceMs,
      ...channel,
      // judge activities: their own queue, FORGE_JUDGE_RATE activities per second across it
      judge:
        config.judge.worker && role !== 'attempts' ? { taskQueue: config.judge.taskQueue, activitiesPerSecond: config.judge.rate, concurrency: config.judge.concurrency } : false,
    }).catch((error: unknown) => {
      console.error(error)
      process.exit(1)
    })
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error
    console.error(error.message)
    process.exit(error.exitCode)
  }
}

start()
