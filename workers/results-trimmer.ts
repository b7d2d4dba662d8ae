/**
 * The ingester's trimming of the results stream (store/results-retention.ts): every
 * `trimIntervalMs(keep)` it purges the messages it stored that were published more than
 * FORGE_RESULTS_KEEP seconds ago, so the bus's disk holds minutes of results, not a week of them.
 */
import type { NatsConnection } from '@nats-io/transport-node'
import { trimIntervalMs } from '../core/results-retention.js'
import type { Logger } from '../engine/logger.js'
import { trimResultsStream, type TrimResult } from '../store/results-retention.js'
import { processFields } from './ingester-log.js'

export interface ResultsTrimmer {
  /** stops the timer and waits for a trim under way */
  stop(): Promise<void>
}

/**
 * Trims every `trimIntervalMs(keepMs)` until stopped, counting what it purged in
 * `stats.trimmed_messages` (the ingester's stats: its ping and /metrics); a failed trim is logged
 * and tried again next time.
 */
export function startResultsTrimmer(nc: NatsConnection, keepMs: number, logger: Logger, stats: { trimmed_messages: number }): ResultsTrimmer {
  let running: Promise<TrimResult | undefined> | undefined
  let failing = false
  // one trim at a time: a slow one (a bus under load) is not started again on top of itself
  const trimNow = (): Promise<TrimResult | undefined> => {
    running ??= trimResultsStream(nc, keepMs)
      .then((result) => {
        stats.trimmed_messages += result.purged
        if (result.purged > 0) logger.info({ ...processFields('bus'), purged: result.purged, first_seq: result.firstSeq, keep_s: keepMs / 1000 }, 'trimmed stored results off the results stream')
        if (failing) logger.info(processFields('bus'), 'trimming the results stream works again')
        failing = false
        return result
      })
      .catch((error: unknown) => {
        // once per spell: a bus that is down says so elsewhere too
        if (!failing) logger.warn({ ...processFields('bus'), err: error }, 'trimming the results stream failed; it is tried again (nothing stored is lost: the stream keeps more, not less)')
        failing = true
        return undefined
      })
      .finally(() => {
        running = undefined
      })
    return running
  }
  const timer = setInterval(() => void trimNow(), trimIntervalMs(keepMs))
  timer.unref()
  return {
    async stop() {
      clearInterval(timer)
      await running
    },
  }
}
