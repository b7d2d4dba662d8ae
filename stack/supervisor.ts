/**
 * The stack's supervisor (issue 12): every `intervalMs` it looks for embedded components that died
 * (Temporal dev server, nats-server, ingester) and brings them back on the same addresses and data
 * directories, so their clients reconnect and a run goes on. It runs as a detached process started
 * by `stackUp` (stack/supervisor-main.ts), and inside `forge run` while it waits for its run.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { ForgeConfig } from '../config/index.js'
import { BUS_ROOM_BYTES, busStoreFailure } from './bus-store.js'
import { deadComponents, stackUp } from './local-stack.js'

/** At most one restart of a nats-server that could not write per this long (a disk that fills again at once) */
export const BUS_RESTART_SPACING_MS = 30_000

export interface Supervisor {
  /** resolves once the loop stopped (after an ongoing restart finished) */
  stop(): Promise<void>
}

export interface SuperviseOptions {
  intervalMs?: number
  log?: (line: string) => void
  /** called before each check; returning false ends the loop (e.g. this supervisor was replaced) */
  keepGoing?: () => boolean
}

/** Checks the stack every interval and restarts what died; one restart round at a time. */
export function superviseStack(config: ForgeConfig, opts: SuperviseOptions = {}): Supervisor {
  const log = opts.log ?? (() => undefined)
  let stopped = false
  let round: Promise<void> = Promise.resolve()
  // the nats-server whose failed write was said, and when one was last restarted for it
  let saidFull: number | undefined
  let restartedAt = 0
  /** a nats-server that could not write (stack/bus-store.ts): said while its disk is full, stopped once it has room (restarted below as dead) */
  const unjamBus = async (): Promise<void> => {
    const failure = busStoreFailure(config)
    if (failure === undefined) {
      // the one that could not write is gone (restarted here or by the other supervisor)
      if (saidFull !== undefined) log('nats-server was restarted: the bus stores results again')
      saidFull = undefined
      return
    }
    const mib = (bytes: number): string => (bytes / 1024 / 1024).toFixed(1)
    if (failure.free_bytes < BUS_ROOM_BYTES) {
      if (saidFull !== failure.pid) {
        saidFull = failure.pid
        log(
          `nats-server cannot store results: ${failure.error}. Free space under ${failure.dir} (${mib(failure.free_bytes)} MiB free): ` +
            `it is restarted once there are ${mib(BUS_ROOM_BYTES)} MiB; what it acknowledged is kept, and the workers retry what it refused`,
        )
      }
      return
    }
    if (Date.now() - restartedAt < BUS_RESTART_SPACING_MS) return
    restartedAt = Date.now()
    saidFull = failure.pid
    log(`nats-server failed to store results (${failure.error}) and ${failure.dir} has room again (${mib(failure.free_bytes)} MiB): restarting it, as it fails every later write until then`)
    try {
      process.kill(failure.pid, 'SIGTERM')
    } catch {
      return // gone already
    }
    for (let waited = 0; waited < 10_000; waited += 100) {
      try {
        process.kill(failure.pid, 0)
      } catch {
        return
      }
      await sleep(100)
    }
    try {
      process.kill(failure.pid, 'SIGKILL')
    } catch {
      // gone
    }
  }
  const check = async (): Promise<void> => {
    if (stopped) return
    if (opts.keepGoing !== undefined && !opts.keepGoing()) {
      stopped = true
      return
    }
    await unjamBus()
    const dead = deadComponents(config)
    if (dead.length === 0) return
    const started = Date.now()
    log(`dead: ${dead.join(', ')}`)
    try {
      await stackUp(config, log, { supervisor: false })
      log(`restarted ${dead.join(', ')} in ${Date.now() - started} ms`)
    } catch (error) {
      // the next round tries again
      log(`restart failed: ${(error as Error).message}`)
    }
  }
  const timer = setInterval(() => {
    round = round.then(check)
  }, opts.intervalMs ?? 1_000)
  return {
    async stop() {
      stopped = true
      clearInterval(timer)
      await round
    },
  }
}
