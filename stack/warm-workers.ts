/**
 * Warm workers (issue 15): a worker process that has loaded its code (~0.5–1.5 s of CPU) and waits,
 * between runs, for the next local `forge run` of its FORGE_HOME. When a run that started local
 * workers ends, the workers of its first FORGE_WARM_WORKERS slots stay (a claimed warm worker, or one
 * forked for the run with its slot's socket, WARM_SLOT_ARG), and it starts one for a slot left without
 * (`leaveWarmWorkers`); each listens on
 * `FORGE_HOME/warm/worker-<slot>.sock` (directory 0700, socket 0600: only this user) and logs to its
 * slot's `logs/worker-<slot>.log`. The next run's init hook claims them (`claimWarmWorkers`, through
 * app/worker-prefork.ts) and hands them their settings, working directory included, as it hands
 * them to workers it forked early. A warm worker exits after FORGE_WARM_WORKER_IDLE seconds
 * unclaimed, after FORGE_WARM_WORKER_RUNS runs, on `forge stack down` (`stopWarmWorkers`), on a new
 * build (`buildFiles`), and when it runs other code than the run that claims it (another Node, other
 * NODE_OPTIONS or CA certificates: `workerBuildStamp`).
 *
 * The protocol is one JSON object per line. The worker says `{ warmWorker: { pid, build } }` to
 * whoever connects; the claimer answers `{ forgeWorkerSettings, cwd }` (or `{ forgeWorkerStop }`);
 * then the worker's messages (`{ ready }`) come over the socket, and the socket closing is the
 * worker's exit for the claimer and its parent's for the worker. One connection at a time; a
 * claimer that goes without sending settings leaves the worker waiting for the next. At the end of
 * its run the claimer says `{ forgeWorkerRunDone }` and the worker, its code compiled hot by that run,
 * waits for the next one on its socket (up to FORGE_WARM_WORKER_RUNS runs), closing the claimer's
 * connection once it listens again.
 */
import { spawn } from 'node:child_process'
import { EventEmitter } from 'node:events'
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { basename, dirname, join, resolve } from 'node:path'
import { nodeFlagsFor, withoutWorkerFlags } from './node-flags.js'
import { distEntry } from './paths.js'

/** the argument that makes a worker process wait for a run on a socket (workers/worker-process.ts) */
export const WARM_SOCKET_ARG = '--await-settings-socket'
/**
 * the argument that names a forked worker's slot socket: told at the end of its run that the run is
 * done, it waits there as the slot's warm worker instead of exiting (workers/worker-process.ts)
 */
export const WARM_SLOT_ARG = '--warm-socket'

/** a unix socket path longer than this is refused by some kernels (108 bytes on Linux, 104 on macOS) */
export const SOCKET_PATH_MAX = 100

export const warmDir = (home: string): string => join(resolve(home), 'warm')
export const warmSocketPath = (home: string, slot: number): string => join(warmDir(home), `worker-${slot}.sock`)
/** the pid of the warm worker started for a slot, until a run claims it */
export const warmPidPath = (socketPath: string): string => socketPath.replace(/\.sock$/, '.pid')

/**
 * The warm socket of the slot whose log is `logFile` (`<home>/logs/worker-<slot>.log`, where a warm
 * worker of that slot logs too); undefined for another name or a path too long for a socket.
 */
export function warmSocketOfLog(logFile: string): string | undefined {
  const slot = /^worker-(\d+)\.log$/.exec(basename(logFile))?.[1]
  if (slot === undefined || basename(dirname(resolve(logFile))) !== 'logs') return undefined
  const path = warmSocketPath(dirname(dirname(resolve(logFile))), Number(slot))
  return path.length > SOCKET_PATH_MAX ? undefined : path
}

/**
 * The built files whose change means another build: a warm worker waiting for a run exits when one
 * changes, since its workflow worker may poll between runs and must not serve a newer build's workflows
 * with older code (workers/worker-process.ts).
 */
export function buildFiles(): string[] {
  return [distEntry('workers/worker-process.js'), distEntry('workflow-bundle.js')]
}

/** What a warm worker runs: a claimer running other code (or another Node, other flags) does not take it. */
export function workerBuildStamp(): string {
  return buildStampOf(distEntry('workers/worker-process.js'))
}

/**
 * The environment Node (its OpenSSL, its module loader, libuv) reads once, as a process starts: a warm
 * process that takes a claimer's environment later still runs with what it started with — the CA
 * certificates it trusts above all (NODE_EXTRA_CA_CERTS, which the Helm chart sets for a fleet's own
 * CA), so a claimer whose values differ starts its own process.
 */
