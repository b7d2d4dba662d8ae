/**
 * The same numbered migrations on a ClickHouse cluster (FORGE_CLICKHOUSE_CLUSTER=<cluster>, with
 * FORGE_CLICKHOUSE_URL): every table becomes `<table>_local` — ReplicatedReplacingMergeTree on each
 * shard's replicas, ON CLUSTER, with `replicated_deduplication_window` in place of chDB's
 * `non_replicated_deduplication_window` — plus `<table>`, a Distributed table over them that every
 * read and write keeps using by its old name. Rows shard by cityHash64 of the first ORDER BY column
 * (run_id, name, sweep_id, …), so all versions of one business key meet on one shard and FINAL
 * collapses them there. Pure: statements in, statements out.
 */
import { readSetting } from '../config/index.js'

export interface ClusterOptions {
  cluster: string
  /** Keeper path prefix of the replicated tables (default /clickhouse/tables) */
  keeperPath?: string
  /** inserts a replica remembers for dedup (the embedded store's window is 1000) */
  dedupWindow?: number
}

/** Thrown when a migration statement has no cluster form (a new migration must stay expressible). */
export class ClusterDdlError extends Error {
  override name = 'ClusterDdlError'
}

const CREATE = /^CREATE TABLE IF NOT EXISTS (\w+) \(([\s\S]*)\)\s*ENGINE = ReplacingMergeTree(?:\(([^)]*)\))?\s+ORDER BY ([\s\S]*?)(?:\s+SETTINGS [\s\S]*)?$/
const ALTER = /^ALTER TABLE (\w+)\s+([\s\S]+)$/
const DROP = /^DROP TABLE IF EXISTS (\w+)$/
const CREATE_VIEW = /^CREATE VIEW IF NOT EXISTS (\w+) AS\s+([\s\S]+)$/
const DROP_VIEW = /^DROP VIEW IF EXISTS (\w+)$/
const INSERT_SELECT = /^INSERT INTO (\w+)\s+SELECT\s[\s\S]+$/

const ident = (name: string): string => {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new ClusterDdlError(`"${name}" is not a plain identifier`)
  return name
}
const quote = (text: string): string => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`

/** The cluster form of one migration statement: one or two statements, each ON CLUSTER. */
export function clusterStatements(sql: string, opts: ClusterOptions): string[] {
  const cluster = ident(opts.cluster)
  const keeper = (opts.keeperPath ?? '/clickhouse/tables').replace(/\/+$/, '')
  const window = opts.dedupWindow ?? 1000
  const statement = sql.trim()
  const create = CREATE.exec(statement)
  if (create) {
    const [, table = '', columns = '', version = '', orderBy = ''] = create
    const local = `${table}_local`
    const engineArgs = [quote(`${keeper}/{shard}/{database}/${local}`), quote('{replica}'), ...(version.trim() ? [version.trim()] : [])]
    return [
      `CREATE TABLE IF NOT EXISTS ${local} ON CLUSTER ${cluster} (${columns}) ENGINE = ReplicatedReplacingMergeTree(${engineArgs.join(', ')}) ORDER BY ${orderBy.trim()} SETTINGS replicated_deduplication_window = ${window}`,
      `CREATE TABLE IF NOT EXISTS ${table} ON CLUSTER ${cluster} AS ${local} ENGINE = Distributed(${quote(cluster)}, currentDatabase(), ${quote(local)}, cityHash64(${shardColumn(orderBy)}))`,
    ]
  }
  const alter = ALTER.exec(statement)
  if (alter) {
    const [, table = '', rest = ''] = alter
    // a MergeTree setting belongs to the replicated local table; the Distributed table has none
    if (/^(MODIFY|RESET) SETTING\b/.test(rest)) return [`ALTER TABLE ${table}_local ON CLUSTER ${cluster} ${rest}`]
    // the Distributed table mirrors the local table's columns
    return [`ALTER TABLE ${table}_local ON CLUSTER ${cluster} ${rest}`, `ALTER TABLE ${table} ON CLUSTER ${cluster} ${rest}`]
  }
  const drop = DROP.exec(statement)
  if (drop) {
    const [, table = ''] = drop
    return [`DROP TABLE IF EXISTS ${table} ON CLUSTER ${cluster} SYNC`, `DROP TABLE IF EXISTS ${table}_local ON CLUSTER ${cluster} SYNC`]
  }
  // a view over the Distributed tables, on every node
  const view = CREATE_VIEW.exec(statement)
  if (view) {
    const [, name = '', select = ''] = view
    return [`CREATE VIEW IF NOT EXISTS ${ident(name)} ON CLUSTER ${cluster} AS ${select}`]
  }
  const dropView = DROP_VIEW.exec(statement)
  if (dropView) return [`DROP VIEW IF EXISTS ${ident(dropView[1] ?? '')} ON CLUSTER ${cluster} SYNC`]
  // moving rows between tables: once, through the Distributed tables (each row lands on its shard)
  const insert = INSERT_SELECT.exec(statement)
  if (insert) {
    ident(insert[1] ?? '')
    return [statement]
  }
  throw new ClusterDdlError(
    `no cluster form for this migration statement (CREATE TABLE … ReplacingMergeTree, ALTER TABLE, DROP TABLE, CREATE VIEW, DROP VIEW or INSERT INTO … SELECT only): ${statement.split('\n')[0]}`,
  )
}

/**
 * The migrations ledger on a cluster: one replicated table on every node of every shard (its Keeper
 * path has no {shard}), so any node the ingester reaches knows the applied versions.
 */
export function clusterLedgerStatement(opts: ClusterOptions): string {
  const cluster = ident(opts.cluster)
  const keeper = (opts.keeperPath ?? '/clickhouse/tables').replace(/\/+$/, '')
  return `CREATE TABLE IF NOT EXISTS schema_migrations ON CLUSTER ${cluster} (
      version UInt32, name String, applied_at DateTime64(3, 'UTC') DEFAULT now64(3)
    ) ENGINE = ReplicatedReplacingMergeTree(${quote(`${keeper}/all/{database}/schema_migrations`)}, '{replica}') ORDER BY version`
}

function shardColumn(orderBy: string): string {
  const first = orderBy.trim().replace(/^\(/, '').split(/[,)]/)[0]?.trim() ?? ''
  return ident(first)
}

/**
 * FORGE_CLICKHOUSE_CLUSTER, honoured only with FORGE_CLICKHOUSE_URL (chDB is one process, never a
 * cluster); FORGE_CLICKHOUSE_KEEPER_PATH overrides the Keeper prefix.
 */
export function clusterFromEnv(env: NodeJS.ProcessEnv = process.env): ClusterOptions | undefined {
  const cluster = readSetting('clickhouseCluster', env)
  if (!cluster || readSetting('clickhouseUrl', env) === undefined) return undefined
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(cluster)) {
    throw new ClusterDdlError(`FORGE_CLICKHOUSE_CLUSTER must be a cluster name from remote_servers (letters, digits, _), got "${cluster}"`)
  }
  const keeperPath = readSetting('clickhouseKeeperPath', env)
  return { cluster, ...(keeperPath ? { keeperPath } : {}) }
}
