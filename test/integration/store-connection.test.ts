/**
 * A store connection carries INSERT_SETTINGS itself (store/clickhouse.ts): a chDB connection SETs them
 * once when it is opened, so no insert passes settings of its own (chDB would parse them as a second
 * statement with every insert, issue 15) and a row holding half a UTF-16 pair still goes in as text.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { AttemptResult } from '../../core/contracts/index.js'
import { INSERT_SETTINGS, openClickHouse, queryRows, type ClickHouseClient } from '../../store/clickhouse.js'
import { migrate } from '../../store/migrations.js'
import { insertAttempts } from '../../store/repositories.js'

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

const attempt = (n: number, output: string): AttemptResult => ({
  attempt_uid: `conn/c0/t/${n}`,
  run_id: 'conn',
  config_id: 'c0',
  suite: 's',
  task_id: 't',
  attempt: n,
  adapter: 'mock',
  outcome: 'pass',
  validity: 'valid',
  failure_bucket: null,
  budget_limit: null,
  grades: [],
  invariants: [],
  instruction: 'x',
  output,
  self_report: '',
  error: '',
  cost_usd: 0,
  latency_ms: 1,
  tool_call_count: 0,
  input_tokens: 0,
  output_tokens: 0,
  model: 'm',
  decoding: {},
  price_table_version: 'v1',
  seed: '1',
  worker_id: 'w',
  started_at: 1_764_470_000_000,
  finished_at: 1_764_470_000_001,
  tool_calls: [],
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
    await insertAttempts(client, [attempt(0, 'half \ud800 pair'), attempt(1, 'fine')], 1_764_470_001_000)
    const rows = await queryRows<{ attempt: number; output: string }>(client, "SELECT attempt, output FROM attempts FINAL WHERE run_id = 'conn' ORDER BY attempt")
    expect(rows).toEqual([
      { attempt: 0, output: 'half \\ud800 pair' },
      { attempt: 1, output: 'fine' },
    ])
  })
})
