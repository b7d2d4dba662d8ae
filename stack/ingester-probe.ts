import { setTimeout as sleep } from 'node:timers/promises'
import { connectBus, subjects } from '../store/bus.js'
import { StackStartError } from './errors.js'
import { tail } from './local-stack.js'

export interface IngesterPong {
  pid: number
  serves_queries: boolean
  stats: { inserted_attempts: number; inserted_runs: number; rejected: number; batches: number }
}

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
