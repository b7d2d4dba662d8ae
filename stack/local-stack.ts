/**
 * The embedded local stack: a Temporal dev server, a nats-server and the ingester (the chDB owner)
 * as detached child processes with their state under FORGE_HOME, recorded in stack.json. `forge run`
 * brings up what is not running and leaves it up for the next run; stale pids are detected, not trusted.
 */
import { readSetting } from '../config/index.js'
import { spawn } from 'node:child_process'
import { randomInt } from 'node:crypto'
import { ensurePrivateDir } from '../store/private-dir.js'
import { chmodSync, closeSync, existsSync, fstatSync, mkdirSync, openSync, readFileSync, readSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createServer, Socket } from 'node:net'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { findBinary } from './binaries.js'
import { settingsEnv, type ForgeConfig } from '../config/index.js'
import { StackStartError } from './errors.js'
import { temporalHttpClient } from './temporal-http.js'
import { nodeFlagsFor } from './node-flags.js'
import { distEntry } from './paths.js'
import { stopWarmWorkers, warmWorkers } from './warm-workers.js'
import { stopWarmCli, warmCliPid, warmCliSocketPath } from './warm-cli.js'
import { busAccessEnv, ensureBusSecrets, natsAuthorization, registerLocalBus } from '../store/bus-auth.js'

export interface ProcessEntry {
  pid: number
  /** a string the process's command line must contain, so a reused pid is not mistaken for ours */
  marker: string
  log: string
}

export interface StackState {
  /** `ports`: grpc, http, metrics, reused when it is restarted (clients keep its address) */
  temporal?: ProcessEntry & { address: string; ports?: number[] }
  nats?: ProcessEntry & { url: string }
  ingester?: ProcessEntry
  /** the detached supervisor (stack/supervisor-main.ts) that restarts whatever of the stack dies */
  supervisor?: ProcessEntry
  /**
   * The ports the servers last listened on, kept across `stack down`: a server started again takes
   * them back when they are free, so clients that outlived it (a run's workers) reconnect.
   */
  addresses?: { temporal?: number[]; nats?: number }
  /** the model server, started on demand by a run or judge that asks for a `local` model (stack/model-server.ts) */
  model?: ModelServerEntry
}

export interface ModelServerEntry extends ProcessEntry {
  url: string
  /** the model it serves (`local:<name>`) and its file */
  model: string
  path: string
  parallel: number
  /** the bearer key gateways send it */
  key: string
}

export interface Endpoints {
  temporalAddress: string
  /** the HTTP API of a dev server this stack started (http://127.0.0.1:PORT): `forge run` starts and follows its workflow there */
  temporalHttpUrl?: string
  natsUrl: string
  /** true when this stack's ingester owns the embedded store (read through it over NATS) */
  ingesterRunning: boolean
}

export type ComponentStatus = { name: string; state: 'running' | 'stopped' | 'external'; detail: string }

const stateFile = (home: string) => join(home, 'stack.json')

export function readStackState(home: string): StackState {
  try {
    return JSON.parse(readFileSync(stateFile(home), 'utf8')) as StackState
  } catch {
    return {}
  }
}

export function writeStackState(home: string, state: StackState): void {
  writeFileSync(stateFile(home), `${JSON.stringify(state, null, 2)}\n`)
}

export function isAlive(entry: ProcessEntry | undefined): entry is ProcessEntry {
  if (!entry) return false
  try {
    process.kill(entry.pid, 0)
  } catch {
    return false
  }
  try {
    const cmdline = readFileSync(`/proc/${entry.pid}/cmdline`, 'utf8')
    if (!cmdline.includes(entry.marker)) return false
    const stat = readFileSync(`/proc/${entry.pid}/stat`, 'utf8')
    return !/\) Z /.test(stat) // a zombie is not running
  } catch {
    return true // no /proc (not Linux): the signal check has to do
  }
}

