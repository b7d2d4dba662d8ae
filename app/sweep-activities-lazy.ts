/**
 * The sweep's activities as a worker registers them: each loads app/sweep-activities.ts with the
 * first sweep activity this process runs. Its imports (planning, comparing, statistics) cost a worker
 * ~0.1 s of start-up that a `forge run` never needs (issue 15).
 */
import type { JetStreamClient } from '@nats-io/jetstream'
import type { NatsConnection } from '../store/bus.js'
import type { SweepActivities } from '../workers/sweep-activity-types.js'

export function lazySweepActivities(env: NodeJS.ProcessEnv = process.env): (deps: { nc: NatsConnection; js: JetStreamClient }) => SweepActivities {
  return (deps) => {
    let loaded: Promise<SweepActivities> | undefined
    const load = (): Promise<SweepActivities> => (loaded ??= import('./sweep-activities.js').then((m) => m.sweepActivitiesFor(env)(deps)))
    return {
      // every argument forwarded as given (recordSweep's grant is its second)
      planSweepCell: async (...args) => (await load()).planSweepCell(...args),
      evaluateSweepCell: async (...args) => (await load()).evaluateSweepCell(...args),
      recordSweep: async (...args) => (await load()).recordSweep(...args),
    }
  }
}
