/**
 * A token bucket for judge calls made inside attempt activities (the tier-0 `judge` grader), so
 * they share FORGE_JUDGE_RATE with nothing else in the process. The judge activities themselves are
 * rate-limited by Temporal (the judge worker's maxTaskQueueActivitiesPerSecond).
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { readSetting } from '../../config/index.js'

export interface RateLimiter {
  /** resolves when a call may start */
  acquire(): Promise<void>
}

/** `perSecond` calls per second, with bursts of up to `burst`; Infinity or ≤ 0 means unlimited. */
export function createRateLimiter(perSecond: number, burst = Math.max(1, Math.ceil(perSecond)), now: () => number = Date.now): RateLimiter {
  if (!Number.isFinite(perSecond) || perSecond <= 0) return { acquire: async () => undefined }
  let tokens = burst
  let last = now()
  let queue: Promise<void> = Promise.resolve()
  const take = async (): Promise<void> => {
    for (;;) {
      const t = now()
      tokens = Math.min(burst, tokens + ((t - last) / 1000) * perSecond)
      last = t
      if (tokens >= 1) {
        tokens -= 1
        return
      }
      await sleep(Math.ceil(((1 - tokens) / perSecond) * 1000))
    }
  }
  return {
    acquire() {
      // callers are served in arrival order
      const turn = queue.then(take)
      queue = turn.catch(() => undefined)
      return turn
    },
  }
}

let shared: RateLimiter | undefined

/** The process's limiter for inline judge calls: FORGE_JUDGE_RATE calls per second (default unlimited). */
export function sharedJudgeLimiter(env: NodeJS.ProcessEnv = process.env): RateLimiter {
  shared ??= createRateLimiter(readSetting('judgeRate', env))
  return shared
}
