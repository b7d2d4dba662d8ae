/**
 * Numbered ClickHouse migrations. Tables are ReplacingMergeTree on the business key and are read
 * with FINAL, so an attempt delivered twice is one row; chDB tables are non-replicated, so insert
 * dedup needs `non_replicated_deduplication_window`.
 */
import type { ClickHouseClient } from '@clickhouse/client'
import { setTimeout as sleep } from 'node:timers/promises'
import { queryRows } from './clickhouse.js'
import { clusterFromEnv, clusterLedgerStatement, clusterStatements, type ClusterOptions } from './cluster-ddl.js'

/**
 * A statement that runs only while `name` exists as a table (a Distributed one on a cluster) or as
 * a view. Data-moving steps carry one, so a migration cut short by SIGKILL, or run by two ingesters
 * starting at once, can run again from its first statement: rows already moved are not read from a
 * table that is gone, and a view another migrator created is not dropped as if it were the table.
 */
export interface GuardedStatement {
  sql: string
  while: { name: string; is: 'table' | 'view' }
}

/** A statement that runs only where the server knows a MergeTree setting: an older server keeps its own default. */
export interface SettingStatement {
  sql: string
  needs: { mergeTreeSetting: string }
}

export type MigrationStatement = string | GuardedStatement | SettingStatement

export const sqlOf = (statement: MigrationStatement): string => (typeof statement === 'string' ? statement : statement.sql)

export interface Migration {
  version: number
  name: string
  up: MigrationStatement[]
  down: MigrationStatement[]
}

const dedup = 'SETTINGS non_replicated_deduplication_window = 1000'

/**
 * The tables the ingester writes with every attempt (or run), and how many of their small parts a
 * merge waits for. ClickHouse's Simple merge selector merges ~5 parts at once (merge_selector_base 5)
 * and counts a part of a few MB as small, so a store of tens of thousands of attempts rewrote its
 * biggest part every few inserts: on a store of 42,000 attempts the embedded store's merges took
 * 0.66–0.73 ms of CPU per new attempt, half of what the ingester spent, on the cores the workers use.
 * Waiting for ~20 parts took 0.08–0.14 ms there, and 0.08 instead of 0.22 on a new store (issue 15).
 * Parts older than a few seconds still merge down as before (the selector lowers its base with age).
 */
export const INGESTED_TABLES = ['attempts', 'tool_calls', 'attempt_metrics', 'judgements', 'traces', 'audit_entries', 'audit_chain', 'runs'] as const
export const MERGE_SELECTOR_BASE = 20
const mergeBase = (sql: (table: string) => string): SettingStatement[] => INGESTED_TABLES.map((table) => ({ sql: sql(table), needs: { mergeTreeSetting: 'merge_selector_base' } }))

/** one row per metric (migration 6); migration 12 moves it into attempt_metrics and rolls back to it */
const METRICS_TABLE = `CREATE TABLE IF NOT EXISTS metrics (
    attempt_uid String,
    run_id String,
    config_id String,
    suite LowCardinality(String),
    task_id String,
    attempt UInt32,
    grading_version UInt32,
    metric LowCardinality(String),
    metric_version UInt32,
    kind LowCardinality(String),
    status LowCardinality(String),
    value Nullable(Float64),
    passed Nullable(UInt8),
    detail String,
    judge_model LowCardinality(String),
    judge_prompt_version LowCardinality(String),
    judge_decoding String,
    ingested_at DateTime64(3, 'UTC')
  ) ENGINE = ReplacingMergeTree(ingested_at) ORDER BY (run_id, attempt_uid, grading_version, metric) ${dedup}`