/** Each component's state, without starting anything. */
export function stackStatus(config: ForgeConfig): ComponentStatus[] {
  const state = readStackState(config.home)
  const row = (name: string, external: string | undefined, entry: (ProcessEntry & { address?: string; url?: string }) | undefined) =>
    external
      ? { name, state: 'external' as const, detail: external }
      : isAlive(entry)
        ? { name, state: 'running' as const, detail: `pid ${entry.pid} ${entry.address ?? entry.url ?? ''}`.trim() }
        : { name, state: 'stopped' as const, detail: entry ? `stale pid ${(entry as ProcessEntry).pid}` : '' }
  return [
    row('temporal', config.temporal.address, state.temporal),
    row('nats', config.natsUrl, state.nats),
    row('ingester', undefined, state.ingester),
    row('supervisor', undefined, state.supervisor),
    // shown once a run asked for a local model (or FORGE_LOCAL_MODEL_URL points at one)
    ...(readSetting('localModelUrl') !== undefined
      ? [{ name: 'model-server', state: 'external' as const, detail: readSetting('localModelUrl')! }]
      : state.model === undefined
        ? []
        : [
            isAlive(state.model)
              ? { name: 'model-server', state: 'running' as const, detail: `pid ${state.model.pid} ${state.model.url} ${state.model.model}, ${state.model.parallel} parallel, RSS ${mebibytes(state.model.pid)} MiB` }
              : { name: 'model-server', state: 'stopped' as const, detail: `stale pid ${(state.model as ProcessEntry).pid}` },
          ]),
    // loaded workers waiting for the next forge run (stack/warm-workers.ts)
    ...warmWorkers(config.home).map(({ slot, pid, listening }) => ({
      name: `warm-worker-${slot}`,
      state: 'running' as const,
      detail: `pid ${pid} ${listening ? 'waiting for the next run' : 'loading'}, RSS ${mebibytes(pid)} MiB (FORGE_WARM_WORKERS, FORGE_WARM_WORKER_IDLE, FORGE_WARM_WORKER_RUNS, FORGE_WARM_WORKER_WARMUP)`,
    })),
    // the loaded forge process that runs the next forge run (stack/warm-cli.ts)
    ...[warmCliPid(config.home)].flatMap((pid) =>
      pid === undefined
        ? []
        : [{ name: 'warm-cli', state: 'running' as const, detail: `pid ${pid} ${existsSync(warmCliSocketPath(config.home)) ? 'waiting for the next forge run' : 'loading'}, RSS ${mebibytes(pid)} MiB (FORGE_WARM_CLI, FORGE_WARM_WORKER_IDLE)` }],
    ),
  ]
}

/** A process's resident memory in MiB (0 where /proc cannot tell). */
export function mebibytes(pid: number): number {
  try {
    const kib = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0)
    return Math.round(kib / 1024)
  } catch {
    return 0
  }
}

export interface StackUpOptions {
  /** start the detached supervisor that restarts dead components (default true) */
  supervisor?: boolean
}

/**
 * Brings up every embedded component that is not running; idempotent and safe to call concurrently.
 * A component that ran before and died comes back on the same address and data directory, so its
 * clients (workers, the ingester, a waiting `forge run`) reconnect by themselves (issue 12).
 */
