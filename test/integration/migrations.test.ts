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

const runColumns = async () =>
  (await queryRows<{ name: string }>(client, "SELECT name FROM system.columns WHERE database = currentDatabase() AND table = 'runs'")).map((r) => r.name)

describe('ClickHouse migrations (chDB)', () => {
  it('applies every migration once, in order, and is a no-op the second time', async () => {
    expect(await migrate(client)).toEqual(migrations.map((m) => m.version))
    expect(await migrate(client)).toEqual([])
    expect(await tables()).toEqual(['attempt_grades', 'attempts', 'audit_chain', 'audit_entries', 'baselines', 'judgements', 'metrics', 'review_resolutions', 'runs', 'sweep_cells', 'sweeps', 'tool_calls', 'traces'])
  })

  it('rolls back newest first and re-applies', async () => {
    expect(await rollback(client, 1)).toEqual(migrations.map((m) => m.version).filter((v) => v > 1).reverse())
    expect(await tables()).toEqual(['runs'])
    expect(await runColumns()).not.toContain('suite_hash')
    expect(await migrate(client)).toEqual(migrations.map((m) => m.version).filter((v) => v > 1))
    expect(await tables()).toEqual(['attempt_grades', 'attempts', 'audit_chain', 'audit_entries', 'baselines', 'judgements', 'metrics', 'review_resolutions', 'runs', 'sweep_cells', 'sweeps', 'tool_calls', 'traces'])
  })

  it('adds the comparability stamps to runs, with defaults for rows written before them', async () => {
    await rollback(client, 3)
    await client.insert({
      table: 'runs',
      values: [{ run_id: 'old', suite: 's', suite_path: '/s', adapter: 'mock', config_id: 'c', attempts: 1, task_count: 1, seed: 'x', status: 'completed', started_at: '2026-11-30 00:00:00.000', finished_at: null, updated_at: '2026-11-30 00:00:00.000', price_table_version: '' }],
      format: 'JSONEachRow',
    })
    expect(await migrate(client, 8)).toEqual([4, 5, 6, 7, 8])
    expect(await runColumns()).toEqual(expect.arrayContaining(['price_table_date', 'suite_hash', 'judge_model', 'judge_prompt_version', 'stop_width', 'stopped_tasks']))
    const [row] = await queryRows<Record<string, unknown>>(client, "SELECT price_table_date, suite_hash, stop_width, stopped_tasks FROM runs FINAL WHERE run_id = 'old'")
    expect(row).toEqual({ price_table_date: '', suite_hash: '', stop_width: 0, stopped_tasks: [] })
  })

  it('gives attempts written before grading versions existed version 1, and rolls grading back to the tables before it', async () => {
    await rollback(client, 5)
    await client.insert({
      table: 'attempts',
      values: [{ attempt_uid: 'r/c/t/0', run_id: 'r', config_id: 'c', suite: 's', task_id: 't', attempt: 0, adapter: 'mock', outcome: 'pass', validity: 'valid', failure_bucket: '', budget_limit: '', grades: '[]', invariants: '[]', instruction: 'i', output: 'o', self_report: '', error: '', cost_usd: null, latency_ms: 1, tool_call_count: 0, input_tokens: 0, output_tokens: 0, model: 'm', decoding: '{}', price_table_version: '', seed: '1', worker_id: 'w', started_at: '2026-11-30 00:00:00.000', finished_at: '2026-11-30 00:00:00.001', ingested_at: '2026-11-30 00:00:00.002' }],
      format: 'JSONEachRow',
    })
    expect(await tables()).toEqual(['attempts', 'baselines', 'runs', 'tool_calls'])
    expect(await migrate(client, 8)).toEqual([6, 7, 8])
    const [row] = await queryRows<Record<string, unknown>>(client, "SELECT grading_version FROM attempts FINAL WHERE attempt_uid = 'r/c/t/0'")
    expect(row).toEqual({ grading_version: 1 })
  })

  it('reads attempts and runs written before fault injection as met no fault, and rolls it back (issue 13)', async () => {
    // rows from the tests above were written before migration 8 was re-applied by them: roll back and forth once more
    await rollback(client, 7)
    expect(await runColumns()).not.toContain('fault_profile_hash')
    expect(await migrate(client, 8)).toEqual([8])
    const [attempt] = await queryRows<Record<string, unknown>>(client, "SELECT injected_faults, injected_fault_kinds FROM attempts FINAL WHERE attempt_uid = 'r/c/t/0'")
    expect(attempt).toEqual({ injected_faults: 0, injected_fault_kinds: [] })
    const [run] = await queryRows<Record<string, unknown>>(client, "SELECT fault_profile_hash, fault_mode, fault_rate, fault_sweep_id, fault_profile FROM runs FINAL WHERE run_id = 'old'")
    expect(run).toEqual({ fault_profile_hash: '', fault_mode: '', fault_rate: 0, fault_sweep_id: '', fault_profile: '' })
  })

  it('issue 10: stamps runs with their isolation, empty for runs written before it', async () => {
    await rollback(client, 8)
    expect(await runColumns()).not.toContain('isolation')
    await client.insert({
      table: 'runs',
      values: [{ run_id: 'before-9', suite: 's', suite_path: '/s', adapter: 'mock', config_id: 'c', attempts: 1, task_count: 1, seed: 'x', status: 'completed', started_at: '2026-11-30 00:00:00.000', finished_at: null, updated_at: '2026-11-30 00:00:00.000', price_table_version: '' }],
      format: 'JSONEachRow',
    })
    expect(await migrate(client, 9)).toEqual([9])
    const [row] = await queryRows<Record<string, unknown>>(client, "SELECT isolation FROM runs FINAL WHERE run_id = 'before-9'")
    expect(row).toEqual({ isolation: '' })
  })

  it('gives runs written before issue 11 redacted = 1, no answer guard and no audit head; rolls the audit tables back', async () => {
    await rollback(client, 9)
    expect(await tables()).not.toContain('audit_chain')
    await client.insert({
      table: 'runs',
      values: [{ run_id: 'pre11', suite: 's', suite_path: '/s', adapter: 'mock', config_id: 'c', attempts: 1, task_count: 1, seed: 'x', status: 'completed', started_at: '2026-11-30 00:00:00.000', finished_at: null, updated_at: '2026-11-30 00:00:00.000', price_table_version: '' }],
      format: 'JSONEachRow',
    })
    expect(await migrate(client, 10)).toEqual([10])
    const [row] = await queryRows<Record<string, unknown>>(client, "SELECT redacted, guard_answers, audit_head, audit_signature FROM runs FINAL WHERE run_id = 'pre11'")
    expect(row).toEqual({ redacted: 1, guard_answers: 0, audit_head: '', audit_signature: '' })
  })

  it('reads runs written before the completeness check as checked nothing, and rolls it back (issue 12)', async () => {
    await rollback(client, 10)
    expect(await runColumns()).not.toContain('planned_attempts')
    expect(await migrate(client, 11)).toEqual([11])
    const [run] = await queryRows<Record<string, unknown>>(client, "SELECT planned_attempts, final_stored, missing_count, missing_sample, harness_errors FROM runs FINAL WHERE run_id = 'old'")
    expect(run).toEqual({ planned_attempts: 0, final_stored: 0, missing_count: 0, missing_sample: [], harness_errors: 0 })
  })
})
