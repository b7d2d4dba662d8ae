/**
 * The embedded local stack: a Temporal dev server, a nats-server and the ingester (the chDB owner)
 * as detached child processes with their state under FORGE_HOME, recorded in stack.json. `forge run`
 * brings up what is not running and leaves it up for the next run; stale pids are detected, not trusted.
 */
import { readSetting } from '../config/index.js'
import { spawn } from 'node:child_process'
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, Socket } from 'node:net'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { findBinary } from './binaries.js'
import { settingsEnv, type ForgeConfig } from '../config/index.js'
import { StackStartError } from './errors.js'
import { distEntry } from './paths.js'
import { busAccessEnv, ensureBusSecrets, natsAuthorization, registerLocalBus } from '../store/bus-auth.js'

export interface ProcessEntry {
  pid: number
  /** a string the process's command line must contain, so a reused pid is not mistaken for ours */
  marker: string
  log: string
}

export interface StackState {
  temporal?: ProcessEntry & { address: string }
  nats?: ProcessEntry & { url: string }
  ingester?: ProcessEntry
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

/** Brings up every embedded component that is not running; idempotent and safe to call concurrently. */
export async function stackUp(config: ForgeConfig, log: (line: string) => void = () => undefined): Promise<Endpoints> {
  mkdirSync(join(config.home, 'logs'), { recursive: true })
  return withLock(config.home, async () => {
    const state = readStackState(config.home)
    // the results key every local worker and the ingester sign and check with (store/bus-auth.ts)
    ensureBusSecrets(config.home)

    let temporalAddress = config.temporal.address
    if (!temporalAddress) {
      if (!isAlive(state.temporal)) {
        log('starting Temporal dev server…')
        state.temporal = await startTemporal(config)
        writeStackState(config.home, state)
      }
      temporalAddress = state.temporal.address
    }

    let natsUrl = config.natsUrl
    if (!natsUrl) {
      if (!isAlive(state.nats)) {
        log('starting nats-server…')
        state.nats = await startNats(config)
        writeStackState(config.home, state)
      }
      natsUrl = state.nats.url
      registerLocalBus(natsUrl, config.home)
    }

    if (!isAlive(state.ingester)) {
      log('starting ingester…')
      state.ingester = await startIngester(config, natsUrl)
      writeStackState(config.home, state)
    }
    await waitForTemporal(temporalAddress, config.temporal.namespace)
    return { temporalAddress, natsUrl, ingesterRunning: true }
  })
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

/** Stops every component this stack started (ingester first, so it can ack its last batch). */
export async function stackDown(config: ForgeConfig): Promise<string[]> {
  return withLock(config.home, async () => {
    const state = readStackState(config.home)
    const stopped: string[] = []
    for (const name of ['ingester', 'model', 'nats', 'temporal'] as const) {
      const entry = state[name]
      if (isAlive(entry)) {
        await terminate(entry)
        stopped.push(name)
      }
      delete state[name]
    }
    writeStackState(config.home, state)
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

async function startTemporal(config: ForgeConfig): Promise<ProcessEntry & { address: string }> {
  const bin = findBinary('temporal', config.binaries.temporal)
  const [port = 0, httpPort = 0, metricsPort = 0] = await freePorts(3)
  const log = join(config.home, 'logs', 'temporal.log')
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
  const pid = spawnDetached(bin, args, log)
  const address = `127.0.0.1:${port}`
  await waitForPort(port, 60_000, pid, log, 'Temporal dev server')
  return { pid, marker: 'start-dev', log, address }
}

async function startNats(config: ForgeConfig): Promise<ProcessEntry & { url: string }> {
  const bin = findBinary('nats-server', config.binaries.natsServer)
  const [port] = await freePorts(1)
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
      `jetstream { store_dir: ${JSON.stringify(storeDir)} }`,
      natsAuthorization(secrets),
      '',
    ].join('\n'),
    { mode: 0o600 },
  )
  chmodSync(conf, 0o600)
  const log = join(config.home, 'logs', 'nats.log')
  const pid = spawnDetached(bin, ['-c', conf], log)
  await waitForPort(port!, 20_000, pid, log, 'nats-server')
  return { pid, marker: 'nats', log, url: `nats://127.0.0.1:${port}` }
}

async function startIngester(config: ForgeConfig, natsUrl: string): Promise<ProcessEntry> {
  const entry = distEntry('workers/ingester-main.js')
  if (!existsSync(entry)) throw new StackStartError(`the ingester is not built (${entry} is missing): run npm run build`)
  const log = join(config.home, 'logs', 'ingester.log')
  const env: NodeJS.ProcessEnv = { ...process.env, ...settingsEnv({ natsUrl, storePath: config.storePath, clickhouseUrl: config.clickhouseUrl }), ...busAccessEnv(natsUrl, 'ingester') }
  const pid = spawnDetached(process.execPath, [entry], log, env)
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

export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: count }, () => new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
      const server = createServer()
      server.once('error', reject)
      server.listen(0, '127.0.0.1', () => resolve(server))
    })),
  )
  const ports = servers.map((s) => {
    const address = s.address()
    return typeof address === 'object' && address ? address.port : 0
  })
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))))
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

async function waitForTemporal(address: string, namespace: string): Promise<void> {
  const { Connection } = await import('@temporalio/client')
  const deadline = Date.now() + 60_000
  let lastError: unknown
  while (Date.now() < deadline) {
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

/** A lock directory with the holder's pid; a lock whose holder died is taken over. */
export async function withLock<T>(home: string, fn: () => Promise<T>): Promise<T> {
  mkdirSync(home, { recursive: true })
  const lock = join(home, 'stack.lock')
  const deadline = Date.now() + 120_000
  for (;;) {
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx' })
      break
    } catch {
      const holder = Number(readFileSync(lock, 'utf8').trim() || 0)
      let holderAlive = holder > 0
      try {
        if (holder > 0) process.kill(holder, 0)
      } catch {
        holderAlive = false
      }
      if (!holderAlive) {
        rmSync(lock, { force: true })
        continue
      }
      if (Date.now() > deadline) throw new StackStartError(`the stack under ${home} is locked by pid ${holder}`)
      await sleep(200)
    }
  }
  try {
    return await fn()
  } finally {
    rmSync(lock, { force: true })
  }
}