export const START_ENV: readonly string[] = ['NODE_OPTIONS', 'NODE_EXTRA_CA_CERTS', 'NODE_ICU_DATA', 'NODE_PATH', 'NODE_PRESERVE_SYMLINKS', 'OPENSSL_CONF', 'SSL_CERT_FILE', 'SSL_CERT_DIR', 'UV_THREADPOOL_SIZE']

/**
 * This process's Node, its flags and START_ENV, and when `builtFile` was written (0: not built, so nothing
 * can start either). The flags a worker is started with on top of its claimer's (stack/node-flags.ts) are
 * not part of it: a claimer and the warm worker it started compare equal.
 */
export function buildStampOf(builtFile: string): string {
  let built = 0
  try {
    built = statSync(builtFile).mtimeMs
  } catch {
    // not built
  }
  return JSON.stringify([process.version, process.execPath, withoutWorkerFlags(process.execArgv), START_ENV.map((name) => process.env[name] ?? ''), built])
}

/** Reads a socket's lines as JSON objects; a line that is not an object ends the connection. */
export function onJsonLines(socket: Socket, onMessage: (message: Record<string, unknown>) => void): void {
  let buffered = ''
  socket.setEncoding('utf8')
  socket.on('data', (chunk: string) => {
    buffered += chunk
    for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n')) {
      const line = buffered.slice(0, end)
      buffered = buffered.slice(end + 1)
      let message: unknown
      try {
        message = JSON.parse(line)
      } catch {
        message = undefined
      }
      if (typeof message !== 'object' || message === null || Array.isArray(message)) {
        socket.destroy()
        return
      }
      onMessage(message as Record<string, unknown>)
    }
    // a peer that never ends its line is not one of ours
    if (buffered.length > 1_000_000) socket.destroy()
  })
}

export const jsonLine = (message: object): string => `${JSON.stringify(message)}\n`

/**
 * A claimed warm worker, as the worker pool sees a forked one: it sends messages, emits them and
 * its `exit` (its socket closed), and is signalled by pid. Not a child of this process.
 */
export class WarmWorker extends EventEmitter {
  exitCode: number | null = null
  signalCode: NodeJS.Signals | null = null
  private claimed = false
  private closed = false

  constructor(
    readonly pid: number,
    readonly slot: number,
    private readonly socket: Socket,
  ) {
    super()
    onJsonLines(socket, (message) => this.emit('message', message))
    socket.on('error', () => undefined)
    socket.on('close', () => {
      this.closed = true
      this.emit('exit', null, null)
    })
  }

  get connected(): boolean {
    return !this.closed
  }

  /** Sends one message; settings make the worker this claimer's. */
  send(message: object): boolean {
    if (this.closed) return false
    if ('forgeWorkerSettings' in message) this.claimed = true
    return this.socket.write(jsonLine(message))
  }

  /** Signals the worker once it is this claimer's (before that, `release` leaves it to the next run). */
  kill(signal: NodeJS.Signals = 'SIGTERM'): boolean {
    if (this.closed) return false
    if (!this.claimed) {
      this.release()
      return true
    }
    try {
      process.kill(this.pid, signal)
      return true
    } catch {
      return false
    }
  }

  /**
   * Ends its run and keeps it: the worker stops serving the run (as on SIGTERM), then waits on its
   * socket for the next run and closes this connection once it listens (workers/worker-process.ts), so a
   * run that leaves warm workers next finds the slot taken. False when it is not this claimer's.
   */
  finishRun(): boolean {
    if (this.closed || !this.claimed) return false
    this.socket.write(jsonLine({ forgeWorkerRunDone: true }))
    return true
  }

  /** Hangs up without settings: the worker waits for the next run. */
  release(): void {
    this.socket.end()
  }

  ref(): void {
    this.socket.ref()
  }

  unref(): void {
    this.socket.unref()
  }
}

