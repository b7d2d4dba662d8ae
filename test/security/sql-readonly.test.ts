/**
 * Issue 10: `forge sql` is read-only for real. Against a real embedded store (chDB): every attack
 * of the issue is refused with its reason and changes nothing; ClickHouse's own readonly mode holds
 * where the check is bypassed; reads stop at their time limit; a slow read on the query connection
 * does not hold up an insert on the ingester's.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { directReader, openClickHouse, queryRows, type ClickHouseClient, type StoreReader } from '../../store/clickhouse.js'
import { QueryRefusedError, StoreError } from '../../store/errors.js'
import { migrate } from '../../store/migrations.js'
import { insertRuns } from '../../store/repositories.js'
import { readOnlyQuery } from '../../store/read-only-query.js'

let dir: string
let writer: ClickHouseClient
let reader: StoreReader
const outfile = join(tmpdir(), `forge-outfile-${process.pid}.csv`)

const runCount = async (): Promise<number> => Number((await queryRows<{ n: string | number }>(writer, 'SELECT count() AS n FROM runs FINAL'))[0]!.n)

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'forge-sql-'))
  writer = await openClickHouse({ kind: 'embedded', path: dir })
  await migrate(writer)
  await insertRuns(writer, [
    {
      run_id: 'r1', suite: 'smoke', suite_path: '/s', adapter: 'mock', config_id: 'c0', attempts: 1, task_count: 1, seed: 'x', status: 'completed',
      started_at: 1, finished_at: 2, updated_at: 2, price_table_version: '', price_table_date: '', suite_hash: '', judge_model: '',
      judge_prompt_version: '', stop_width: 0, stopped_tasks: [], isolation: 'sandbox',
    },
  ])
  // a second connection, as the ingester's query service has
  reader = directReader(await openClickHouse({ kind: 'embedded', path: dir }))
})

afterAll(async () => {
  await reader.close()
  await writer.close()
  rmSync(dir, { recursive: true, force: true })
  rmSync(outfile, { force: true })
})

describe('forge sql on a real store', () => {
  it('answers reads, with readonly and the time limit appended', async () => {
    expect(await reader.query('SELECT run_id, isolation FROM runs FINAL')).toEqual([{ run_id: 'r1', isolation: 'sandbox' }])
    expect(await reader.query("SELECT value FROM system.settings WHERE name = 'readonly'")).toEqual([{ value: '1' }])
    expect(await reader.query('SELECT count() AS n FROM runs FINAL SETTINGS max_threads = 1 -- a comment')).toEqual([{ n: 1 }])
  })

  it.each([
    ["WITH 1 AS x INSERT INTO runs SELECT * FROM runs", 'INSERT is not a read'],
    [`INSERT INTO FUNCTION file('${outfile}', 'CSV') SELECT 1`, 'the store is read-only here'],
    ["SELECT * FROM file('/proc/self/environ', 'LineAsString')", 'the table function file()'],
    ["SELECT * FROM url('http://127.0.0.1:9/', 'LineAsString')", 'the table function url()'],
    [`SELECT 1 INTO OUTFILE '${outfile}'`, 'INTO OUTFILE writes a file'],
    ["SELECT * FROM (SELECT * FROM file('/etc/hostname', 'LineAsString') SETTINGS readonly = 0)", 'the table function file()'],
    ['SELECT * FROM (SELECT 1 SETTINGS readonly = 0)', 'the setting readonly cannot be changed here'],
  ])('refuses %s, changing nothing', async (sql, reason) => {
    const error = await reader.query(sql).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(QueryRefusedError)
    expect((error as Error).message).toContain(`query refused: ${reason}`)
    expect(await runCount()).toBe(1)
    expect(existsSync(outfile)).toBe(false)
  })

  it("holds by ClickHouse's own readonly mode where the check is bypassed", async () => {
    const sneaked = `INSERT INTO runs SELECT * FROM runs\nSETTINGS max_execution_time = 30, readonly = 1`
    await expect(writer.command({ query: sneaked })).rejects.toThrow(/readonly/i)
    const fileRead = (readOnlyQuery('SELECT 1', { timeoutSeconds: 5 }) as { sql: string }).sql.replace('SELECT 1', "SELECT * FROM file('/etc/hostname', 'LineAsString')")
    await expect(queryRows(writer, fileRead)).rejects.toThrow(/readonly/i)
    expect(await runCount()).toBe(1)
  })

  it('stops a read at its time limit', async () => {
    const error = await reader.query('SELECT sleepEachRow(0.5) FROM numbers(20) SETTINGS max_block_size = 1', {}, { timeoutSeconds: 1 }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(StoreError)
    expect((error as Error).message).toMatch(/Timeout exceeded/)
  })

  it('a slow read on the query connection does not hold up an insert', async () => {
    const order: string[] = []
    const slow = reader.query('SELECT sleepEachRow(0.5) FROM numbers(6)', {}, { timeoutSeconds: 10 }).then(() => order.push('read'))
    await new Promise((resolve) => setTimeout(resolve, 100))
    await insertRuns(writer, [
      {
        run_id: 'r2', suite: 'smoke', suite_path: '/s', adapter: 'mock', config_id: 'c0', attempts: 1, task_count: 1, seed: 'x', status: 'completed',
        started_at: 1, finished_at: 2, updated_at: 2, price_table_version: '', price_table_date: '', suite_hash: '', judge_model: '',
        judge_prompt_version: '', stop_width: 0, stopped_tasks: [],
      },
    ])
    order.push('insert')
    await slow
    expect(order).toEqual(['insert', 'read'])
    expect(await runCount()).toBe(2)
  })
})
