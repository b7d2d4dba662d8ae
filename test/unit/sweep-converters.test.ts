import { describe, expect, it } from 'vitest'
import { SweepRecord, SweepSpec } from '../../core/contracts/sweep.js'
import { rowsToSweep, sweepToRows } from '../../store/sweep-converters.js'

const record = SweepRecord.parse({
  sweep_id: 'nightly-1',
  name: 'nightly',
  schedule_id: 'nightly',
  spec: SweepSpec.parse({ name: 'nightly', suites: ['toy_math'], adapters: ['mock'], seeds: ['a', 'b'] }),
  status: 'completed',
  verdict: 'regressed',
  started_at: Date.parse('2026-12-01T02:00:00.125Z'),
  finished_at: Date.parse('2026-12-01T02:10:00.000Z'),
  revision: 5,
  cells: [
    { cell: 1, run_id: 'nightly-1-c1', suite: 'toy_math', adapter: 'mock', model: '', seed: 'b', baseline: 'nightly.toy_math.mock.default', status: 'failed', verdict: 'failed', error: 'the run failed: boom' },
    {
      cell: 0, run_id: 'nightly-1-c0', suite: 'toy_math', adapter: 'mock', model: '', seed: 'a', baseline: 'nightly.toy_math.mock.default', status: 'completed', verdict: 'regressed',
      config_id: 'mock-1234', attempts: 30, pass_rate: 0.4, harness_errors: 1, baseline_version: 2, baseline_run_id: 'r-old', baseline_pass_rate: 0.9,
      findings: { success: 2, tool_usage: 0, cost: 0, latency: 1, tool_calls: 0 }, promoted_version: null,
    },
  ],
})

describe('sweep converters', () => {
  it('writes one sweep row with counts and one row per cell at the record revision', () => {
    const rows = sweepToRows(record, Date.parse('2026-12-01T02:10:01Z'))
    expect(rows.sweep).toEqual({
      sweep_id: 'nightly-1', name: 'nightly', schedule_id: 'nightly', spec: JSON.stringify(record.spec), status: 'completed', verdict: 'regressed',
      cell_count: 2, cells_done: 2, regressed: 1, failed: 1,
      started_at: '2026-12-01 02:00:00.125', finished_at: '2026-12-01 02:10:00.000', revision: 5, ingested_at: '2026-12-01 02:10:01.000',
    })
    expect(rows.cells.map((c) => [c.cell, c.revision, c.findings])).toEqual([
      [1, 5, ''],
      [0, 5, '{"success":2,"tool_usage":0,"cost":0,"latency":1,"tool_calls":0}'],
    ])
  })

  it('reads back the same record, cells in order (numbers as ClickHouse returns them: strings for 64-bit)', () => {
    const rows = sweepToRows(record, 0)
    const asStored = rows.cells.map((c) => ({ ...c, cell: String(c.cell), attempts: String(c.attempts) })) as unknown as typeof rows.cells
    expect(rowsToSweep(rows.sweep, asStored)).toEqual({ ...record, cells: [...record.cells].sort((a, b) => a.cell - b.cell) })
  })
})
