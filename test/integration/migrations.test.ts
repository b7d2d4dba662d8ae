import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openClickHouse, queryRows, type ClickHouseClient } from '../../store/clickhouse.js'
import { INGESTED_TABLES, MERGE_SELECTOR_BASE, migrate, migrations, rollback, runStatements, sqlOf } from '../../store/migrations.js'
import { contentHashOf, extendChain, manifestOf, verifyAudit, type AuditEntry } from '../../core/audit.js'
import type { MetricValue } from '../../core/contracts/index.js'
import { auditRowsOfRun, insertAuditEntries, insertAuditLinks } from '../../store/audit.js'
import { directReader } from '../../store/clickhouse.js'
import { metricRowsOf, metricsToRows } from '../../store/grading-converters.js'

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
    expect(await tables()).toEqual(['attempt_grades', 'attempt_metrics', 'attempts', 'audit_chain', 'audit_entries', 'baselines', 'judgements', 'metrics', 'review_resolutions', 'runs', 'sweep_cells', 'sweeps', 'tool_calls', 'traces'])
  })

  it('rolls back newest first and re-applies', async () => {
    expect(await rollback(client, 1)).toEqual(migrations.map((m) => m.version).filter((v) => v > 1).reverse())
    expect(await tables()).toEqual(['runs'])
    expect(await runColumns()).not.toContain('suite_hash')
    expect(await migrate(client)).toEqual(migrations.map((m) => m.version).filter((v) => v > 1))
    expect(await tables()).toEqual(['attempt_grades', 'attempt_metrics', 'attempts', 'audit_chain', 'audit_entries', 'baselines', 'judgements', 'metrics', 'review_resolutions', 'runs', 'sweep_cells', 'sweeps', 'tool_calls', 'traces'])
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

  it('issue 15: moves stored metric rows into attempt_metrics whole; the metrics view gives the same rows; a run audited over per-metric rows still verifies', async () => {
    await rollback(client, 11)
    expect(await tables()).not.toContain('attempt_metrics')
    const key = { attempt_uid: 'm15/c/t/0', run_id: 'm15', config_id: 'c', suite: 's', task_id: 't', attempt: 0 }
    const judge = { model: 'judge-1', prompt_version: 'judge-metrics/2', decoding: { temperature: 0 } }
    const metrics: MetricValue[] = [
      { metric: 'tool_error_rate', version: 1, kind: 'deterministic', status: 'scored', value: 0, passed: true, detail: '0/2 calls failed', judge: null },
      { metric: 'budget_use', version: 2, kind: 'deterministic', status: 'not_applicable', value: null, passed: null, detail: 'no budget', judge: null },
      { metric: 'correctness', version: 1, kind: 'judge', status: 'scored', value: 0.8, passed: true, detail: '4/5', judge },
    ]
    // the rows the metrics table held before migration 12, one per metric, and an older version of one of them (FINAL drops it)
    const legacy = metricsToRows(key, 1, metrics, Date.UTC(2026, 11, 1)).flatMap((r) => metricRowsOf(r as unknown as Record<string, unknown>))
    const stale = { ...legacy[0]!, detail: 'stale', ingested_at: '2026-11-30 00:00:00.000' }
    await client.insert({ table: 'metrics', values: [stale, ...legacy, { ...legacy[0]!, attempt_uid: 'm15/c/t/1', attempt: 1 }], format: 'JSONEachRow' })
    const before = await queryRows<Record<string, unknown>>(client, "SELECT * FROM metrics FINAL WHERE run_id = 'm15' ORDER BY attempt_uid, metric")
    expect(before).toHaveLength(4)

    // the run was audited then: a version-2 manifest over one metrics row per metric
    const manifest = manifestOf(
      legacy.map((values) => ({ table: 'metrics', key: `${key.attempt_uid}@v1/${String(values['metric'])}`, values })),
      undefined,
      2,
    )
    const entry: AuditEntry = { run_id: 'm15', entry_kind: 'attempt', entry_key: key.attempt_uid, content_hash: contentHashOf(manifest), manifest }
    const other: AuditEntry = (() => {
      const m = manifestOf([{ table: 'metrics', key: `m15/c/t/1@v1/tool_error_rate`, values: { ...legacy[0]!, attempt_uid: 'm15/c/t/1', attempt: 1 } }], undefined, 2)
      return { run_id: 'm15', entry_kind: 'attempt', entry_key: 'm15/c/t/1', content_hash: contentHashOf(m), manifest: m }
    })()
    const { links, head } = extendChain('m15', undefined, [entry, other])
    await insertAuditEntries(client, [entry, other], Date.now())
    await insertAuditLinks(client, links, Date.now())

    expect(await migrate(client, 12)).toEqual([12])
    expect(await tables()).toContain('attempt_metrics')
    const moved = await queryRows<Record<string, unknown>>(
      client,
      "SELECT attempt_uid, kind, metric, metric_version, status, value, passed, detail, judge_model FROM attempt_metrics FINAL WHERE run_id = 'm15' ORDER BY attempt_uid, kind",
    )
    expect(moved).toEqual([
      { attempt_uid: 'm15/c/t/0', kind: 'deterministic', metric: ['budget_use', 'tool_error_rate'], metric_version: [2, 1], status: ['not_applicable', 'scored'], value: [null, 0], passed: [null, 1], detail: ['no budget', '0/2 calls failed'], judge_model: ['', ''] },
      { attempt_uid: 'm15/c/t/0', kind: 'judge', metric: ['correctness'], metric_version: [1], status: ['scored'], value: [0.8], passed: [1], detail: ['4/5'], judge_model: ['judge-1'] },
      { attempt_uid: 'm15/c/t/1', kind: 'deterministic', metric: ['tool_error_rate'], metric_version: [1], status: ['scored'], value: [0], passed: [1], detail: ['0/2 calls failed'], judge_model: [''] },
    ])
    // the view: the same rows as before, with or without FINAL
    expect(await queryRows(client, "SELECT * FROM metrics WHERE run_id = 'm15' ORDER BY attempt_uid, metric")).toEqual(before)
    expect(await queryRows(client, "SELECT * FROM metrics FINAL WHERE run_id = 'm15' ORDER BY attempt_uid, metric")).toEqual(before)

    const check = async () => {
      const { rows, unclaimed } = await auditRowsOfRun(directReader(client), 'm15', [entry, other])
      return verifyAudit({ runId: 'm15', head, signature: '', links, entries: [entry, other], rows, unclaimed })
    }
    expect((await check()).problems).toEqual([])
    // an edit after the migration is still named by the metric it hit
    await client.command({ query: "ALTER TABLE attempt_metrics UPDATE detail = ['no budget', 'forged'] WHERE attempt_uid = 'm15/c/t/0' AND kind = 'deterministic' SETTINGS mutations_sync = 1" })
    const report = await check()
    expect(report.intact).toBe(false)
    expect(report.problems.map((p) => `${p.kind} ${p.detail}`)).toEqual(['edited_field row metrics m15/c/t/0@v1/tool_error_rate: detail changed'])

    // and back: the metrics table again, holding the same rows
    expect(await rollback(client, 11)).toEqual([12])
    expect(await tables()).not.toContain('attempt_metrics')
    const back = await queryRows<Record<string, unknown>>(client, "SELECT * FROM metrics FINAL WHERE run_id = 'm15' ORDER BY attempt_uid, metric")
    expect(back.map((r) => ({ ...r, ingested_at: undefined, detail: undefined }))).toEqual(before.map((r) => ({ ...r, ingested_at: undefined, detail: undefined })))
    expect(await migrate(client, 12)).toEqual([12])
  })

  describe('issue 15: migration 12 is safe to run again and by two migrators at once (every ingester replica migrates on start)', () => {
    const legacyRows = (runId: string) => {
      const key = { attempt_uid: `${runId}/c/t/0`, run_id: runId, config_id: 'c', suite: 's', task_id: 't', attempt: 0 }
      const metrics: MetricValue[] = [
        { metric: 'tool_error_rate', version: 1, kind: 'deterministic', status: 'scored', value: 0, passed: true, detail: '0/2 calls failed', judge: null },
        { metric: 'budget_use', version: 2, kind: 'deterministic', status: 'not_applicable', value: null, passed: null, detail: 'no budget', judge: null },
      ]
      return metricsToRows(key, 1, metrics, Date.UTC(2026, 11, 1)).flatMap((r) => metricRowsOf(r as unknown as Record<string, unknown>))
    }
    /** version 11 with one run's per-metric rows stored; returns what the metrics table reads */
    const atVersion11 = async (runId: string) => {
      await rollback(client, 11)
      await client.insert({ table: 'metrics', values: legacyRows(runId), format: 'JSONEachRow' })
      return queryRows<Record<string, unknown>>(client, `SELECT * FROM metrics FINAL WHERE run_id = '${runId}' ORDER BY metric`)
    }
    const ledger = async () => (await queryRows<{ v: number }>(client, 'SELECT max(version) AS v FROM schema_migrations')).map((r) => Number(r.v))
    const migration12 = migrations.find((m) => m.version === 12)!

    /** the same client, with a hook before the first command matching `pattern` and one when that command fails */
    const hooked = (pattern: RegExp, before: () => Promise<void>, failed: () => Promise<void> = async () => {}) => {
      let fired = false
      return new Proxy(client, {
        get(target, prop, receiver) {
          if (prop !== 'command') return Reflect.get(target, prop, receiver)
          return async (params: Parameters<ClickHouseClient['command']>[0]) => {
            const mine = !fired && pattern.test(params.query.trim())
            if (mine) {
              fired = true
              await before()
            }
            try {
              return await target.command(params)
            } catch (err) {
              if (mine) await failed()
              throw err
            }
          }
        },
      })
    }
    const deferred = () => {
      let resolve!: () => void
      const promise = new Promise<void>((r) => (resolve = r))
      return { promise, resolve }
    }

    it.each([
      ['after moving the rows', 2],
      ['after dropping the metrics table, before the view', 3],
    ])('finishes a migration killed %s, rows neither lost nor doubled', async (_, done) => {
      const before = await atVersion11('k15')
      expect(before).toHaveLength(2)
      for (const statement of migration12.up.slice(0, done)) await client.command({ query: sqlOf(statement) })
      expect(await migrate(client, 12)).toEqual([12])
      expect(await queryRows(client, "SELECT * FROM metrics WHERE run_id = 'k15' ORDER BY metric")).toEqual(before)
      expect(await queryRows(client, "SELECT count() AS n FROM attempt_metrics FINAL WHERE run_id = 'k15'")).toEqual([{ n: 1 }])
    })

    it('a second migrator that starts while the first is between dropping the table and creating the view skips the move (the fleet rehearsal CI failure)', async () => {
      const before = await atVersion11('c15')
      const bDone = deferred()
      let b: Promise<number[]> | undefined
      const a = migrate(
        hooked(/^CREATE VIEW IF NOT EXISTS metrics/, async () => {
          b = migrate(client, 12)
          await b
          bDone.resolve()
        }),
        12,
      )
      expect(await a).toEqual([12])
      await bDone.promise
      expect(await b).toEqual([12])
      expect(await ledger()).toEqual([12])
      expect(await queryRows(client, "SELECT * FROM metrics WHERE run_id = 'c15' ORDER BY metric")).toEqual(before)
    })

    it.each([
      ['runs it again from its first statement while the first is still paused', false, [12]],
      ['finds it recorded by the first and applies nothing', true, []],
    ])('a migrator whose move fails because the other dropped the table under it %s', async (_, firstFinishes, expected) => {
      const before = await atVersion11('r15')
      const aPaused = deferred()
      const bFailed = deferred()
      const bDone = deferred()
      let a: Promise<number[]> | undefined
      // a starts only once b has found the metrics table and is about to read it; a then pauses before
      // its view until b's read failed (and, in the first case, until b is done)
      const gatedA = hooked(/^CREATE VIEW IF NOT EXISTS metrics/, async () => {
        aPaused.resolve()
        await (firstFinishes ? bFailed.promise : bDone.promise)
      })
      const gatedB = hooked(
        /^INSERT INTO attempt_metrics/,
        async () => {
          a = migrate(gatedA, 12)
          await aPaused.promise
        },
        async () => {
          bFailed.resolve()
          if (firstFinishes) await a
        },
      )
      const b = await migrate(gatedB, 12)
      bDone.resolve()
      expect(b).toEqual(expected)
      expect(await a).toEqual([12])
      expect(await ledger()).toEqual([12])
      expect(await queryRows(client, "SELECT * FROM metrics WHERE run_id = 'r15' ORDER BY metric")).toEqual(before)
    })

    it('names the migration and the cause when it keeps failing', async () => {
      await rollback(client, 11)
      await client.command({ query: 'RENAME TABLE metrics TO metrics_kept' })
      await client.command({ query: 'CREATE TABLE metrics (attempt_uid String) ENGINE = MergeTree ORDER BY attempt_uid' })
      try {
        await expect(migrate(client, 12)).rejects.toThrow(`migration 12 (${migration12.name}) failed 4 times: Storage MergeTree doesn't support FINAL`)
        expect(await ledger()).toEqual([11])
      } finally {
        await client.command({ query: 'DROP TABLE metrics' })
        await client.command({ query: 'RENAME TABLE metrics_kept TO metrics' })
      }
      expect(await migrate(client, 12)).toEqual([12])
    })
  })

  it('issue 15: the tables written with every attempt merge ~20 small parts at a time; rolled back to the default; skipped where the server lacks the setting', async () => {
    const settingOf = async (table: string) => {
      const [row] = await queryRows<{ engine_full: string }>(client, 'SELECT engine_full FROM system.tables WHERE database = currentDatabase() AND name = {t:String}', { t: table })
      return /merge_selector_base = (\d+)/.exec(row!.engine_full)?.[1]
    }
    expect(await migrate(client)).toEqual([13])
    for (const table of INGESTED_TABLES) expect(await settingOf(table), table).toBe(String(MERGE_SELECTOR_BASE))
    expect(await settingOf('baselines')).toBeUndefined()
    expect(await rollback(client, 12)).toEqual([13])
    for (const table of INGESTED_TABLES) expect(await settingOf(table), table).toBeUndefined()
    expect(await migrate(client)).toEqual([13])
    // a server that does not know a setting skips the statement that needs it, and would refuse it otherwise
    const unknown = 'ALTER TABLE runs MODIFY SETTING forge_no_such_setting = 1'
    await expect(runStatements(client, [{ sql: unknown, needs: { mergeTreeSetting: 'forge_no_such_setting' } }], {})).resolves.toBeUndefined()
    await expect(runStatements(client, [unknown], {})).rejects.toThrow(/forge_no_such_setting/)
  })
})
