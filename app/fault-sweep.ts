/**
 * `forge run --fault-sweep 0,0.1,0.2,0.4`: the suite at several fail rates, one run per rate with the
 * profile's every rule set to that rate, the same seed throughout (so the faults of a lower rate are
 * a subset of a higher one's, core/faults.ts), all stamped with one sweep id. The curve is read back
 * from the store, so `forge stats --fault-sweep <id>` draws the same one later.
 */
import { randomBytes } from 'node:crypto'
import type { FaultProfile } from '../core/contracts/index.js'
import type { RecoveryCurve } from '../core/fault-stats.js'
import { profileAtRate } from '../core/faults.js'
import type { ForgeConfig } from '../config/index.js'
import { ConfigError } from '../core/errors.js'
import { getRecoveryCurve } from './fault-stats.js'
import { faultPlanOf } from './faults.js'
import { mintRunId } from '../core/identity.js'
import type { RunConfigInput } from './run-config.js'
import { runSuite, type RunEvent, type RunReport } from './run.js'
import { openReader } from './store-access.js'

export interface FaultSweepReport {
  sweep_id: string
  seed: string
  rates: number[]
  runs: RunReport[]
  curve: RecoveryCurve
}

export type SweepEvent = RunEvent | { kind: 'sweep-point'; rate: number; index: number; of: number; run_id: string }

export async function runFaultSweep(
  config: ForgeConfig,
  run: RunConfigInput,
  sweep: { profile: FaultProfile; rates: readonly number[] },
  signal?: AbortSignal,
  onEvent: (event: SweepEvent) => void = () => undefined,
): Promise<FaultSweepReport> {
  if (sweep.rates.length < 2) throw new ConfigError(`a fault sweep needs at least two fail rates, got ${sweep.rates.join(', ') || 'none'}`)
  const base = run.run_id ?? mintRunId(Date.now(), randomBytes(3).toString('hex'))
  const sweepId = `${base}-sweep`
  if (!/^[A-Za-z0-9_-]{1,90}$/.test(base)) throw new ConfigError(`--run-id may contain only letters, digits, _ and - (got "${base}")`)
  // one seed for every point: the curve compares the same attempts under more faults
  const seed = run.seed ?? randomBytes(4).toString('hex')
  const runs: RunReport[] = []
  for (const [index, rate] of sweep.rates.entries()) {
    const runId = `${base}-f${index}`
    onEvent({ kind: 'sweep-point', rate, index, of: sweep.rates.length, run_id: runId })
    runs.push(await runSuite(config, { ...run, run_id: runId, seed, faults: faultPlanOf(profileAtRate(sweep.profile, rate), sweepId) }, onEvent, signal))
    if (signal?.aborted) break
  }
  const reader = await openReader(config)
  try {
    return { sweep_id: sweepId, seed, rates: [...sweep.rates], runs, curve: await getRecoveryCurve(reader, sweepId) }
  } finally {
    await reader.close()
  }
}
