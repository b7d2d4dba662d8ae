/** The sweep store on real chDB: a sweep that reads as completed has its final cells (a clean CI race). */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SweepRecord, SweepSpec } from '../../core/contracts/sweep.js'
import { directReader, openClickHouse, type ClickHouseClient } from '../../store/clickhouse.js'
import { migrate } from '../../store/migrations.js'
import { getSweep, insertSweeps } from '../../store/sweep-repositories.js'

let dir: string
let client: ClickHouseClient

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'forge-sweep-store-'))
  client = await openClickHouse({ kind: 'embedded', path: dir })
  await migrate(client)
})
afterAll(async () => {
  await client?.close()
  rmSync(dir, { recursive: true, force: true })
})

const cell = (status: 'pending' | 'completed') => ({
  cell: 0, run_id: 's1-c0', suite: 'toy_math', adapter: 'mock', model: '', seed: 'a', baseline: 'b', status, verdict: status === 'completed' ? ('no_baseline' as const) : ('pending' as const),
  ...(status === 'completed' ? { config_id: 'mock-1', attempts: 30 } : {}),
})
const sweep = (revision: number, status: 'running' | 'completed') =>
  SweepRecord.parse({
    sweep_id: 's1', name: 'nightly', schedule_id: '', spec: SweepSpec.parse({ name: 'nightly', suites: ['toy_math'], adapters: ['mock'], seeds: ['a'] }),
    status, verdict: status === 'completed' ? 'no_baseline' : 'pending', started_at: Date.UTC(2026, 11, 4), finished_at: status === 'completed' ? Date.UTC(2026, 11, 4, 1) : null,
    revision, cells: [cell(status === 'completed' ? 'completed' : 'pending')],
  })

describe('insertSweeps', () => {
  it('stores a revision\'s cells before its sweep row, so a reader that sees the sweep completed sees its final cells', async () => {
    const reader = directReader(client)
    await insertSweeps(client, [sweep(1, 'running')])
    // what a reader sees at the moment the completed sweep row goes in
    let seenAtSweepInsert: Awaited<ReturnType<typeof getSweep>>
    const watched = new Proxy(client, {
      get(target, prop, receiver) {
        if (prop !== 'insert') return Reflect.get(target, prop, receiver)
        return async (params: Parameters<ClickHouseClient['insert']>[0]) => {
          if (params.table === 'sweeps') seenAtSweepInsert = await getSweep(reader, 's1')
          return target.insert(params)
        }
      },
    })
    await insertSweeps(watched, [sweep(2, 'completed')])
    expect(seenAtSweepInsert!).toMatchObject({ status: 'running', revision: 1, cells: [{ status: 'completed', attempts: 30 }] })
    expect(await getSweep(reader, 's1')).toMatchObject({ status: 'completed', revision: 2, cells: [{ cell: 0, status: 'completed', verdict: 'no_baseline', attempts: 30 }] })
  })
})
