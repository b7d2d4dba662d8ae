/**
 * Run ids are unique: a run id the user names (`--run-id`) that an earlier run already used is an
 * error (exit 2), not a second run mixed into the first — within JetStream's dedup window the new
 * run's attempts would be dropped as duplicates and it would print the first run's numbers under
 * its own seed; past it, they would overwrite the first run's rows. Checked against the store
 * (every run ever recorded) before anything starts, and by Temporal (REJECT_DUPLICATE workflow
 * ids) for a run started meanwhile. Resuming a run is not this module's business.
 */
import { ConfigError } from '../core/errors.js'
import type { StoreReader } from '../store/clickhouse.js'
import { countAttempts, getRun } from '../store/repositories.js'

/** Thrown when a run names a run id an earlier run already used. */
export class RunIdInUseError extends ConfigError {
  override name = 'RunIdInUseError'
}

/** Throws RunIdInUseError when the store already holds a run, or attempts, under `runId`. */
export async function refuseReusedRunId(reader: StoreReader, runId: string): Promise<void> {
  const [existing, attempts] = await Promise.all([getRun(reader, runId), countAttempts(reader, runId)])
  if (existing === undefined && attempts === 0) return
  const what =
    existing !== undefined
      ? `a ${existing.status} run of suite ${existing.suite} (adapter ${existing.adapter}, started ${new Date(existing.started_at).toISOString()}, ${attempts} attempts stored)`
      : `${attempts} stored attempts`
  throw new RunIdInUseError(`--run-id ${runId} is already used by ${what}; run ids are unique: choose another (or leave --run-id out for a new one)`)
}

/** The error for a run whose workflow id Temporal already knows (a run with this id started meanwhile). */
export function runIdTakenByTemporal(runId: string, cause: unknown): RunIdInUseError {
  return new RunIdInUseError(`--run-id ${runId} is already used by a run Temporal knows (workflow forge-run-${runId}); run ids are unique: choose another`, { cause })
}
