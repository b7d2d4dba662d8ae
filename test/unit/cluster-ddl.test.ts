import { describe, expect, it } from 'vitest'
import { ClusterDdlError, clusterFromEnv, clusterLedgerStatement, clusterStatements } from '../../store/cluster-ddl.js'
import { migrations, sqlOf } from '../../store/migrations.js'

const one = (sql: string) => clusterStatements(sql, { cluster: 'forge' })
const flat = (s: string) => s.replace(/\s+/g, ' ').trim()

describe('cluster DDL', () => {
  it('turns a table into a replicated local table and a Distributed table sharded by the first key column', () => {
    const [local, distributed] = one(
      `CREATE TABLE IF NOT EXISTS runs (
        run_id String,
        updated_at DateTime64(3, 'UTC')
      ) ENGINE = ReplacingMergeTree(updated_at) ORDER BY run_id SETTINGS non_replicated_deduplication_window = 1000`,
    )
    expect(flat(local!)).toBe(
      "CREATE TABLE IF NOT EXISTS runs_local ON CLUSTER forge ( run_id String, updated_at DateTime64(3, 'UTC') ) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/runs_local', '{replica}', updated_at) ORDER BY run_id SETTINGS replicated_deduplication_window = 1000",
    )
    expect(distributed).toBe("CREATE TABLE IF NOT EXISTS runs ON CLUSTER forge AS runs_local ENGINE = Distributed('forge', currentDatabase(), 'runs_local', cityHash64(run_id))")
  })

  it('keeps a tuple ORDER BY and an engine without a version column', () => {
    const [local, distributed] = one('CREATE TABLE IF NOT EXISTS t (a String, b UInt32) ENGINE = ReplacingMergeTree ORDER BY (a, b)')
    expect(local).toBe("CREATE TABLE IF NOT EXISTS t_local ON CLUSTER forge (a String, b UInt32) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/t_local', '{replica}') ORDER BY (a, b) SETTINGS replicated_deduplication_window = 1000")
    expect(distributed).toContain('cityHash64(a)')
  })

  it('alters and drops both tables, ON CLUSTER', () => {
    expect(one('ALTER TABLE attempts ADD COLUMN IF NOT EXISTS grading_version UInt32 DEFAULT 1')).toEqual([
      'ALTER TABLE attempts_local ON CLUSTER forge ADD COLUMN IF NOT EXISTS grading_version UInt32 DEFAULT 1',
      'ALTER TABLE attempts ON CLUSTER forge ADD COLUMN IF NOT EXISTS grading_version UInt32 DEFAULT 1',
    ])
    // a MergeTree setting only on the replicated table: a Distributed table refuses it
    expect(one('ALTER TABLE traces MODIFY SETTING merge_selector_base = 20')).toEqual(['ALTER TABLE traces_local ON CLUSTER forge MODIFY SETTING merge_selector_base = 20'])
    expect(one('ALTER TABLE traces RESET SETTING merge_selector_base')).toEqual(['ALTER TABLE traces_local ON CLUSTER forge RESET SETTING merge_selector_base'])
    expect(one('DROP TABLE IF EXISTS runs')).toEqual(['DROP TABLE IF EXISTS runs ON CLUSTER forge SYNC', 'DROP TABLE IF EXISTS runs_local ON CLUSTER forge SYNC'])
  })

  it('creates and drops a view on every node, and moves rows once through the Distributed tables', () => {
    expect(one('CREATE VIEW IF NOT EXISTS metrics AS\n  SELECT a FROM attempt_metrics FINAL ARRAY JOIN a')).toEqual(['CREATE VIEW IF NOT EXISTS metrics ON CLUSTER forge AS SELECT a FROM attempt_metrics FINAL ARRAY JOIN a'])
    expect(one('DROP VIEW IF EXISTS metrics')).toEqual(['DROP VIEW IF EXISTS metrics ON CLUSTER forge SYNC'])
    expect(one('INSERT INTO attempt_metrics SELECT a FROM metrics FINAL')).toEqual(['INSERT INTO attempt_metrics SELECT a FROM metrics FINAL'])
  })

  it('has a cluster form for every statement of every migration (the same migrations run for both)', () => {
    for (const m of migrations) {
      for (const sql of [...m.up, ...m.down].map(sqlOf)) {
        const statements = clusterStatements(sql, { cluster: 'forge', keeperPath: '/ch/forge/' })
        const kind = sql.trim().split(/\s+/).slice(0, 2).join(' ')
        // a table is two (replicated local + Distributed); a view or a table's merge setting one, ON CLUSTER; moving rows one, not ON CLUSTER
        const setting = /^ALTER TABLE \w+ (MODIFY|RESET) SETTING /.test(sql.trim())
        const expected = kind === 'INSERT INTO' || kind === 'CREATE VIEW' || kind === 'DROP VIEW' || setting ? 1 : 2
        expect(statements.length, `migration ${m.version}: ${sql.slice(0, 60)}`).toBe(expected)
        for (const s of statements) {
          if (kind === 'INSERT INTO') expect(s).not.toContain(' ON CLUSTER')
          else expect(s).toContain(' ON CLUSTER forge')
        }
        expect(statements.join(' ')).not.toContain('non_replicated_deduplication_window')
        if (kind === 'CREATE TABLE') expect(statements[0]).toContain("'/ch/forge/{shard}/{database}/")
      }
    }
  })

  it('refuses a statement it cannot translate, naming it', () => {
    expect(() => one('CREATE MATERIALIZED VIEW v AS SELECT 1')).toThrow(ClusterDdlError)
    expect(() => one('CREATE MATERIALIZED VIEW v AS SELECT 1')).toThrow(
      'no cluster form for this migration statement (CREATE TABLE … ReplacingMergeTree, ALTER TABLE, DROP TABLE, CREATE VIEW, DROP VIEW or INSERT INTO … SELECT only): CREATE MATERIALIZED VIEW v AS SELECT 1',
    )
    expect(() => one('INSERT INTO t VALUES (1)')).toThrow(ClusterDdlError)
    expect(() => clusterStatements('DROP TABLE IF EXISTS t', { cluster: 'bad-name' })).toThrow('"bad-name" is not a plain identifier')
  })

  it('keeps one migrations ledger replicated on every node of every shard', () => {
    expect(flat(clusterLedgerStatement({ cluster: 'forge' }))).toBe(
      "CREATE TABLE IF NOT EXISTS schema_migrations ON CLUSTER forge ( version UInt32, name String, applied_at DateTime64(3, 'UTC') DEFAULT now64(3) ) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/all/{database}/schema_migrations', '{replica}') ORDER BY version",
    )
  })

  it('is selected by FORGE_CLICKHOUSE_CLUSTER only together with a ClickHouse server', () => {
    expect(clusterFromEnv({ FORGE_CLICKHOUSE_CLUSTER: 'forge' })).toBeUndefined()
    expect(clusterFromEnv({ FORGE_CLICKHOUSE_URL: 'http://ch:8123' })).toBeUndefined()
    expect(clusterFromEnv({ FORGE_CLICKHOUSE_CLUSTER: 'forge', FORGE_CLICKHOUSE_URL: 'http://ch:8123', FORGE_CLICKHOUSE_KEEPER_PATH: '/x' })).toEqual({ cluster: 'forge', keeperPath: '/x' })
    expect(() => clusterFromEnv({ FORGE_CLICKHOUSE_CLUSTER: 'my cluster', FORGE_CLICKHOUSE_URL: 'http://ch:8123' })).toThrow(
      'FORGE_CLICKHOUSE_CLUSTER must be a cluster name from remote_servers (letters, digits, _), got "my cluster"',
    )
  })
})