/** Connects to the warm worker at `path`; undefined when none answers there, or it runs other code (it is told to stop). */
function claimAt(path: string, slot: number, timeoutMs: number): Promise<WarmWorker | undefined> {
  return new Promise((resolveClaim) => {
    const socket = connect(path)
    let settled = false
    const settle = (worker: WarmWorker | undefined): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resolveClaim(worker)
    }
    // a worker busy elsewhere (another run holds its one connection) or hung: fork one instead
    const timer = setTimeout(() => {
      socket.destroy()
      settle(undefined)
    }, timeoutMs)
    socket.once('error', (error: NodeJS.ErrnoException) => {
      // nobody listens: a warm worker that was killed left its socket file (refused, or reset when it
      // died with connections pending)
      if (error.code === 'ECONNREFUSED' || error.code === 'ECONNRESET') {
        try {
          unlinkSync(path)
        } catch {
          // gone meanwhile
        }
      }
      settle(undefined)
    })
    socket.once('close', () => settle(undefined))
    let first = true
    onJsonLines(socket, (message) => {
      if (!first) return
      first = false
      const hello = message['warmWorker'] as { pid?: unknown; build?: unknown } | undefined
      if (typeof hello?.pid !== 'number' || hello.build !== workerBuildStamp()) {
        // told to stop; its socket closes as it exits (a workflow worker of another build it may keep
        // polling stops first): the run goes on once it is gone, or at the claim's timeout
        socket.end(jsonLine({ forgeWorkerStop: true }))
        return
      }
      // the worker is the handle's from here on
      for (const event of ['data', 'close', 'error']) socket.removeAllListeners(event)
      settle(new WarmWorker(hello.pid, slot, socket))
    })
  })
}

/**
 * How long a run waits for a slot's warm worker that is still loading (the run before it ended
 * moments ago) before it forks one. Another process forked now would load beside it on the same cores
 * and be ready no sooner; only a warm worker that hangs while loading costs this wait.
 */
export const WARM_LOADING_WAIT_MS = 10_000

/** Whether the slot's warm worker is still loading: its pid file names it, its socket is not there yet. */
export function warmWorkerLoading(home: string, slot: number): boolean {
  const path = warmSocketPath(home, slot)
  return !existsSync(path) && isWarmWorker(pidIn(warmPidPath(path)), path)
}

/** Waits until the warm worker loading for `path` listens; false when it is gone or the wait is over. */
async function listeningSoon(path: string, waitMs: number): Promise<boolean> {
  const deadline = Date.now() + waitMs
  for (;;) {
    if (existsSync(path)) return true
    if (Date.now() >= deadline || !isWarmWorker(pidIn(warmPidPath(path)), path)) return false
    // a run refused meanwhile need not stay for this
    await new Promise((resolveWait) => setTimeout(resolveWait, 20).unref())
  }
}

/** Claims the slot's warm worker once it listens (waiting up to `loadingWaitMs` while it loads); undefined when there is none to claim. */
export async function claimWarmWorker(home: string, slot: number, loadingWaitMs: number, timeoutMs = 1_000): Promise<WarmWorker | undefined> {
  const path = warmSocketPath(home, slot)
  if (!(await listeningSoon(path, loadingWaitMs))) return undefined
  return claimAt(path, slot, timeoutMs)
}

/** Claims the warm workers listening in slots 0, 1, … (up to `count`, stopping at the first slot without one). */
export async function claimWarmWorkers(home: string, count: number, timeoutMs = 1_000): Promise<WarmWorker[]> {
  const claimed: WarmWorker[] = []
  for (let slot = 0; slot < count; slot++) {
    const path = warmSocketPath(home, slot)
    if (!existsSync(path)) break
    const worker = await claimAt(path, slot, timeoutMs)
    if (worker === undefined) break
    claimed.push(worker)
  }
  return claimed
}

/**
 * Starts warm workers for slots 0…count-1 that have none (a slot's socket file is its lock: a second
 * worker for it exits at once), detached, logging to the slot's log. Returns their pids.
 */
export function leaveWarmWorkers(home: string, count: number, env: NodeJS.ProcessEnv = process.env): number[] {
  const pids: number[] = []
  const entry = distEntry('workers/worker-process.js')
  if (count <= 0 || !existsSync(entry) || warmSocketPath(home, count - 1).length > SOCKET_PATH_MAX) return pids
  mkdirSync(warmDir(home), { recursive: true, mode: 0o700 })
  const logDir = join(resolve(home), 'logs')
  mkdirSync(logDir, { recursive: true })
  for (let slot = 0; slot < count; slot++) {
    const path = warmSocketPath(home, slot)
    // one listens there already, or one is still loading for it
    if (existsSync(path) || isWarmWorker(pidIn(warmPidPath(path)), path)) continue
    const fd = openSync(join(logDir, `worker-${slot}.log`), 'a')
    try {
      const child = spawn(process.execPath, [...process.execArgv, ...nodeFlagsFor('worker', process.execArgv, env), entry, WARM_SOCKET_ARG, path], { detached: true, stdio: ['ignore', fd, fd], env })
      // a process that could not start is only a slot without a warm worker
      child.on('error', () => undefined)
      child.unref()
      if (child.pid !== undefined) {
        pids.push(child.pid)
        writeFileSync(warmPidPath(path), `${child.pid}\n`, { mode: 0o600 })
      }
    } finally {
      closeSync(fd)
    }
  }
  return pids
}

