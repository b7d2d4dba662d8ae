/**
 * Worker processes forked before their run is planned (issue 15). A worker spends ~0.45 s loading its
 * code before it can do anything; `forge run` spends about as long loading its own and planning. So
 * the `run` command forks its workers first (into the slots earlier runs of this FORGE_HOME used) (cli/hooks/init.ts, before oclif loads the command) with
 * `--await-settings`: they load their code on the other core and wait. The worker pool
 * (app/worker-pool.ts) then hands them their settings over IPC instead of forking new ones. A
 * worker nobody claims exits when `forge run` does (its IPC channel closes), or is stopped with
 * `discardPreforked`. Kept free of heavy imports: the init hook loads this before anything else.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { nodeFlagsFor } from '../stack/node-flags.js'
import { distEntry } from '../stack/paths.js'
import { claimWarmWorker, claimWarmWorkers, WARM_LOADING_WAIT_MS, WARM_SLOT_ARG, WarmWorker, warmSocketOfLog, warmWorkerLoading } from '../stack/warm-workers.js'

/** A worker process of a local run: forked by this process, or a warm worker it claimed (stack/warm-workers.ts). */
export type WorkerProcess = ChildProcess | WarmWorker

/** the argument that makes a worker process wait for its settings (workers/worker-process.ts) */
export const AWAIT_SETTINGS_ARG = '--await-settings'

/** the message that gives a waiting worker its whole environment and working directory */
export interface WorkerSettingsMessage {
  forgeWorkerSettings: Record<string, string>
  cwd: string
}

const waiting: WorkerProcess[] = []
/** slots from..from+slots-1, whose warm workers were still loading when the run started: claimed once they listen */
let loading: { from: number; slots: number; claims: Promise<(WarmWorker | undefined)[]> } | undefined
/** resolves when a waiting worker has loaded its code and listens for its settings */
const listening = new WeakMap<ChildProcess, Promise<void>>()

/**
 * Forks one worker process, its output appended to `logFile`, in its own process group (a terminal's
 * Ctrl-C is for forge run, which cancels the run first); waiting for its settings when `awaitSettings`.
 * It is told its slot's warm socket (WARM_SLOT_ARG): at the end of its run it may wait there as the
 * slot's warm worker (`WorkerPool.stop({ keepWarm })`).
 */
export function forkWorkerProcess(logFile: string, env: NodeJS.ProcessEnv, awaitSettings: boolean): ChildProcess {
  mkdirSync(dirname(logFile), { recursive: true })
  const fd = openSync(logFile, 'a')
  const warmSocket = warmSocketOfLog(logFile)
  const args = [...(awaitSettings ? [AWAIT_SETTINGS_ARG] : []), ...(warmSocket !== undefined ? [WARM_SLOT_ARG, warmSocket] : [])]
  try {
    return fork(distEntry('workers/worker-process.js'), args, { stdio: ['ignore', fd, fd, 'ipc'], detached: true, env, execArgv: [...process.execArgv, ...nodeFlagsFor('worker', process.execArgv, env)] })
  } finally {
    closeSync(fd)
  }
}

/**
 * Forks worker processes for slots 0…count-1 that have none waiting yet (returns the new ones); they
 * hold nothing of this process open. Only into a slot whose log a run has written before: a run that
 * is then refused (a bad flag, an unknown suite) must leave a new FORGE_HOME as empty as it found it.
 * Slots whose warm worker is still loading are left to it (`settleLoadingClaims`).
 */
export function preforkWorkers(count: number, logDir: string): ChildProcess[] {
  const forked: ChildProcess[] = []
  for (let slot = waiting.length + (loading?.slots ?? 0); slot < count; slot++) {
    const logFile = join(logDir, `worker-${slot}.log`)
    if (!existsSync(logFile)) break
    const child = forkWaiting(logFile)
    waiting.push(child)
    forked.push(child)
  }
  return forked
}

/** A worker forked to wait for its settings, holding nothing of this process open. */
function forkWaiting(logFile: string): ChildProcess {
  const child = forkWorkerProcess(logFile, process.env, true)
  // a message sent before the worker listens would be lost: it says when it listens
  listening.set(
    child,
    new Promise<void>((resolve) => {
      const heard = (message: unknown): void => {
        if ((message as { awaitingSettings?: boolean } | null)?.awaitingSettings !== true) return
        child.off('message', heard)
        resolve()
      }
      child.on('message', heard)
    }),
  )
  // an unclaimed worker must not keep forge run alive
  child.unref()
  child.channel?.unref()
  forgetOnExit(child)
  return child
}