export async function stackUp(config: ForgeConfig, log: (line: string) => void = () => undefined, opts: StackUpOptions = {}): Promise<Endpoints> {
  ensurePrivateDir(config.home)
  mkdirSync(join(config.home, 'logs'), { recursive: true })
  return withLock(config.home, async () => {
    const state = readStackState(config.home)
    // the results key every local worker and the ingester sign and check with (store/bus-auth.ts)
    ensureBusSecrets(config.home)
    const again = (name: string, where: string): string => `${name} had died: restarting it on ${where}…`
    const moved = (name: string, from: string, to: string): string => `${from} was taken: ${name} now listens on ${to} (running workers and CLIs keep calling the old address)`

    let temporalAddress = config.temporal.address
    let temporalHttpUrl: string | undefined
    let temporalStarted = false
    if (!temporalAddress) {
      const previous = state.temporal
      if (!isAlive(state.temporal)) {
        log(previous ? again('the Temporal dev server', previous.address) : 'starting Temporal dev server…')
        const started = await startTemporal(config, await reusable(previous?.ports ?? state.addresses?.temporal ?? portsOf(previous?.address)), log)
        if (previous !== undefined && started.address !== previous.address) log(moved('the Temporal dev server', previous.address, started.address))
        state.temporal = started
        state.addresses = { ...state.addresses, temporal: started.ports }
        writeStackState(config.home, state)
        temporalStarted = true
      }
      temporalAddress = state.temporal.address
      temporalHttpUrl = httpUrlOf(state.temporal)
    }

    let natsUrl = config.natsUrl
    if (!natsUrl) {
      const previous = state.nats
      if (!isAlive(state.nats)) {
        log(previous ? again('nats-server', previous.url) : 'starting nats-server…')
        state.nats = await startNats(config, (await reusable(previous !== undefined ? portsOf(previous.url) : state.addresses?.nats !== undefined ? [state.addresses.nats] : []))[0], log)
        if (previous !== undefined && state.nats.url !== previous.url) log(moved('nats-server', previous.url, state.nats.url))
        state.addresses = { ...state.addresses, nats: portsOf(state.nats.url)[0] ?? 0 }
        writeStackState(config.home, state)
      }
      natsUrl = state.nats.url
      registerLocalBus(natsUrl, config.home)
    }

    if (!isAlive(state.ingester)) {
      log(state.ingester ? 'the ingester had died: restarting it…' : 'starting ingester…')
      state.ingester = await startIngester(config, natsUrl)
      writeStackState(config.home, state)
    }
    if ((opts.supervisor ?? true) && !isAlive(state.supervisor)) {
      state.supervisor = startSupervisor(config)
      writeStackState(config.home, state)
    }
    // the dev server picks its internal services' ports itself and, rarely, one it cannot bind: it then
    // exits while starting (a panic in its log); started again, it picks others
    for (let tries = 1; ; tries++) {
      const local = config.temporal.address ? undefined : state.temporal
      try {
        // a dev server that runs already answers on its HTTP API, which is what `forge run` calls (a CLI
        // then loads no gRPC SDK); one this call started is asked over gRPC too, which its workers use
        await waitForTemporal(temporalAddress, config.temporal.namespace, local && (() => isAlive(local)), temporalStarted ? undefined : temporalHttpUrl)
        break
      } catch (error) {
        if (!(error instanceof TemporalExitedError) || local === undefined) throw error
        if (tries >= 3) throw new StackStartError(`${error.message}, ${tries} times; the end of ${local.log}:\n${tail(local.log)}`)
        log(`the Temporal dev server exited while starting (${local.log}): starting it again…`)
        state.temporal = await startTemporal(config, local.ports ?? [], log)
        writeStackState(config.home, state)
        temporalHttpUrl = httpUrlOf(state.temporal)
      }
    }
    return { temporalAddress, natsUrl, ingesterRunning: true, ...(temporalHttpUrl !== undefined ? { temporalHttpUrl } : {}) }
  })
}

/** The embedded components recorded in stack.json that are no longer alive (what a supervisor restarts). */
export function deadComponents(config: ForgeConfig): string[] {
  const state = readStackState(config.home)
  const dead: string[] = []
  if (!config.temporal.address && state.temporal !== undefined && !isAlive(state.temporal)) dead.push('temporal')
  if (!config.natsUrl && state.nats !== undefined && !isAlive(state.nats)) dead.push('nats')
  if (state.ingester !== undefined && !isAlive(state.ingester)) dead.push('ingester')
  return dead
}

/**
 * Each of `ports` that is free to listen on again; undefined (take a fresh one) for one that is taken.
 * One at a time, not all or none: between a kill and the restart any process's outgoing connection
 * may get one of them as its ephemeral port (the same range), and a dev server whose HTTP port was
 * taken so had moved its frontend too, leaving every worker calling the old address (a chaos test
 * caught it).
 */
async function reusable(ports: number[]): Promise<(number | undefined)[]> {
  const free = await Promise.all(ports.map((port, i) => (i === 0 ? portFreeWithin(port, CALLED_PORT_WAIT_MS) : portFree(port))))
  return ports.map((port, i) => (free[i] ? port : undefined))
}

