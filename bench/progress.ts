/**
 * Live finishes of a run for the benches: a RunObserver (app/run.ts) that records when each attempt
 * finished (its first progress event; a retried attempt counts once), so a bench can measure the
 * steady rate apart from worker start-up and the wait for storage, and report progress while it runs.
 */
import type { RunObserver } from '../app/run.js'
import { progressEventsOf, subjects } from '../store/bus.js'

export interface Finishes {
  observe: RunObserver
  /** performance.now() of each attempt's first progress event, in arrival order */
  times: number[]
}

export function followFinishes(): Finishes {
  const times: number[] = []
  const seen = new Set<string>()
  const observe: RunObserver = (nc, runId) => {
    const sub = nc.subscribe(subjects.progress(runId), {
      callback: (error, msg) => {
        if (error) return
        const at = performance.now()
        for (const { attempt_uid: uid } of progressEventsOf(msg.json())) {
          if (seen.has(uid)) continue
          seen.add(uid)
          times.push(at)
        }
      },
    })
    return { stop: () => sub.unsubscribe() }
  }
  return { observe, times }
}
