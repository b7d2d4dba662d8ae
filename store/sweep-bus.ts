/** The sweep's state on the results stream: the ingester stores it in `sweeps` and `sweep_cells`. */
import type { JetStreamClient } from '@nats-io/jetstream'
import type { SweepRecord } from '../core/contracts/sweep.js'
import { publishResult } from './bus.js'
import { BusError } from './errors.js'

/** Inside the results stream's `forge.results.>`: no stream change needed. */
export const SWEEP_SUBJECT = 'forge.results.sweep'

/** Publishes one revision of a sweep; a retried publish of the same revision is dropped by JetStream. */
export async function publishSweepRecord(js: JetStreamClient, record: SweepRecord): Promise<void> {
  try {
    // signed like every results message (store/bus-auth.ts), keyed by the sweep id
    await publishResult(js, SWEEP_SUBJECT, record, `sweep/${record.sweep_id}/${record.revision}`, record.sweep_id)
  } catch (error) {
    throw new BusError(`publishing sweep ${record.sweep_id} (revision ${record.revision}) failed: ${(error as Error).message}`, { cause: error })
  }
}