/**
 * How long a restart waits for the port clients call (the first of a component's ports) to be free:
 * a port held by a passing connection (a client's reconnect may even connect to itself there) is free
 * again soon, and a component that moved is lost to every process that has its address.
 */
const CALLED_PORT_WAIT_MS = 10_000

async function portFreeWithin(port: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  for (;;) {
    if (await portFree(port)) return true
    if (Date.now() >= deadline) return false
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer()
    server.once('error', () => resolve(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
  })
}

/** The port(s) of `host:port` or `nats://host:port`; [] when absent. */
function portsOf(address: string | undefined): number[] {
  const port = address === undefined ? NaN : Number(address.slice(address.lastIndexOf(':') + 1))
  return Number.isInteger(port) && port > 0 ? [port] : []
}

function startSupervisor(config: ForgeConfig): ProcessEntry {
  const entry = distEntry('stack/supervisor-main.js')
  if (!existsSync(entry)) throw new StackStartError(`the stack supervisor is not built (${entry} is missing): run npm run build`)
  const log = join(config.home, 'logs', 'supervisor.log')
  const env: NodeJS.ProcessEnv = { ...process.env, FORGE_HOME: config.home }
  return { pid: spawnDetached(process.execPath, [entry], log, env), marker: 'supervisor-main', log }
}

/** Where the stack's servers are if it is up; undefined for a component that is down. */
export function currentEndpoints(config: ForgeConfig): { temporalAddress?: string; natsUrl?: string; ingesterRunning: boolean } {
  const state = readStackState(config.home)
  const temporalAddress = config.temporal.address ?? (isAlive(state.temporal) ? state.temporal.address : undefined)
  const natsUrl = config.natsUrl ?? (isAlive(state.nats) ? state.nats.url : undefined)
  if (config.natsUrl === undefined && natsUrl !== undefined) registerLocalBus(natsUrl, config.home)
  return {
    ...(temporalAddress ? { temporalAddress } : {}),
    ...(natsUrl ? { natsUrl } : {}),
    ingesterRunning: isAlive(state.ingester),
  }
}

/** Stops every component this stack started (the supervisor first, then the ingester, so it can ack its last batch). */
export async function stackDown(config: ForgeConfig): Promise<string[]> {
  return withLock(config.home, async () => {
    const state = readStackState(config.home)
    const stopped: string[] = []
    for (const name of ['supervisor', 'ingester', 'model', 'nats', 'temporal'] as const) {
      const entry = state[name]
      if (isAlive(entry)) {
        await terminate(entry)
        stopped.push(name)
      }
      delete state[name]
    }
    writeStackState(config.home, state)
    // warm workers wait for runs of this stack's home (stack/warm-workers.ts)
    if ((await stopWarmWorkers(config.home)) > 0) stopped.push('warm workers')
    if (await stopWarmCli(config.home)) stopped.push('warm CLI')
    return stopped
  })
}

async function terminate(entry: ProcessEntry): Promise<void> {
  signalGroup(entry.pid, 'SIGTERM')
  for (let i = 0; i < 100 && isAlive(entry); i++) await sleep(100)
  if (isAlive(entry)) signalGroup(entry.pid, 'SIGKILL')
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal)
  } catch {
    try {
      process.kill(pid, signal)
    } catch {
      // already gone
    }
  }
}