export const migrations: readonly Migration[] = [
  {
    version: 1,
    name: 'runs',
    up: [
      `CREATE TABLE IF NOT EXISTS runs (
        run_id String,
        suite LowCardinality(String),
        suite_path String,
        adapter LowCardinality(String),
        config_id String,
        attempts UInt32,
        task_count UInt32,
        seed String,
        status LowCardinality(String),
        started_at DateTime64(3, 'UTC'),
        finished_at Nullable(DateTime64(3, 'UTC')),
        updated_at DateTime64(3, 'UTC'),
        price_table_version String
      ) ENGINE = ReplacingMergeTree(updated_at) ORDER BY run_id ${dedup}`,
    ],
    down: ['DROP TABLE IF EXISTS runs'],
  },
  {
    version: 2,
    name: 'attempts',
    up: [
      `CREATE TABLE IF NOT EXISTS attempts (
        attempt_uid String,
        run_id String,
        config_id String,
        suite LowCardinality(String),
        task_id String,
        attempt UInt32,
        adapter LowCardinality(String),
        outcome LowCardinality(String),
        validity LowCardinality(String),
        failure_bucket LowCardinality(String),
        budget_limit LowCardinality(String),
        grades String,
        invariants String,
        instruction String,
        output String,
        self_report String,
        error String,
        cost_usd Nullable(Float64),
        latency_ms Float64,
        tool_call_count UInt32,
        input_tokens UInt64,
        output_tokens UInt64,
        model LowCardinality(String),
        decoding String,
        price_table_version String,
        seed String,
        worker_id String,
        started_at DateTime64(3, 'UTC'),
        finished_at DateTime64(3, 'UTC'),
        ingested_at DateTime64(3, 'UTC')
      ) ENGINE = ReplacingMergeTree(ingested_at) ORDER BY (run_id, config_id, task_id, attempt) ${dedup}`,
    ],
    down: ['DROP TABLE IF EXISTS attempts'],
  },
  {
    version: 3,
    name: 'tool_calls',
    up: [
      `CREATE TABLE IF NOT EXISTS tool_calls (
        attempt_uid String,
        run_id String,
        task_id String,
        call_index UInt32,
        name LowCardinality(String),
        args String,
        result String,
        error String,
        refused LowCardinality(String),
        injected_fault LowCardinality(String),
        retry_index UInt32,
        started_ms Float64,
        duration_ms Float64,
        ingested_at DateTime64(3, 'UTC')
      ) ENGINE = ReplacingMergeTree(ingested_at) ORDER BY (run_id, attempt_uid, call_index) ${dedup}`,
    ],
    down: ['DROP TABLE IF EXISTS tool_calls'],
  },
  {
    version: 4,
    name: 'run stamps: price table date, suite hash, judge, sequential stopping',
    up: [
      `ALTER TABLE runs
        ADD COLUMN IF NOT EXISTS price_table_date String DEFAULT '',
        ADD COLUMN IF NOT EXISTS suite_hash String DEFAULT '',
        ADD COLUMN IF NOT EXISTS judge_model String DEFAULT '',
        ADD COLUMN IF NOT EXISTS judge_prompt_version String DEFAULT '',
        ADD COLUMN IF NOT EXISTS stop_width Float64 DEFAULT 0,
        ADD COLUMN IF NOT EXISTS stopped_tasks Array(String) DEFAULT []`,
    ],
    down: [
      `ALTER TABLE runs
        DROP COLUMN IF EXISTS price_table_date,
        DROP COLUMN IF EXISTS suite_hash,
        DROP COLUMN IF EXISTS judge_model,
        DROP COLUMN IF EXISTS judge_prompt_version,
        DROP COLUMN IF EXISTS stop_width,
        DROP COLUMN IF EXISTS stopped_tasks`,
    ],
  },
  {
    version: 5,
    name: 'baselines',
    // a versioned store: setting a name again adds version n+1, older versions stay readable
    up: [
      `CREATE TABLE IF NOT EXISTS baselines (
        name String,
        version UInt32,
        run_id String,
        suite LowCardinality(String),
        commit_hash String,
        agent_version String,
        note String,
        created_at DateTime64(3, 'UTC')
      ) ENGINE = ReplacingMergeTree(created_at) ORDER BY (name, version) ${dedup}`,
    ],
    down: ['DROP TABLE IF EXISTS baselines'],
  },
  {
    version: 6,
    name: 'grading: traces, metrics, judgements (tier 2/3), regrades, review resolutions; attempts.grading_version',
    up: [
      // the original grade of an attempt is version 1; forge regrade writes versions 2, 3, … to attempt_grades
      `ALTER TABLE attempts ADD COLUMN IF NOT EXISTS grading_version UInt32 DEFAULT 1`,
      `CREATE TABLE IF NOT EXISTS traces (
        attempt_uid String,
        run_id String,
        config_id String,
        suite LowCardinality(String),
        task_id String,
        attempt UInt32,
        stored String CODEC(ZSTD(3)),
        bytes UInt64,
        truncated Array(String),
        stored_at DateTime64(3, 'UTC'),
        ingested_at DateTime64(3, 'UTC')
      ) ENGINE = ReplacingMergeTree(ingested_at) ORDER BY (run_id, attempt_uid) ${dedup}`,
      METRICS_TABLE,
      // revision 2 (the judge worker's) replaces revision 1 (the attempt worker's) of the same attempt and version
      `CREATE TABLE IF NOT EXISTS judgements (
        attempt_uid String,
        run_id String,
        config_id String,
        suite LowCardinality(String),
        task_id String,
        attempt UInt32,
        grading_version UInt32,
        revision UInt32,
        tier0_failed UInt8,
        tier2_status LowCardinality(String),
        divergence_step Nullable(UInt32),
        decision String,
        explanation String,
        confidence Nullable(Float64),
        low_confidence UInt8,
        tier2_calls UInt32,
        tier2_error String,
        judge_model LowCardinality(String),
        judge_prompt_version LowCardinality(String),
        judge_decoding String,
        needs_human_review UInt8,
        review_reasons Array(String),
        review_packet String,
        created_at DateTime64(3, 'UTC'),
        ingested_at DateTime64(3, 'UTC')
      ) ENGINE = ReplacingMergeTree(revision) ORDER BY (run_id, attempt_uid, grading_version) ${dedup}`,
      `CREATE TABLE IF NOT EXISTS attempt_grades (
        attempt_uid String,
        run_id String,
        config_id String,
        suite LowCardinality(String),
        task_id String,
        attempt UInt32,
        grading_version UInt32,
        outcome LowCardinality(String),
        validity LowCardinality(String),
        failure_bucket LowCardinality(String),
        grades String,
        invariants String,
        error String,
        regraded_at DateTime64(3, 'UTC'),
        ingested_at DateTime64(3, 'UTC')
      ) ENGINE = ReplacingMergeTree(ingested_at) ORDER BY (run_id, attempt_uid, grading_version) ${dedup}`,
      // append-only: a later resolution of an attempt is a new row; the newest is the current one
      `CREATE TABLE IF NOT EXISTS review_resolutions (
        resolution_id String,
        attempt_uid String,
        run_id String,
        task_id String,
        grading_version UInt32,
        verdict LowCardinality(String),
        failure_bucket LowCardinality(String),
        note String,
        reviewer String,
        resolved_at DateTime64(3, 'UTC')
      ) ENGINE = ReplacingMergeTree(resolved_at) ORDER BY (attempt_uid, resolution_id) ${dedup}`,
    ],
    down: [
      'DROP TABLE IF EXISTS review_resolutions',
      'DROP TABLE IF EXISTS attempt_grades',
      'DROP TABLE IF EXISTS judgements',
      'DROP TABLE IF EXISTS metrics',
      'DROP TABLE IF EXISTS traces',
      'ALTER TABLE attempts DROP COLUMN IF EXISTS grading_version',
    ],
  },
  {
    version: 7,
    name: 'sweeps: one row per sweep and per cell, the highest revision wins',
    up: [
      `CREATE TABLE IF NOT EXISTS sweeps (
        sweep_id String,
        name LowCardinality(String),
        schedule_id String,
        spec String,
        status LowCardinality(String),
        verdict LowCardinality(String),
        cell_count UInt32,
        cells_done UInt32,
        regressed UInt32,
        failed UInt32,
        started_at DateTime64(3, 'UTC'),
        finished_at Nullable(DateTime64(3, 'UTC')),
        revision UInt32,
        ingested_at DateTime64(3, 'UTC')
      ) ENGINE = ReplacingMergeTree(revision) ORDER BY sweep_id ${dedup}`,
      `CREATE TABLE IF NOT EXISTS sweep_cells (
        sweep_id String,
        cell UInt32,
        run_id String,
        suite LowCardinality(String),
        adapter LowCardinality(String),
        model LowCardinality(String),
        seed String,
        baseline String,
        status LowCardinality(String),
        verdict LowCardinality(String),
        config_id String,
        attempts UInt32,
        not_executed UInt32,
        pass_rate Nullable(Float64),
        harness_errors UInt32,
        baseline_version Nullable(UInt32),
        baseline_run_id String,
        baseline_pass_rate Nullable(Float64),
        findings String,
        promoted_version Nullable(UInt32),
        error String,
        revision UInt32,
        ingested_at DateTime64(3, 'UTC')
      ) ENGINE = ReplacingMergeTree(revision) ORDER BY (sweep_id, cell) ${dedup}`,
    ],
    down: ['DROP TABLE IF EXISTS sweep_cells', 'DROP TABLE IF EXISTS sweeps'],
  },
  {
    version: 8,
    name: 'issue 13 faults: injected faults per attempt; the fault profile, mode, rate and sweep stamped on runs',
    up: [
      `ALTER TABLE attempts
        ADD COLUMN IF NOT EXISTS injected_faults UInt32 DEFAULT 0,
        ADD COLUMN IF NOT EXISTS injected_fault_kinds Array(LowCardinality(String)) DEFAULT []`,
      `ALTER TABLE runs
        ADD COLUMN IF NOT EXISTS fault_profile_hash String DEFAULT '',
        ADD COLUMN IF NOT EXISTS fault_mode LowCardinality(String) DEFAULT '',
        ADD COLUMN IF NOT EXISTS fault_rate Float64 DEFAULT 0,
        ADD COLUMN IF NOT EXISTS fault_sweep_id String DEFAULT '',
        ADD COLUMN IF NOT EXISTS fault_profile String DEFAULT ''`,
    ],
    down: [
      `ALTER TABLE runs
        DROP COLUMN IF EXISTS fault_profile_hash,
        DROP COLUMN IF EXISTS fault_mode,
        DROP COLUMN IF EXISTS fault_rate,
        DROP COLUMN IF EXISTS fault_sweep_id,
        DROP COLUMN IF EXISTS fault_profile`,
      'ALTER TABLE attempts DROP COLUMN IF EXISTS injected_faults, DROP COLUMN IF EXISTS injected_fault_kinds',
    ],
  },
  {
    version: 9,
    name: 'issue 10: runs.isolation (sandbox, unsandboxed, in-process)',
    up: [`ALTER TABLE runs ADD COLUMN IF NOT EXISTS isolation LowCardinality(String) DEFAULT ''`],
    down: ['ALTER TABLE runs DROP COLUMN IF EXISTS isolation'],
  },
  {
    version: 10,
    name: 'issue 11: redaction and answer-guard stamps on runs, tool-call interceptions, audit entries and hash chain',
    up: [
      `ALTER TABLE runs
        ADD COLUMN IF NOT EXISTS redacted UInt8 DEFAULT 1,
        ADD COLUMN IF NOT EXISTS guard_answers UInt8 DEFAULT 0,
        ADD COLUMN IF NOT EXISTS audit_head String DEFAULT '',
        ADD COLUMN IF NOT EXISTS audit_signature String DEFAULT ''`,
      // what the answer guard redacted from a call's arguments (JSON list of where the answer came from); '' when nothing
      `ALTER TABLE tool_calls ADD COLUMN IF NOT EXISTS intercepted String DEFAULT ''`,
      // one entry per stored result (an attempt with its rows, a regrade, a review resolution): its content hash over
      // the canonical form of its rows, and the digests of each row and field (core/audit.ts), so verify names what changed
      `CREATE TABLE IF NOT EXISTS audit_entries (
        run_id String,
        entry_kind LowCardinality(String),
        entry_key String,
        content_hash String,
        manifest String CODEC(ZSTD(3)),
        created_at DateTime64(3, 'UTC')
      ) ENGINE = ReplacingMergeTree(created_at) ORDER BY (run_id, entry_kind, entry_key) ${dedup}`,
      // the run's hash chain over its entries in a fixed order; regrades and resolutions append links, none is rewritten
      `CREATE TABLE IF NOT EXISTS audit_chain (
        run_id String,
        seq UInt32,
        entry_kind LowCardinality(String),
        entry_key String,
        content_hash String,
        prev_hash String,
        link_hash String,
        sealed_at DateTime64(3, 'UTC')
      ) ENGINE = ReplacingMergeTree(sealed_at) ORDER BY (run_id, seq) ${dedup}`,
    ],
    down: [
      'DROP TABLE IF EXISTS audit_chain',
      'DROP TABLE IF EXISTS audit_entries',
      'ALTER TABLE tool_calls DROP COLUMN IF EXISTS intercepted',
      `ALTER TABLE runs
        DROP COLUMN IF EXISTS redacted,
        DROP COLUMN IF EXISTS guard_answers,
        DROP COLUMN IF EXISTS audit_head,
        DROP COLUMN IF EXISTS audit_signature`,
    ],
  },
  {
    version: 11,
    name: 'issue 12: run completeness (planned vs stored at the end, missing attempts, harness errors)',
    up: [
      `ALTER TABLE runs
        ADD COLUMN IF NOT EXISTS planned_attempts UInt32 DEFAULT 0,
        ADD COLUMN IF NOT EXISTS final_stored UInt32 DEFAULT 0,
        ADD COLUMN IF NOT EXISTS missing_count UInt32 DEFAULT 0,
        ADD COLUMN IF NOT EXISTS missing_sample Array(String) DEFAULT [],
        ADD COLUMN IF NOT EXISTS harness_errors UInt32 DEFAULT 0`,
    ],
    down: [
      `ALTER TABLE runs
        DROP COLUMN IF EXISTS planned_attempts,
        DROP COLUMN IF EXISTS final_stored,
        DROP COLUMN IF EXISTS missing_count,
        DROP COLUMN IF EXISTS missing_sample,
        DROP COLUMN IF EXISTS harness_errors`,
    ],
  },
  {
    version: 12,
    name: 'issue 15: metrics as one row per attempt, grading version and kind (attempt_metrics, arrays); a metrics view keeps a row per metric',
    up: [
      `CREATE TABLE IF NOT EXISTS attempt_metrics (
        attempt_uid String,
        run_id String,
        config_id String,
        suite LowCardinality(String),
        task_id String,
        attempt UInt32,
        grading_version UInt32,
        kind LowCardinality(String),
        metric Array(LowCardinality(String)),
        metric_version Array(UInt32),
        status Array(LowCardinality(String)),
        value Array(Nullable(Float64)),
        passed Array(Nullable(UInt8)),
        detail Array(String),
        judge_model Array(LowCardinality(String)),
        judge_prompt_version Array(LowCardinality(String)),
        judge_decoding Array(String),
        ingested_at DateTime64(3, 'UTC')
      ) ENGINE = ReplacingMergeTree(ingested_at) ORDER BY (run_id, attempt_uid, grading_version, kind) ${dedup}`,
      // what is stored moves over whole: a row per attempt, version and kind, its metrics in name order
      // (again, harmlessly, when a migrator that stopped after it runs it a second time: FINAL collapses the copies)
      {
        while: { name: 'metrics', is: 'table' },
        sql: `INSERT INTO attempt_metrics
        SELECT attempt_uid, run_id, config_id, suite, task_id, attempt, grading_version, kind,
          arrayMap(m -> m.1, ms), arrayMap(m -> m.2, ms), arrayMap(m -> m.3, ms), arrayMap(m -> m.4, ms), arrayMap(m -> m.5, ms),
          arrayMap(m -> m.6, ms), arrayMap(m -> m.7, ms), arrayMap(m -> m.8, ms), arrayMap(m -> m.9, ms), ingested
        FROM (
          SELECT attempt_uid, run_id, config_id, suite, task_id, attempt, grading_version, kind,
            arraySort(groupArray((metric, metric_version, status, value, passed, detail, judge_model, judge_prompt_version, judge_decoding))) AS ms,
            max(ingested_at) AS ingested
          FROM metrics FINAL
          GROUP BY attempt_uid, run_id, config_id, suite, task_id, attempt, grading_version, kind
        )`,
      },
      { while: { name: 'metrics', is: 'table' }, sql: 'DROP TABLE IF EXISTS metrics' },
      // every query and report that read the metrics table reads the same rows from here (FINAL is applied inside)
      `CREATE VIEW IF NOT EXISTS metrics AS
        SELECT attempt_uid, run_id, config_id, suite, task_id, attempt, grading_version, metric, metric_version, kind, status, value, passed,
          detail, judge_model, judge_prompt_version, judge_decoding, ingested_at
        FROM attempt_metrics FINAL
        ARRAY JOIN metric, metric_version, status, value, passed, detail, judge_model, judge_prompt_version, judge_decoding`,
    ],
    down: [
      { while: { name: 'metrics', is: 'view' }, sql: 'DROP VIEW IF EXISTS metrics' },
      METRICS_TABLE,
      {
        while: { name: 'attempt_metrics', is: 'table' },
        sql: `INSERT INTO metrics
        SELECT attempt_uid, run_id, config_id, suite, task_id, attempt, grading_version, metric, metric_version, kind, status, value, passed,
          detail, judge_model, judge_prompt_version, judge_decoding, ingested_at
        FROM attempt_metrics FINAL
        ARRAY JOIN metric, metric_version, status, value, passed, detail, judge_model, judge_prompt_version, judge_decoding`,
      },
      'DROP TABLE IF EXISTS attempt_metrics',
    ],
  },
  {
    version: 13,
    name: `issue 15: the tables written with every attempt merge ~${MERGE_SELECTOR_BASE} small parts at a time, not ~5 (merge_selector_base)`,
    up: mergeBase((table) => `ALTER TABLE ${table} MODIFY SETTING merge_selector_base = ${MERGE_SELECTOR_BASE}`),
    down: mergeBase((table) => `ALTER TABLE ${table} RESET SETTING merge_selector_base`),
  },
]

