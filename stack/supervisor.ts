/**
 * The stack's supervisor (issue 12): every `intervalMs` it looks for embedded components that died
 * (Temporal dev server, nats-server, ingester) and brings them back on the same addresses and data
 * directories, so their clients reconnect and a run goes on. It runs as a detached process started
 * by `stackUp` (stack/supervisor-main.ts), and inside `forge run` while it waits for its run.
 */
import type { ForgeConfig } from '../config/index.js'
import { deadComponents, stackUp } from './local-stack.js'

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
  const check = async (): Promise<void> => {
    if (stopped) return
    if (opts.keepGoing !== undefined && !opts.keepGoing()) {
      stopped = true
      return
    }
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
