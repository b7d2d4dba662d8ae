/**
 * While a run waits, forge run asks the ingester every few seconds whether the store takes its
 * inserts, and says so when it does not (core/store-watch.ts). The question is the ingester's ping,
 * which every Forge role may ask; no answer says nothing (the supervisor restarts a dead ingester).
 */
import { join } from 'node:path'
import type { NatsConnection } from '@nats-io/transport-node'
import { storeWatchStep, type StoreWatchState } from '../core/store-watch.js'
import { storeFailureOf } from '../store/bus.js'

export const STORE_WATCH_INTERVAL_MS = 2_000

/** Where the ingester logs: the local stack's file, or a fleet's ingester. */
export function ingesterLogOf(config: { home: string }, local: boolean): string {
  return local ? join(config.home, 'logs', 'ingester.log') : "the ingester's log"
}

export interface StoreWatch {
  stop(): void
}

/** Watches the store for the run's lifetime; `where` names the ingester's log in what it says. */
export function watchStore(nc: NatsConnection, where: string, say: (message: string) => void, intervalMs = STORE_WATCH_INTERVAL_MS): StoreWatch {
  let state: StoreWatchState = {}
  let stopped = false
  let timer: NodeJS.Timeout | undefined
  const look = async (): Promise<void> => {
    const failing = await storeFailureOf(nc)
    if (stopped) return
    const step = storeWatchStep(state, failing, Date.now(), where)
    state = step.state
    if (step.message !== undefined) say(step.message)
    timer = setTimeout(() => void look(), intervalMs)
    timer.unref()
  }
  timer = setTimeout(() => void look(), intervalMs)
  timer.unref()
  return {
    stop() {
      stopped = true
      if (timer) clearTimeout(timer)
    },
  }
}
