/**
 * The fleet rehearsal's ClickHouse (chDB behind ClickHouse's HTTP interface, test/fakes/chdb-http.ts)
 * runs Forge's store code unchanged over FORGE_CLICKHOUSE_URL: migrations, inserts, FINAL reads.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openClickHouse, queryRows, type ClickHouseClient } from '../../store/clickhouse.js'
import { migrate, migrations } from '../../store/migrations.js'
import { insertRuns, getRun } from '../../store/repositories.js'
import { directReader } from '../../store/clickhouse.js'
import { startChdbHttpServer, type ChdbHttpServer } from '../fakes/chdb-http.js'

let dir: string
let server: ChdbHttpServer
let client: ClickHouseClient

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'forge-chdb-http-'))
  server = await startChdbHttpServer(join(dir, 'store'))
  client = await openClickHouse({ kind: 'server', url: server.url })
})
afterAll(async () => {
  await client?.close()
  await server?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('chDB behind the ClickHouse HTTP interface', () => {
  it('migrates, inserts and reads back with FINAL and query parameters, as against a ClickHouse server', async () => {
    expect(await migrate(client)).toEqual(migrations.map((m) => m.version))
    const run = {
      run_id: 'r1', suite: 'toy_math', suite_path: '/s', adapter: 'mock', config_id: 'c', attempts: 2, task_count: 3, seed: 'x',
      status: 'running' as const, started_at: 1_700_000_000_000, finished_at: null, updated_at: 1_700_000_000_000, price_table_version: 'v',
      price_table_date: '', suite_hash: '', judge_model: '', judge_prompt_version: '', stop_width: 0, stopped_tasks: [],
    }
    await insertRuns(client, [run])
    await insertRuns(client, [{ ...run, status: 'completed', finished_at: 1_700_000_001_000, updated_at: 1_700_000_001_000 }])
    expect(await getRun(directReader(client), 'r1')).toMatchObject({ run_id: 'r1', status: 'completed', finished_at: 1_700_000_001_000 })
    expect(await queryRows(client, 'SELECT count() AS n FROM runs WHERE run_id = {id:String}', { id: 'r1' })).toEqual([{ n: '2' }])
    await expect(queryRows(client, 'SELECT nope FROM runs')).rejects.toThrow(/Unknown expression identifier|Missing columns|nope/)
    // 7 migration records and 2 run rows
    expect(server.counts.insert).toBe(migrations.length + 2)
  })
})
