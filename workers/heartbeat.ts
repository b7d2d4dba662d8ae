/**
 * An activity's heartbeat while it runs: every third of its heartbeat timeout, so Temporal notices a
 * worker that died within that timeout (and tries the activity again elsewhere), however long a step
 * of the activity takes — an attempt's agent, a completeness check's store query.
 */
import { Context } from '@temporalio/activity'

/** Starts heartbeating (at once, then every third of the timeout) with `details()`; returns its stop. A no-op outside an activity or without a heartbeat timeout. */
export function startHeartbeat(details: () => unknown = () => undefined): () => void {
  let ctx: Context
  try {
    ctx = Context.current()
  } catch {
    return () => undefined // called outside an activity (unit tests)
  }
  const timeout = ctx.info.heartbeatTimeoutMs
  if (!timeout) return () => undefined
  ctx.heartbeat(details())
  const timer = setInterval(() => ctx.heartbeat(details()), Math.max(200, Math.floor(timeout / 3)))
  return () => clearInterval(timer)
}
