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
      planSweepCell: async (input) => (await load()).planSweepCell(input),
      evaluateSweepCell: async (input) => (await load()).evaluateSweepCell(input),
      recordSweep: async (record) => (await load()).recordSweep(record),
    }
  }
}