/** Waits until slots 0…count-1 of `home` have a warm worker listening; false if they do not by the deadline. */
export async function waitForWarmWorkers(home: string, count: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    let listening = 0
    while (listening < count && existsSync(warmSocketPath(home, listening))) listening++
    if (listening >= count) return true
    if (Date.now() > deadline) return false
    await new Promise((resolveWait) => setTimeout(resolveWait, 50))
  }
}

/**
 * Stops every warm worker of `home` (`forge stack down`): those its pid files name are signalled, still
 * loading or not (on Linux, where /proc shows that the pid is still that worker and unclaimed), the
 * others listening are told to. Returns how many.
 */
export async function stopWarmWorkers(home: string, timeoutMs = 3_000): Promise<number> {
  const dir = warmDir(home)
  if (!existsSync(dir)) return 0
  const names = readdirSync(dir)
  const signalled = new Set<string>()
  for (const name of names.filter((n) => /^worker-\d+\.pid$/.test(n))) {
    const file = join(dir, name)
    const pid = pidIn(file)
    // none: claimed meanwhile, its run's to stop
    if (pid === 0) continue
    const socket = file.replace(/\.pid$/, '.sock')
    rmSync(file, { force: true })
    // listening or still loading: its SIGTERM handler (or the default action) ends it
    if (isWarmWorker(pid, socket)) {
      try {
        process.kill(pid, 'SIGTERM')
        signalled.add(socket)
      } catch {
        // gone meanwhile
      }
    }
  }
  // the others listening (their pid file gone, or no /proc to tell) are told to
  const sockets = names.filter((name) => /^worker-\d+\.sock$/.test(name)).map((name) => join(dir, name)).filter((socket) => !signalled.has(socket))
  const stopped = await Promise.all(sockets.map((socket) => stopAt(socket, timeoutMs)))
  return signalled.size + stopped.filter(Boolean).length
}

/** The unclaimed warm workers of `home` (their pid files), listening or still loading. */
export function warmWorkers(home: string): { slot: number; pid: number; listening: boolean }[] {
  const dir = warmDir(home)
  if (!existsSync(dir)) return []
  const found: { slot: number; pid: number; listening: boolean }[] = []
  for (const name of readdirSync(dir)) {
    const slot = /^worker-(\d+)\.pid$/.exec(name)?.[1]
    if (slot === undefined) continue
    const socket = warmSocketPath(home, Number(slot))
    const pid = pidIn(join(dir, name))
    if (isWarmWorker(pid, socket)) found.push({ slot: Number(slot), pid, listening: existsSync(socket) })
  }
  return found.sort((a, b) => a.slot - b.slot)
}

/** the pid a pid file names; 0 when there is none */
function pidIn(file: string): number {
  try {
    const pid = Number(readFileSync(file, 'utf8').trim())
    return Number.isInteger(pid) && pid > 0 ? pid : 0
  } catch {
    return 0
  }
}

/** whether `pid` is a warm worker for `socket` (false where /proc cannot tell) */
function isWarmWorker(pid: number, socket: string): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
    // started as one, or forked for a run with this slot's socket to wait on after it
    return [WARM_SOCKET_ARG, WARM_SLOT_ARG].some((arg) => args.includes(arg) && args[args.indexOf(arg) + 1] === socket)
  } catch {
    return false
  }
}

/**
 * Tells the process listening at `path` to stop: once it says its hello (`{ [hello]: … }`), `stop` is
 * sent; true when it was told. A socket nobody listens on is removed.
 */
export function stopAt(path: string, timeoutMs: number, hello = 'warmWorker', stop: object = { forgeWorkerStop: true }): Promise<boolean> {
  return new Promise((resolveStop) => {
    const socket = connect(path)
    let told = false
    const timer = setTimeout(() => socket.destroy(), timeoutMs)
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ECONNREFUSED' || error.code === 'ECONNRESET') {
        try {
          unlinkSync(path)
        } catch {
          // gone meanwhile
        }
      }
    })
    onJsonLines(socket, (message) => {
      if (told || message[hello] === undefined) return
      told = true
      socket.write(jsonLine(stop))
    })
    // it closes the connection as it exits
    socket.on('close', () => {
      clearTimeout(timer)
      resolveStop(told)
    })
  })
}