async function startTemporal(config: ForgeConfig, previous: (number | undefined)[], log: (line: string) => void): Promise<ProcessEntry & { address: string; ports: number[] }> {
  const bin = findBinary('temporal', config.binaries.temporal)
  const logFile = join(config.home, 'logs', 'temporal.log')
  return startRetryingBind('the Temporal dev server', logFile, previous, log, async (kept) => {
    // fresh ones for those not kept, none equal to a kept one
    const fresh = (await freePorts(6)).filter((p) => !kept.includes(p))
    const [port = 0, httpPort = 0, metricsPort = 0] = [0, 1, 2].map((i) => kept[i] ?? fresh[i] ?? 0)
    const args = [
      'server', 'start-dev', '--headless', '--ip', '127.0.0.1',
      '--port', String(port), '--http-port', String(httpPort), '--metrics-port', String(metricsPort),
      '--db-filename', join(config.home, 'temporal.db'),
      '--namespace', config.temporal.namespace,
      // the dev server's SQLite is embedded mode's throughput limit (the SDK's stress CI runs it this way)
      '--sqlite-pragma', 'journal_mode=WAL', '--sqlite-pragma', 'synchronous=OFF',
      '--log-level', 'warn',
      // attempt activities are scheduled on the worker's own queue: hand them back with the workflow task
      '--dynamic-config-value', 'system.enableActivityEagerExecution=true',
    ]
    const pid = spawnDetached(bin, args, logFile)
    await waitForPort(port, 60_000, pid, logFile, 'Temporal dev server')
    return { pid, marker: 'start-dev', log: logFile, address: `127.0.0.1:${port}`, ports: [port, httpPort, metricsPort] }
  })
}

/**
 * Starts a server on ports checked free a moment before, and starts it again (3 tries) when it exits
 * because one of them was taken in that moment (CI: a dev server's HTTP port, by some process's
 * outgoing connection): the ones still free are kept (the port clients call above all), fresh ones
 * replace the rest.
 */
async function startRetryingBind<T>(what: string, logFile: string, previous: (number | undefined)[], log: (line: string) => void, start: (kept: (number | undefined)[]) => Promise<T>): Promise<T> {
  let kept = previous
  for (let tries = 1; ; tries++) {
    const from = logSize(logFile)
    try {
      return await start(kept)
    } catch (error) {
      if (!(error instanceof StackStartError) || tries >= 3 || !/address already in use/i.test(readFrom(logFile, from))) throw error
      log(`${what} could not listen on a port that was free a moment before: starting it again…`)
      kept = await Promise.all(kept.map(async (port) => (port !== undefined && (await portFree(port)) ? port : undefined)))
    }
  }
}

function logSize(file: string): number {
  try {
    return statSync(file).size
  } catch {
    return 0
  }
}

/** What a log file holds after `offset` (what one start wrote), not the whole log of every start before. */
function readFrom(file: string, offset: number): string {
  try {
    const fd = openSync(file, 'r')
    try {
      const buffer = Buffer.alloc(Math.max(0, fstatSync(fd).size - offset))
      const read = readSync(fd, buffer, 0, buffer.length, offset)
      return buffer.subarray(0, read).toString('utf8')
    } finally {
      closeSync(fd)
    }
  } catch {
    return ''
  }
}

async function startNats(config: ForgeConfig, previousPort: number | undefined, log: (line: string) => void): Promise<ProcessEntry & { url: string }> {
  const bin = findBinary('nats-server', config.binaries.natsServer)
  const logFile = join(config.home, 'logs', 'nats.log')
  return startRetryingBind('nats-server', logFile, [previousPort], log, async ([kept]) => startNatsOn(config, bin, logFile, kept ?? (await freePorts(1))[0]!))
}

async function startNatsOn(config: ForgeConfig, bin: string, logFile: string, port: number): Promise<ProcessEntry & { url: string }> {
  const storeDir = join(config.home, 'nats')
  mkdirSync(storeDir, { recursive: true })
  const conf = join(config.home, 'nats.conf')
  // only Forge's own components connect: a generated user per role, with per-role permissions (store/bus-auth.ts)
  const secrets = ensureBusSecrets(config.home)
  writeFileSync(
    conf,
    [
      `listen: 127.0.0.1:${port}`,
      'max_payload: 8MB',
      // a one-replica stream writes each message to its file before acknowledging it, so a killed server
      // loses nothing it acked (test/integration/stack-start.test.ts); its files are synced to disk every
      // second. Syncing every write (`always`) cost ~20 % of a fast run's throughput and bought no more than
      // what an OS crash spares: Temporal's SQLite here runs synchronous=OFF, chDB does not sync its parts
      `jetstream { store_dir: ${JSON.stringify(storeDir)}, sync_interval: "1s" }`,
      natsAuthorization(secrets),
      '',
    ].join('\n'),
    { mode: 0o600 },
  )
  chmodSync(conf, 0o600)
  const pid = spawnDetached(bin, ['-c', conf], logFile)
  await waitForPort(port, 20_000, pid, logFile, 'nats-server')
  return { pid, marker: 'nats', log: logFile, url: `nats://127.0.0.1:${port}` }
}