export interface MigrateOptions {
  /** run the cluster form of every statement (store/cluster-ddl.ts); default from FORGE_CLICKHOUSE_CLUSTER */
  cluster?: ClusterOptions | undefined
}

/** Thrown when a migration still fails after its tries; names the migration and the last cause. */
export class MigrationError extends Error {
  override name = 'MigrationError'
}

/** How often a failing migration is tried again, from its first statement (another migrator may be mid-way). */
const MIGRATION_TRIES = 4

async function engineOf(client: ClickHouseClient, name: string): Promise<string | undefined> {
  const rs = await client.query({
    query: 'SELECT engine FROM system.tables WHERE database = currentDatabase() AND name = {name:String}',
    query_params: { name },
    format: 'JSONEachRow',
  })
  const [row] = (await rs.json()) as { engine: string }[]
  return row?.engine
}

async function knowsMergeTreeSetting(client: ClickHouseClient, name: string): Promise<boolean> {
  const [row] = await queryRows<{ n: number | string }>(client, 'SELECT count() AS n FROM system.merge_tree_settings WHERE name = {name:String}', { name })
  return Number(row?.n ?? 0) > 0
}

/** Runs one migration's statements in order; a guarded statement (in all its cluster forms) only while its guard holds. */
export async function runStatements(client: ClickHouseClient, statements: readonly MigrationStatement[], { cluster }: MigrateOptions): Promise<void> {
  for (const statement of statements) {
    const sql = sqlOf(statement)
    if (typeof statement !== 'string' && 'while' in statement) {
      const engine = await engineOf(client, statement.while.name)
      const holds = engine !== undefined && (statement.while.is === 'view') === (engine === 'View')
      if (!holds) continue
    }
    if (typeof statement !== 'string' && 'needs' in statement && !(await knowsMergeTreeSetting(client, statement.needs.mergeTreeSetting))) continue
    for (const form of cluster ? clusterStatements(sql, cluster) : [sql]) await client.command({ query: form })
  }
}

