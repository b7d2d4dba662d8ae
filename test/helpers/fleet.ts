/**
 * Fleet-shaped test processes: a Temporal dev server and nats-server started as independent servers
 * (a single node or a 3-node JetStream cluster), and Forge roles started exactly as the Helm chart's
 * containers start them — deploy/entrypoint.sh with the chart's environment variables.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { Socket } from 'node:net'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { jetstreamManager } from '@nats-io/jetstream'
import { connectBus } from '../../store/bus.js'
import { findBinary } from '../../stack/binaries.js'
import { freePorts } from '../../stack/local-stack.js'
import { packageRoot } from '../../stack/paths.js'

export const ENTRYPOINT = join(packageRoot(), 'deploy', 'entrypoint.sh')

export interface Proc {
  name: string
  child: ChildProcess
  log: string
  /** resolves with the exit code (or the signal's name) */
  exited: Promise<number | string>
}

export function startProc(name: string, command: string, args: string[], env: NodeJS.ProcessEnv, logDir: string): Proc {
  mkdirSync(logDir, { recursive: true })
  const log = join(logDir, `${name}.log`)
  const fd = openSync(log, 'a')
  const child = spawn(command, args, { env, stdio: ['ignore', fd, fd] })
  closeSync(fd)
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)))
  return { name, child, log, exited }
}

/** A Forge role through the container entrypoint (`worker`, `judge`, `ingester`, or a forge command). */
export function startRole(name: string, role: string, args: string[], env: NodeJS.ProcessEnv, logDir: string): Proc {
  return startProc(name, ENTRYPOINT, [role, ...args], env, logDir)
}

export async function stopProc(proc: Proc, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | string> {
  if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill(signal)
  return proc.exited
}

export function tailLog(proc: Proc, lines = 30): string {
  try {
    return readFileSync(proc.log, 'utf8').split('\n').slice(-lines).join('\n')
  } catch {
    return '(no log)'
  }
}

export async function waitForTcp(port: number, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = new Socket()
      s.once('connect', () => (s.destroy(), resolve(true)))
      s.once('error', () => resolve(false))
      s.connect(port, '127.0.0.1')
    })
    if (ok) return
    await sleep(100)
  }
  throw new Error(`nothing listened on ${port} within ${timeoutMs} ms`)
}

/** Polls `check` until it returns a value other than undefined; the deadline only bounds a broken run. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(100)
  }
}

export interface HttpAnswer {
  status: number
  body: string
}

export function httpGet(port: number, path: string): Promise<HttpAnswer | undefined> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, timeout: 5_000 }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => (body += chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('timeout', () => req.destroy())
    req.on('error', () => resolve(undefined))
    req.end()
  })
}

/** The value of one sample of a Prometheus text body (labels as written, e.g. `{outcome="pass"}`), summed over every sample when `labels` is omitted. */
export function metricValue(body: string, name: string, labels?: string): number | undefined {
  let total: number | undefined
  for (const line of body.split('\n')) {
    if (line.startsWith('#')) continue
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line)
    if (!match || match[1] !== name) continue
    if (labels !== undefined && (match[2] ?? '') !== labels) continue
    total = (total ?? 0) + Number(match[3])
  }
  return total
}

export interface TemporalServer {
  address: string
  proc: Proc
}

export async function startTemporal(dir: string): Promise<TemporalServer> {
  const [port = 0, httpPort = 0, metricsPort = 0] = await freePorts(3)
  const proc = startProc(
    'temporal',
    findBinary('temporal'),
    ['server', 'start-dev', '--headless', '--ip', '127.0.0.1', '--port', String(port), '--http-port', String(httpPort), '--metrics-port', String(metricsPort), '--log-level', 'error',
      '--db-filename', join(dir, 'temporal.db'), '--sqlite-pragma', 'journal_mode=WAL', '--sqlite-pragma', 'synchronous=OFF'],
    process.env,
    dir,
  )
  await waitForTcp(port)
  return { address: `127.0.0.1:${port}`, proc }
}

export interface NatsNode {
  name: string
  port: number
  proc: Proc
  /** restarts the node with the same configuration and store */
  restart(): Promise<void>
}

export interface NatsCluster {
  /** every node's client URL, comma-separated (what FORGE_NATS_URL holds for a cluster) */
  url: string
  nodes: NatsNode[]
  stop(): Promise<void>
}

/**
 * `size` nats-server processes; with size 3 a JetStream cluster (R3 streams possible) configured as
 * the documented 3-node values: file storage, `sync_interval: always`.
 */
export async function startNats(dir: string, size: 1 | 3 = 1): Promise<NatsCluster> {
  const ports = await freePorts(size * 2)
  const clientPorts = ports.slice(0, size)
  const routePorts = ports.slice(size)
  const nodes: NatsNode[] = []
  for (let i = 0; i < size; i++) {
    const name = `nats-${i}`
    const conf = join(dir, `${name}.conf`)
    const routes = routePorts.map((p) => `nats-route://127.0.0.1:${p}`).join(', ')
    writeFileSync(
      conf,
      [
        `server_name: ${name}`,
        `listen: 127.0.0.1:${clientPorts[i]}`,
        `jetstream { store_dir: "${join(dir, name)}", sync_interval: always }`,
        ...(size > 1 ? [`cluster { name: forge, listen: 127.0.0.1:${routePorts[i]}, routes: [${routes}] }`] : []),
      ].join('\n'),
    )
    const node: NatsNode = {
      name,
      port: clientPorts[i]!,
      proc: startProc(name, findBinary('nats-server'), ['-c', conf], process.env, dir),
      async restart() {
        node.proc = startProc(name, findBinary('nats-server'), ['-c', conf], process.env, dir)
        await waitForTcp(node.port)
      },
    }
    nodes.push(node)
  }
  await Promise.all(nodes.map((n) => waitForTcp(n.port)))
  if (size > 1) await waitForJetStream(nodes.map((n) => `nats://127.0.0.1:${n.port}`).join(','))
  return {
    url: nodes.map((n) => `nats://127.0.0.1:${n.port}`).join(','),
    nodes,
    async stop() {
      await Promise.all(nodes.map((n) => stopProc(n.proc)))
    },
  }
}

/** A clustered JetStream answers only once its meta leader is elected. */
export async function waitForJetStream(url: string): Promise<void> {
  const nc = await connectBus(url, 'forge-test-wait')
  try {
    await waitFor('a JetStream meta leader', async () => {
      try {
        await (await jetstreamManager(nc)).getAccountInfo()
        return true
      } catch {
        return undefined
      }
    }, 60_000)
  } finally {
    await nc.close()
  }
}