async function startIngester(config: ForgeConfig, natsUrl: string): Promise<ProcessEntry> {
  const entry = distEntry('workers/ingester-main.js')
  if (!existsSync(entry)) throw new StackStartError(`the ingester is not built (${entry} is missing): run npm run build`)
  const log = join(config.home, 'logs', 'ingester.log')
  const env: NodeJS.ProcessEnv = { ...process.env, ...settingsEnv({ natsUrl, storePath: config.storePath, clickhouseUrl: config.clickhouseUrl, resultsKeep: config.resultsKeepSeconds }), ...busAccessEnv(natsUrl, 'ingester') }
  const pid = spawnDetached(process.execPath, [...nodeFlagsFor('ingester', [], env), entry], log, env)
  const { waitForIngester } = await import('./ingester-probe.js')
  await waitForIngester(natsUrl, 30_000, () => isAlive({ pid, marker: 'ingester-main', log }), log)
  return { pid, marker: 'ingester-main', log }
}

export function spawnDetached(command: string, args: string[], logFile: string, env: NodeJS.ProcessEnv = process.env): number {
  const fd = openSync(logFile, 'a')
  try {
    const child = spawn(command, args, { detached: true, stdio: ['ignore', fd, fd], env })
    child.unref()
    if (child.pid === undefined) throw new StackStartError(`could not start ${command}; see ${logFile}`)
    return child.pid
  } finally {
    closeSync(fd)
  }
}

/**
 * `count` distinct ports free on 127.0.0.1, drawn below the kernel's ephemeral range: the kernel
 * hands ports of that range to every outgoing connection, so one picked there may be taken by some
 * client between this check and the server's bind (it happened in CI). Falls back to ports the kernel
 * picks when the range below is too small to draw from.
 */
export async function freePorts(count: number): Promise<number[]> {
  const [low, high] = [10_000, ephemeralPortsStart() - 1]
  const chosen = new Set<number>()
  for (let draws = 0; chosen.size < count && draws < count * 20 && high - low >= 1_000; draws++) {
    const port = low + randomInt(high - low + 1)
    if (!chosen.has(port) && (await portFree(port))) chosen.add(port)
  }
  return chosen.size === count ? [...chosen] : [...chosen, ...(await kernelPorts(count - chosen.size, chosen))]
}

/** The first port of the range the kernel hands to outgoing connections (Linux's setting, else the IANA range). */
export function ephemeralPortsStart(): number {
  try {
    const first = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0])
    if (Number.isInteger(first) && first > 0) return first
  } catch {
    // not Linux
  }
  return 49_152
}

async function kernelPorts(count: number, taken: Set<number>): Promise<number[]> {
  const ports: number[] = []
  while (ports.length < count) {
    const servers = await Promise.all(
      Array.from({ length: count - ports.length }, () => new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
        const server = createServer()
        server.once('error', reject)
        server.listen(0, '127.0.0.1', () => resolve(server))
      })),
    )
    for (const server of servers) {
      const address = server.address()
      const port = typeof address === 'object' && address ? address.port : 0
      if (port > 0 && !taken.has(port) && !ports.includes(port)) ports.push(port)
    }
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))))
  }
  return ports
}

export async function waitForPort(port: number, timeoutMs: number, pid: number, log: string, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await canConnect(port)) return
    try {
      process.kill(pid, 0)
    } catch {
      throw new StackStartError(`${what} exited during start-up; see ${log}:\n${tail(log)}`)
    }
    await sleep(100)
  }
  throw new StackStartError(`${what} did not listen on 127.0.0.1:${port} within ${timeoutMs / 1000}s; see ${log}`)
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket()
    socket.setTimeout(500)
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
    socket.once('timeout', () => {
      socket.destroy()
      resolve(false)
    })
    socket.connect(port, '127.0.0.1')
  })
}

