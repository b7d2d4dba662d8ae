import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openClickHouse, queryRows, type ClickHouseClient } from '../../store/clickhouse.js'
import { migrate, migrations, rollback } from '../../store/migrations.js'

let dir: string
let client: ClickHouseClient

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'forge-migrations-'))
  client = await openClickHouse({ kind: 'embedded', path: dir })
})
afterAll(async () => {
  await client?.close()
  rmSync(dir, { recursive: true, force: true })
})

const tables = async () =>
  (await queryRows<{ name: string }>(client, "SELECT name FROM system.tables WHERE database = currentDatabase() AND name != 'schema_migrations' ORDER BY name")).map((r) => r.name)

describe('ClickHouse migrations (chDB)', () => {
  it('applies every migration once, in order, and is a no-op the second time', async () => {
    expect(await migrate(client)).toEqual(migrations.map((m) => m.version))
    expect(await migrate(client)).toEqual([])
    expect(await tables()).toEqual(['attempts', 'runs', 'tool_calls'])
  })

  it('rolls back newest first and re-applies', async () => {
    expect(await rollback(client, 1)).toEqual([3, 2])
    expect(await tables()).toEqual(['runs'])
    expect(await migrate(client)).toEqual([2, 3])
    expect(await tables()).toEqual(['attempts', 'runs', 'tool_calls'])
  })
})