/** A waiting worker that exits leaves the line. */
function forgetOnExit(child: WorkerProcess): void {
  child.once('exit', () => {
    const at = waiting.indexOf(child)
    if (at >= 0) waiting.splice(at, 1)
  })
}

/**
 * Claims the warm workers earlier runs of `home` left (stack/warm-workers.ts) for the first of
 * `count` slots; they wait with the workers forked early. Returns how many were claimed. The slots
 * after them whose warm worker is still loading (the run before ended moments ago) are claimed in the
 * background while this run loads and plans (`settleLoadingClaims`), not forked: a second process
 * would load beside it on the same cores and be ready no sooner.
 */
export async function adoptWarmWorkers(home: string, count: number): Promise<number> {
  if (waiting.length > 0 || loading !== undefined) return 0
  const claimed = await claimWarmWorkers(home, count)
  for (const worker of claimed) waiting.push(adoptable(worker))
  const from = claimed.length
  let slots = 0
  while (from + slots < count && warmWorkerLoading(home, from + slots)) slots++
  if (slots > 0) loading = { from, slots, claims: Promise.all(Array.from({ length: slots }, (_, i) => claimWarmWorker(home, from + i, WARM_LOADING_WAIT_MS))) }
  return claimed.length
}

/** A claimed warm worker as a waiting one: it must not keep forge run alive until it is taken. */
function adoptable(worker: WarmWorker): WarmWorker {
  worker.unref()
  forgetOnExit(worker)
  return worker
}

/**
 * Waits for the claims of warm workers that were loading when the run started (at most
 * WARM_LOADING_WAIT_MS) and puts them in their slots; a slot whose claim failed gets a forked worker.
 */
export async function settleLoadingClaims(logDir: string): Promise<void> {
  const pending = loading
  if (pending === undefined) return
  const workers = await pending.claims
  // discarded meanwhile (the run failed before its workers started)
  if (loading !== pending) return
  loading = undefined
  const placed = workers.map((worker, i) => (worker === undefined ? forkWaiting(join(logDir, `worker-${pending.from + i}.log`)) : adoptable(worker)))
  waiting.splice(pending.from, 0, ...placed)
}

/** The waiting workers, now the caller's (they keep this process alive again, as forked workers do). */
export function takePreforked(): WorkerProcess[] {
  const taken = waiting.splice(0).filter((child) => child.exitCode === null && child.signalCode === null && child.connected)
  for (const child of taken) {
    child.ref()
    if (!(child instanceof WarmWorker)) child.channel?.ref()
  }
  return taken
}

/** Lets a waiting worker go: a forked one is stopped, a warm one waits for the next run. */
export function discardWorker(child: WorkerProcess): void {
  if (child instanceof WarmWorker) child.release()
  else child.kill('SIGTERM')
}

/** Lets go of the workers nobody claimed (a run that failed before its workers started). */
export function discardPreforked(): void {
  for (const child of waiting.splice(0)) discardWorker(child)
  const pending = loading
  loading = undefined
  void pending?.claims.then((workers) => {
    for (const worker of workers) worker?.release()
  })
}

/**
 * Hands a waiting worker its environment once it listens; it starts as a worker forked with that
 * environment would. A worker that died meanwhile is the caller's to notice (its exit).
 */
export function sendWorkerSettings(child: WorkerProcess, env: NodeJS.ProcessEnv): void {
  const settings: Record<string, string> = {}
  for (const [name, value] of Object.entries(env)) if (value !== undefined) settings[name] = value
  const message: WorkerSettingsMessage = { forgeWorkerSettings: settings, cwd: process.cwd() }
  // a warm worker said hello before it was claimed: it listens
  const listens = child instanceof WarmWorker ? Promise.resolve() : (listening.get(child) ?? Promise.resolve())
  void listens.then(() => {
    if (child.connected) child.send(message)
  })
}

/**
 * How many worker processes `forge run <argv>` will start here, read from its raw arguments before
 * oclif parses them; undefined when it starts none or it is not worth guessing (help, a dry run,
 * `--workers 0`, a value that is not a whole number). A wrong guess costs a process that exits unused.
 */
export function preforkCount(argv: readonly string[], maxProcesses: number): number | undefined {
  let workers = 1
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === '--help' || arg === '-h' || arg === '--dry-run' || arg === '--version') return undefined
    if (arg === '--workers' || arg.startsWith('--workers=')) {
      const value = arg === '--workers' ? argv[i + 1] : arg.slice('--workers='.length)
      if (value === undefined || !/^\d+$/.test(value)) return undefined
      workers = Number(value)
    }
  }
  if (workers === 0) return undefined
  return Math.max(1, Math.min(workers, maxProcesses))
}
