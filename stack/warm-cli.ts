/**
 * The warm CLI (issue 15): a `forge` process that has loaded Node, oclif and the run command's modules
 * (~0.2 s of a `forge run`'s start) and waits for the next local `forge run` of its FORGE_HOME. A run
 * that leaves warm workers leaves one too (FORGE_WARM_CLI); it listens on `FORGE_HOME/warm/cli.sock`
 * (directory 0700, socket 0600: only this user) and logs to `logs/cli-warm.log`. `bin/run.js`, given
 * `run`, connects there first (cli/warm-cli-client.ts): the warm CLI runs that one command as that
 * process would — its arguments, environment and working directory, its terminal's width — sends its
 * output and exit code back, leaves the next warm CLI and exits. Anything else (no warm CLI, one of
 * another build, Node, NODE_OPTIONS or CA certificates — START_ENV —, a socket path too long) and
 * `forge run` starts as it always did. It exits after FORGE_WARM_WORKER_IDLE seconds unclaimed and on
 * `forge stack down`.
 *
 * The protocol is one JSON object per line. The warm CLI says `{ warmCli: { pid, build } }` to
 * whoever connects, and takes no other connection. The client answers `{ forgeRun: WarmRunRequest }`
 * (or `{ forgeCliStop }`); then the warm CLI sends `{ out }` and `{ err }` (text written to its
 * standard output and error) and finally `{ exit }` (its exit code); the client may send
 * `{ signal }`, which the warm CLI raises on itself (its handlers run as the command's would; without
 * one it dies of it, as a CLI would). A client that hangs up takes the warm CLI down with it.
 */
import { spawn } from 'node:child_process'
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { distEntry } from './paths.js'
import { buildStampOf, SOCKET_PATH_MAX, stopAt, warmDir } from './warm-workers.js'

/** the argument that names the socket a warm CLI listens on (cli/warm-cli.ts); /proc shows it */
export const WARM_CLI_ARG = '--warm-cli-socket'

export const warmCliSocketPath = (home: string): string => join(warmDir(home), 'cli.sock')
const warmCliPidPath = (home: string): string => join(warmDir(home), 'cli.pid')

/** What a `forge run` asks its warm CLI to run: everything a process takes from its parent that the command reads. */
export interface WarmRunRequest {
  /** the arguments after `forge` (`run`, then its flags) */
  argv: string[]
  cwd: string
  env: Record<string, string>
  stdout: StreamTraits
  stderr: StreamTraits
}

export interface StreamTraits {
  tty: boolean
  columns?: number | undefined
}

let servingInThisProcess = false

/** Called by the warm CLI's process: the commands it runs do not leave the next warm CLI, its own exit does. */
export function markWarmCliProcess(): void {
  servingInThisProcess = true
}

/** The code a warm CLI runs: a client running other code (another build, Node or flags) does not use it. */
export function cliBuildStamp(): string {
  return buildStampOf(distEntry('cli-bundle/oclif.js'))
}

/**
 * Starts a warm CLI for `home` unless one listens or is loading there: detached, logging to
 * `logs/cli-warm.log`, with `env` as its environment until a run gives it its own. Returns its pid
 * (undefined when none was started).
 */
export function leaveWarmCli(home: string, env: NodeJS.ProcessEnv = process.env, opts: { fromWarmCli?: boolean } = {}): number | undefined {
  // a command a warm CLI runs: the warm CLI leaves the next one as it exits, after the client has its exit code
  if (servingInThisProcess && opts.fromWarmCli !== true) return undefined
  const entry = distEntry('cli-bundle/warm-cli.js')
  const socket = warmCliSocketPath(home)
  if (!existsSync(entry) || socket.length > SOCKET_PATH_MAX) return undefined
  if (existsSync(socket) || warmCliPid(home) !== undefined) return undefined
  mkdirSync(warmDir(home), { recursive: true, mode: 0o700 })
  const logDir = join(resolve(home), 'logs')
  mkdirSync(logDir, { recursive: true })
  const fd = openSync(join(logDir, 'cli-warm.log'), 'a')
  try {
    const child = spawn(process.execPath, [...process.execArgv, entry, WARM_CLI_ARG, socket], { detached: true, stdio: ['ignore', fd, fd], env })
    // a process that could not start is only a run that starts cold
    child.on('error', () => undefined)
    child.unref()
    if (child.pid === undefined) return undefined
    writeFileSync(warmCliPidPath(home), `${child.pid}\n`, { mode: 0o600 })
    return child.pid
  } finally {
    closeSync(fd)
  }
}

/** The pid of `home`'s warm CLI, listening or still loading (its pid file, checked against /proc); undefined when there is none. */
export function warmCliPid(home: string): number | undefined {
  let pid: number
  try {
    pid = Number(readFileSync(warmCliPidPath(home), 'utf8').trim())
  } catch {
    return undefined
  }
  return isWarmCli(pid, warmCliSocketPath(home)) ? pid : undefined
}

/** Called by the warm CLI as it takes a connection: it leaves the next one as it exits. */
export function forgetWarmCli(home: string): void {
  rmSync(warmCliSocketPath(home), { force: true })
  rmSync(warmCliPidPath(home), { force: true })
}

/** Stops `home`'s warm CLI (`forge stack down`); true when there was one. */
export function stopWarmCli(home: string, timeoutMs = 3_000): Promise<boolean> {
  const pid = warmCliPid(home)
  rmSync(warmCliPidPath(home), { force: true })
  if (pid !== undefined) {
    try {
      process.kill(pid, 'SIGTERM')
      rmSync(warmCliSocketPath(home), { force: true })
      return Promise.resolve(true)
    } catch {
      // gone meanwhile
    }
  }
  const socketPath = warmCliSocketPath(home)
  if (!existsSync(socketPath)) return Promise.resolve(false)
  // no pid file (or no /proc to tell): told over its socket
  return stopAt(socketPath, timeoutMs, 'warmCli', { forgeCliStop: true })
}

/** whether `pid` is a warm CLI for `socket` (false where /proc cannot tell) */
function isWarmCli(pid: number, socket: string): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
    return args.includes(WARM_CLI_ARG) && args[args.indexOf(WARM_CLI_ARG) + 1] === socket
  } catch {
    return false
  }
}
