import { setTimeout as sleep } from 'node:timers/promises'
import { join } from 'node:path'
import type { ForgeConfig } from '../config/index.js'
import type { StoreFailure } from '../core/store-watch.js'
import { jetstreamManager } from '@nats-io/jetstream'
import { connectBus, RESULTS_STREAM, storeFailureOf, subjects } from '../store/bus.js'
import { StackStartError } from './errors.js'
import { currentEndpoints, tail, type ComponentStatus } from './local-stack.js'

export interface IngesterPong {
  pid: number
  serves_queries: boolean
  stats: { inserted_attempts: number; inserted_runs: number; rejected: number; batches: number; insert_failures?: number; failing?: StoreFailure }
}

/**
 * forge stack status's rows of the results path: on the nats row, what the results stream holds on
 * the bus's disk (stored results leave it FORGE_RESULTS_KEEP after they were stored); on the
 * ingester's, the store's failing spell when it has one (a full disk): a run that waits on the store
 * shows why here too.
 */
export async function withResultsPath(config: ForgeConfig, status: ComponentStatus[], now: number = Date.now()): Promise<ComponentStatus[]> {
  const { natsUrl, ingesterRunning } = currentEndpoints(config)
  if (natsUrl === undefined) return status
  let failing: StoreFailure | undefined
  let held: { messages: number; bytes: number } | undefined
  try {
    const nc = await connectBus(natsUrl, 'forge-status')
    try {
      held = await (await jetstreamManager(nc)).streams.info(RESULTS_STREAM).then(
        (info) => info.state,
        () => undefined,
      )
      if (ingesterRunning) failing = await storeFailureOf(nc)
    } finally {
      await nc.close()
    }
  } catch {
    return status
  }
  const notes = new Map<string, string>()
  if (held !== undefined) notes.set('nats', `results stream ${held.messages} message(s), ${mebibytes(held.bytes)} (stored results leave it after FORGE_RESULTS_KEEP=${config.resultsKeepSeconds} s)`)
  if (failing !== undefined) {
    const seconds = Math.max(0, Math.round((now - failing.since) / 1000))
    notes.set('ingester', `the store has failed every insert for ${seconds} s: ${failing.error} (results wait on the bus; see ${join(config.home, 'logs', 'ingester.log')})`)
  }
  return status.map((s) => (notes.has(s.name) ? { ...s, detail: `${s.detail}; ${notes.get(s.name)}` } : s))
}

const mebibytes = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MiB`

/** Asks a running ingester for its pid and counters; undefined when none answers. */
export async function pingIngester(natsUrl: string, timeoutMs = 1_000): Promise<IngesterPong | undefined> {
  const nc = await connectBus(natsUrl, 'forge-probe')
  try {
    const msg = await nc.request(subjects.ingesterPing, new Uint8Array(), { timeout: timeoutMs })
    return msg.json<IngesterPong>()
  } catch {
    return undefined
  } finally {
    await nc.close()
  }
}

export async function waitForIngester(natsUrl: string, timeoutMs: number, alive: () => boolean, log: string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await pingIngester(natsUrl, 500)) return
    if (!alive()) throw new StackStartError(`the ingester exited during start-up; see ${log}:\n${tail(log)}`)
    await sleep(100)
  }
  throw new StackStartError(`the ingester did not answer within ${timeoutMs / 1000}s; see ${log}`)
}
