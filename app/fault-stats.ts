/**
 * Fault statistics of stored runs: recovery rates and the robustness drop of one run (shown by
 * `forge stats`), the recovery curve of a sweep (`forge stats --fault-sweep`, `forge run --fault-sweep`)
 * and two agents' curves compared (`forge compare --fault-sweep A --fault-sweep B`). Counts come from
 * ClickHouse (store/fault-queries.ts), figures and tests from core/fault-stats.ts.
 */
import { compareCurves, recoveryCurve, recoveryFigures, robustnessDrop, type CurveComparison, type RecoveryCurve, type RecoveryFigures, type RobustnessDrop } from '../core/fault-stats.js'
import type { RunRecord } from '../core/contracts/index.js'
import type { StoreReader } from '../store/clickhouse.js'
import { faultedCounts, faultTotals, findCleanRun, newestSweepId, sweepRunCounts, taskCounts } from '../store/fault-queries.js'
import { ConfigError } from '../stack/errors.js'

export interface FaultStats {
  /** the run's fault stamps */
  profile: { hash: string; mode: string; rate: number; sweep_id: string }
  /** faults injected over the run (tool and model calls) */
  injected: number
  recovery: RecoveryFigures
  /** against the same agent without faults; `unavailable` says why when no such run is stored */
  robustness: RobustnessDrop | { unavailable: string }
}

/** A run's fault statistics, or undefined for a run without a fault profile. */
export async function getFaultStats(reader: StoreReader, run: RunRecord | undefined, runId: string): Promise<FaultStats | undefined> {
  // a run without a profile injected nothing: its stats cost no extra query
  if (run?.fault_profile_hash === undefined || run.fault_profile_hash === '') return undefined
  const totals = await faultTotals(reader, runId)
  const [counts, tasks] = await Promise.all([faultedCounts(reader, runId), taskCounts(reader, runId)])
  const clean = await findCleanRun(reader, run)
  const robustness: FaultStats['robustness'] =
    clean === undefined
      ? { unavailable: `no fault-free run of config ${run.config_id} on this suite content is stored: run it once without --fault-* flags (same --seed) to measure the drop` }
      : robustnessDrop(clean.run_id, await taskCounts(reader, clean.run_id), tasks)
  return {
    profile: { hash: run.fault_profile_hash, mode: run.fault_mode ?? '', rate: run.fault_rate ?? 0, sweep_id: run.fault_sweep_id ?? '' },
    injected: totals.injected,
    recovery: recoveryFigures(counts, totals.attempts, totals.met),
    robustness,
  }
}

/** The recovery curve of a stored sweep (`latest` = the newest); a ConfigError when none is stored. */
export async function getRecoveryCurve(reader: StoreReader, sweep: string): Promise<RecoveryCurve> {
  const sweepId = sweep === 'latest' ? await newestSweepId(reader) : sweep
  if (sweepId === undefined) throw new ConfigError('no fault sweep is stored yet: run one with forge run --fault-sweep 0,0.1,0.2,0.4')
  const runs = await sweepRunCounts(reader, sweepId)
  if (runs.length === 0) throw new ConfigError(`no fault sweep "${sweepId}" is stored (its runs carry it as fault_sweep_id; see forge runs list)`)
  return recoveryCurve(sweepId, runs)
}

/** Two stored sweeps' curves compared rate by rate. */
export async function compareSweeps(reader: StoreReader, a: string, b: string): Promise<{ a: RecoveryCurve; b: RecoveryCurve; comparison: CurveComparison }> {
  const [curveA, curveB] = await Promise.all([getRecoveryCurve(reader, a), getRecoveryCurve(reader, b)])
  const comparison = compareCurves(curveA, curveB)
  if (comparison.points.length === 0) throw new ConfigError(`sweeps ${curveA.sweep_id} and ${curveB.sweep_id} share no fail rate: nothing to compare`)
  return { a: curveA, b: curveB, comparison }
}
