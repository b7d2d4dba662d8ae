/**
 * A store connection carries INSERT_SETTINGS itself (store/clickhouse.ts): a chDB connection SETs them
 * once when it is opened, so no insert passes settings of its own (chDB would parse them as a second
 * statement with every insert, issue 15) and a row holding half a UTF-16 pair still goes in as text.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { INSERT_SETTINGS, openClickHouse, queryRows, type ClickHouseClient } from '../../store/clickhouse.js'
import { migrate } from '../../store/migrations.js'
import { insertAttempts } from '../../store/repositories.js'
import { attempt } from '../helpers/attempts.js'

let dir: string
let client: ClickHouseClient

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'forge-store-connection-'))
  client = await openClickHouse({ kind: 'embedded', path: dir })
  await migrate(client)
})

afterAll(async () => {
  await client?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('an embedded store connection', () => {
  it('has every insert setting from the moment it is opened', async () => {
    for (const [name, value] of Object.entries(INSERT_SETTINGS)) {
      const rows = await queryRows<{ v: string | number }>(client, `SELECT getSetting('${name}') AS v`)
      expect(Number(rows[0]?.v), name).toBe(value)
    }
  })

  it('stores a row holding half a UTF-16 pair as the escape text, with the good rows of its insert, though the insert passes no settings', async () => {
    // JSON.stringify writes the lone surrogate as the escape \ud800, which chDB refuses by default
    await insertAttempts(client, [attempt('conn', 't', 0, { output: 'half \ud800 pair' }), attempt('conn', 't', 1, { output: 'fine' })], 1_764_470_001_000)
    const rows = await queryRows<{ attempt: number; output: string }>(client, "SELECT attempt, output FROM attempts FINAL WHERE run_id = 'conn' ORDER BY attempt")
    expect(rows).toEqual([
      { attempt: 0, output: 'half \\ud800 pair' },
      { attempt: 1, output: 'fine' },
    ])
  })
})