/** The local Temporal dev server exited before it served its namespace. */
class TemporalExitedError extends StackStartError {}

/** Where the stack's dev server serves its HTTP API now (it may have moved with a restart); undefined when it did not start one. */
export function currentTemporalHttpUrl(config: ForgeConfig): string | undefined {
  if (config.temporal.address) return undefined
  const temporal = readStackState(config.home).temporal
  return temporal === undefined ? undefined : httpUrlOf(temporal)
}

/** The HTTP API of a dev server the stack started (its second port); none for one started before Forge recorded its ports. */
function httpUrlOf(temporal: { ports?: number[] }): string | undefined {
  const port = temporal.ports?.[1]
  return port !== undefined && port > 0 ? `http://127.0.0.1:${port}` : undefined
}

async function waitForTemporal(address: string, namespace: string, alive?: () => boolean, httpUrl?: string): Promise<void> {
  if (httpUrl !== undefined) {
    const http = temporalHttpClient(httpUrl, namespace)
    try {
      // one quick answer is all a running server owes; anything else is checked the long way below
      await http.describeNamespace()
      return
    } catch {
      // restarting, or its HTTP API is not up yet
    } finally {
      http.close()
    }
  }
  const { Connection } = await import('@temporalio/client')
  const deadline = Date.now() + 60_000
  let lastError: unknown
  while (Date.now() < deadline) {
    if (alive !== undefined && !alive()) throw new TemporalExitedError(`the Temporal dev server at ${address} exited before it served namespace "${namespace}"`)
    try {
      const connection = await Connection.connect({ address, connectTimeout: 2_000 })
      try {
        await connection.workflowService.describeNamespace({ namespace })
        return
      } finally {
        await connection.close()
      }
    } catch (error) {
      lastError = error
      await sleep(250)
    }
  }
  throw new StackStartError(`Temporal at ${address} did not serve namespace "${namespace}": ${(lastError as Error)?.message}`)
}

export function tail(file: string, lines = 15): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n')
  } catch {
    return '(no log)'
  }
}

/** When a file was last modified (epoch ms), or now when it cannot be read. */
function lockAge(file: string): number {
  try {
    return statSync(file).mtimeMs
  } catch {
    return Date.now()
  }
}

/** What a full disk or quota means for Forge's home, appended to the error that met it. */
export function diskHint(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code
  return code === 'ENOSPC' || code === 'EDQUOT' ? ' (the disk holding FORGE_HOME is full: free space there, or point FORGE_HOME at another disk)' : ''
}

/** A lock file with the holder's pid; a lock whose holder died is taken over. */
export async function withLock<T>(home: string, fn: () => Promise<T>): Promise<T> {
  ensurePrivateDir(home)
  const lock = join(home, 'stack.lock')
  const deadline = Date.now() + 120_000
  for (;;) {
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx' })
      break
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
        // made but not written (a full disk), or not made at all: taking it over again would spin for ever
        rmSync(lock, { force: true })
        throw new StackStartError(`cannot take the stack's lock ${lock}: ${(error as Error).message}${diskHint(error)}`, { cause: error })
      }
      let held: string
      try {
        held = readFileSync(lock, 'utf8').trim()
      } catch {
        continue // released meanwhile
      }
      // an empty lock: its holder is between making and writing it, or died there
      const holder = Number(held || 0)
      let holderAlive = holder > 0
      try {
        if (holder > 0) process.kill(holder, 0)
      } catch {
        holderAlive = false
      }
      if (!holderAlive && (holder > 0 || Date.now() - lockAge(lock) > 2_000)) {
        rmSync(lock, { force: true })
        continue
      }
      if (Date.now() > deadline) throw new StackStartError(`the stack under ${home} is locked by ${holder > 0 ? `pid ${holder}` : 'a process that has not written its pid'} (${lock})`)
      await sleep(200)
    }
  }
  try {
    return await fn()
  } finally {
    rmSync(lock, { force: true })
  }
}