async function recordedVersion(client: ClickHouseClient): Promise<number> {
  const rs = await client.query({ query: 'SELECT max(version) AS v FROM schema_migrations', format: 'JSONEachRow' })
  const [row] = (await rs.json()) as { v: number | string }[]
  return Number(row?.v ?? 0)
}

/**
 * Applies every migration newer than the recorded version, in order; safe to call on every start,
 * from several processes at once (every ingester replica does) and after a migrator was killed
 * mid-way: every statement is idempotent or guarded, and a failing migration is tried again from
 * its first statement unless another migrator recorded it meanwhile.
 */
export async function migrate(client: ClickHouseClient, target = Infinity, opts: MigrateOptions = { cluster: clusterFromEnv() }): Promise<number[]> {
  await client.command({
    query: opts.cluster
      ? clusterLedgerStatement(opts.cluster)
      : `CREATE TABLE IF NOT EXISTS schema_migrations (
      version UInt32, name String, applied_at DateTime64(3, 'UTC') DEFAULT now64(3)
    ) ENGINE = ReplacingMergeTree ORDER BY version`,
  })
  const current = await recordedVersion(client)
  const applied: number[] = []
  for (const m of migrations) {
    if (m.version <= current || m.version > target) continue
    for (let attempt = 1; ; attempt++) {
      if (attempt > 1 && (await recordedVersion(client)) >= m.version) break
      try {
        await runStatements(client, m.up, opts)
        await client.insert({ table: 'schema_migrations', values: [{ version: m.version, name: m.name }], format: 'JSONEachRow' })
        applied.push(m.version)
        break
      } catch (err) {
        if (attempt >= MIGRATION_TRIES) {
          throw new MigrationError(`migration ${m.version} (${m.name}) failed ${attempt} times: ${(err as Error).message}`, { cause: err })
        }
        await sleep(250 * attempt)
      }
    }
  }
  return applied
}

/** Rolls back to `target` (0 = empty), newest first. */
export async function rollback(client: ClickHouseClient, target: number, opts: MigrateOptions = { cluster: clusterFromEnv() }): Promise<number[]> {
  const rs = await client.query({ query: 'SELECT version FROM schema_migrations FINAL ORDER BY version DESC', format: 'JSONEachRow' })
  const versions = ((await rs.json()) as { version: number }[]).map((r) => Number(r.version))
  const undone: number[] = []
  for (const version of versions) {
    if (version <= target) break
    const m = migrations.find((x) => x.version === version)
    if (!m) continue
    await runStatements(client, m.down, opts)
    await client.command({ query: `DELETE FROM schema_migrations WHERE version = ${version}` })
    undone.push(version)
  }
  return undone
}
