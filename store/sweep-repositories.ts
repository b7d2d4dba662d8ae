/** The sweep tables: insert a sweep's state (the ingester), read the newest or one by id (forge sweep show). */
import type { ClickHouseClient } from '@clickhouse/client'
import type { SweepRecord } from '../core/contracts/sweep.js'
import type { StoreReader } from './clickhouse.js'
import { rowsToSweep, sweepToRows, type SweepCellRow, type SweepRow } from './sweep-converters.js'

/**
 * Stores sweep records: each revision's cells first, then the sweep row. `forge sweep` waits for the
 * sweep row to say completed and then reads the cells, so cells inserted after it could be read at
 * an older revision (a clean CI run printed a completed sweep whose first cell was still pending).
 */
export async function insertSweeps(client: ClickHouseClient, records: SweepRecord[], now: number = Date.now()): Promise<void> {
  if (records.length === 0) return
  const rows = records.map((r) => sweepToRows(r, now))
  const cells = rows.flatMap((r) => r.cells)
  if (cells.length > 0) await client.insert({ table: 'sweep_cells', values: cells, format: 'JSONEachRow' })
  await client.insert({ table: 'sweeps', values: rows.map((r) => r.sweep), format: 'JSONEachRow' })
}

export interface SweepSummary {
  sweep_id: string
  name: string
  schedule_id: string
  status: string
  verdict: string
  cell_count: number
  cells_done: number
  regressed: number
  failed: number
  started_at: string
  finished_at: string | null
}

/** The newest sweeps first (optionally of one name). */
export async function listSweeps(reader: StoreReader, opts: { name?: string; limit: number }): Promise<SweepSummary[]> {
  const rows = await reader.query<SweepRow>(
    `SELECT * FROM sweeps FINAL ${opts.name === undefined ? '' : 'WHERE name = {name:String}'} ORDER BY started_at DESC, sweep_id DESC LIMIT {limit:UInt32}`,
    { ...(opts.name === undefined ? {} : { name: opts.name }), limit: opts.limit },
  )
  return rows.map((r) => ({
    sweep_id: r.sweep_id,
    name: r.name,
    schedule_id: r.schedule_id,
    status: r.status,
    verdict: r.verdict,
    cell_count: Number(r.cell_count),
    cells_done: Number(r.cells_done),
    regressed: Number(r.regressed),
    failed: Number(r.failed),
    started_at: r.started_at,
    finished_at: r.finished_at,
  }))
}

/** A sweep by id, or the newest with `latest` (of one name with `latest:<name>`); undefined when none is stored. */
export async function getSweep(reader: StoreReader, ref: string): Promise<SweepRecord | undefined> {
  const latest = /^latest(?::(.+))?$/.exec(ref)
  const rows = latest
    ? await reader.query<SweepRow>(
        `SELECT * FROM sweeps FINAL ${latest[1] === undefined ? '' : 'WHERE name = {name:String}'} ORDER BY started_at DESC, sweep_id DESC LIMIT 1`,
        latest[1] === undefined ? {} : { name: latest[1] },
      )
    : await reader.query<SweepRow>('SELECT * FROM sweeps FINAL WHERE sweep_id = {id:String}', { id: ref })
  const sweep = rows[0]
  if (!sweep) return undefined
  // the cells of the sweep's newest revision: a cell row is rewritten with every revision
  const cells = await reader.query<SweepCellRow>('SELECT * FROM sweep_cells FINAL WHERE sweep_id = {id:String} ORDER BY cell', { id: sweep.sweep_id })
  return rowsToSweep(sweep, cells)
}
