/**
 * The queries behind fault statistics (core/fault-stats.ts): attempts that met injected faults and
 * how many passed, per task and kind; the fault-free run a faulted run is measured against; the
 * runs of a sweep. All reads use FINAL; nothing per attempt leaves the store.
 */
import type { FaultedCount, SweepRunCounts, TaskCount } from '../core/fault-stats.js'
import type { RunRecord } from '../core/contracts/index.js'
import type { StoreReader } from './clickhouse.js'
import { rowToRun, type RunRow } from './converters.js'

const num = (value: string | number): number => Number(value)
/** an attempt met a fault that left a call's answer unusable (anything but `slow`) */
const DISRUPTED = `hasAny(injected_fault_kinds, ['timeout', '500', 'garbage', 'rate_limit'])`

/** Per task: attempts that met each kind (and, as kind '', any disruptive kind), how many passed, and the faults. */
export async function faultedCounts(reader: StoreReader, runId: string): Promise<FaultedCount[]> {
  const rows = await reader.query<{ task_id: string; kind: string; n: string | number; k: string | number; calls: string | number }>(
    `SELECT task_id, toString(kind) AS kind, count() AS n, countIf(outcome = 'pass') AS k, sum(countEqual(injected_fault_kinds, kind)) AS calls
     FROM attempts FINAL ARRAY JOIN arrayDistinct(injected_fault_kinds) AS kind
     WHERE run_id = {run:String}
     GROUP BY task_id, kind
     UNION ALL
     SELECT task_id, '' AS kind, count() AS n, countIf(outcome = 'pass') AS k, sum(injected_faults) AS calls
     FROM attempts FINAL WHERE run_id = {run:String} AND ${DISRUPTED}
     GROUP BY task_id
     ORDER BY task_id, kind`,
    { run: runId },
  )
  return rows.map((r) => ({ task_id: r.task_id, kind: r.kind, n: num(r.n), k: num(r.k), calls: num(r.calls) }))
}

/** Attempts of a run, those that met any injected fault, and the faults injected. */
export async function faultTotals(reader: StoreReader, runId: string): Promise<{ attempts: number; met: number; injected: number }> {
  const rows = await reader.query<{ attempts: string | number; met: string | number; injected: string | number }>(
    `SELECT count() AS attempts, countIf(injected_faults > 0) AS met, sum(injected_faults) AS injected FROM attempts FINAL WHERE run_id = {run:String}`,
    { run: runId },
  )
  const row = rows[0]
  return { attempts: num(row?.attempts ?? 0), met: num(row?.met ?? 0), injected: num(row?.injected ?? 0) }
}

/** Attempts and passes per task of a run. */
export async function taskCounts(reader: StoreReader, runId: string): Promise<TaskCount[]> {
  const rows = await reader.query<{ task_id: string; n: string | number; k: string | number }>(
    `SELECT task_id, count() AS n, countIf(outcome = 'pass') AS k FROM attempts FINAL WHERE run_id = {run:String} GROUP BY task_id ORDER BY task_id`,
    { run: runId },
  )
  return rows.map((r) => ({ task_id: r.task_id, n: num(r.n), k: num(r.k) }))
}

/**
 * The fault-free run a faulted run is measured against: its sweep's rate-0 point when it has one,
 * else the newest completed run of the same suite content and configuration without faults (one
 * with the same seed first).
 */
export async function findCleanRun(reader: StoreReader, run: RunRecord): Promise<RunRecord | undefined> {
  if (run.fault_sweep_id) {
    const rows = await reader.query<RunRow>(
      `SELECT * FROM runs FINAL WHERE fault_sweep_id = {sweep:String} AND fault_rate = 0 AND run_id != {run:String} ORDER BY started_at DESC LIMIT 1`,
      { sweep: run.fault_sweep_id, run: run.run_id },
    )
    if (rows[0]) return rowToRun(rows[0])
  }
  const rows = await reader.query<RunRow>(
    `SELECT * FROM runs FINAL
     WHERE suite = {suite:String} AND config_id = {config:String} AND suite_hash = {hash:String}
       AND fault_profile_hash = '' AND status = 'completed' AND run_id != {run:String}
     ORDER BY (seed = {seed:String}) DESC, started_at DESC LIMIT 1`,
    { suite: run.suite, config: run.config_id, hash: run.suite_hash, run: run.run_id, seed: run.seed },
  )
  return rows[0] ? rowToRun(rows[0]) : undefined
}

/** The runs of a sweep with their per-task counts, faulted attempts and injected faults. */
export async function sweepRunCounts(reader: StoreReader, sweepId: string): Promise<SweepRunCounts[]> {
  const runs = (await reader.query<RunRow>(`SELECT * FROM runs FINAL WHERE fault_sweep_id = {sweep:String} ORDER BY fault_rate, started_at`, { sweep: sweepId })).map(rowToRun)
  if (runs.length === 0) return []
  const rows = await reader.query<{ run_id: string; task_id: string; n: string | number; k: string | number; fn: string | number; fk: string | number; injected: string | number }>(
    `SELECT run_id, task_id, count() AS n, countIf(outcome = 'pass') AS k,
       countIf(${DISRUPTED}) AS fn, countIf(${DISRUPTED} AND outcome = 'pass') AS fk, sum(injected_faults) AS injected
     FROM attempts FINAL WHERE run_id IN {runs:Array(String)}
     GROUP BY run_id, task_id ORDER BY run_id, task_id`,
    { runs: runs.map((r) => r.run_id) },
  )
  return runs.map((run) => {
    const mine = rows.filter((r) => r.run_id === run.run_id)
    return {
      run_id: run.run_id,
      rate: run.fault_rate ?? 0,
      mode: run.fault_mode ?? '',
      tasks: mine.map((r) => ({ task_id: r.task_id, n: num(r.n), k: num(r.k) })),
      faulted: { n: mine.reduce((a, r) => a + num(r.fn), 0), k: mine.reduce((a, r) => a + num(r.fk), 0) },
      injected: mine.reduce((a, r) => a + num(r.injected), 0),
    }
  })
}

/** The newest sweep's id, or undefined when none is stored. */
export async function newestSweepId(reader: StoreReader): Promise<string | undefined> {
  const rows = await reader.query<{ id: string }>(`SELECT fault_sweep_id AS id FROM runs FINAL WHERE fault_sweep_id != '' ORDER BY started_at DESC LIMIT 1`, {})
  return rows[0]?.id
}
