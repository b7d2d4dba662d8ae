/**
 * The one ClickHouse gateway. Store code is written once against `@clickhouse/client`;
 * only the connection differs: chDB in-process (embedded) or a ClickHouse server over HTTP (fleet).
 */
import type { ClickHouseClient, createClient } from '@clickhouse/client'
import { ensurePrivateDir } from './private-dir.js'
import { createRequire } from 'node:module'
import { QueryRefusedError, StoreError, StoreLockedError } from './errors.js'
import { readOnlyQuery } from './read-only-query.js'

export type { ClickHouseClient }
type ClickHouseConnection = NonNullable<NonNullable<Parameters<typeof createClient>[0]>['connection']>

export type StoreLocation = { kind: 'embedded'; path: string } | { kind: 'server'; url: string; database?: string }

/** A read-only view of the store: direct, or through the process that owns the embedded store. */
export interface StoreReader {
  /** one read (store/read-only-query.ts): refused with QueryRefusedError unless it is one, stopped after `timeoutSeconds` */
  query<T = Record<string, unknown>>(sql: string, params?: Record<string, unknown>, opts?: ReadOptions): Promise<T[]>
  close(): Promise<void>
}

export interface ReadOptions {
  /** ClickHouse's max_execution_time for this read (default QUERY_TIME_LIMIT_S, at most MAX_QUERY_TIME_LIMIT_S) */
  timeoutSeconds?: number
}

/**
 * Settings of every insert, set once per connection (openClickHouse). A JSON string with half a
 * UTF-16 pair (`"\ud800"`, what JSON.stringify writes for one) is stored as the escape's text instead
 * of failing the insert, and with it every row of its batch, redelivered for ever. Workers store
 * attempts well-formed (core/well-formed.ts): this keeps anything else that slips through from
 * stopping ingestion. Not passed with each insert: chDB's connection turns an insert's settings into a
 * `SET …;` statement before it, and parsing the two statements cost 15–25 % more CPU per insert
 * (400 attempts' metric rows 17.3 → 22.6 ms; issue 15).
 */
export const INSERT_SETTINGS = { input_format_json_throw_on_bad_escape_sequence: 0 } as const

/** How long a read may run unless asked otherwise, and the most it may ask for. */
export const QUERY_TIME_LIMIT_S = 30
export const MAX_QUERY_TIME_LIMIT_S = 600

export async function openClickHouse(location: StoreLocation): Promise<ClickHouseClient> {
  // loaded when a store is opened: a CLI that reads the embedded store through the ingester never needs it
  const { createClient } = await import('@clickhouse/client')
  if (location.kind === 'server') {
    const client = createClient({
      url: location.url,
      ...(location.database ? { database: location.database } : {}),
      // sent with every request (URL parameters): free, unlike chDB's SETs
      clickhouse_settings: { date_time_input_format: 'best_effort', ...INSERT_SETTINGS },
    })
    const ping = await client.ping()
    if (!ping.success) throw new StoreError(`cannot reach ClickHouse at ${location.url}: ${String(ping.error)}`, { cause: ping.error })
    return client
  }
  ensurePrivateDir(location.path)
  // chdb/connection is published as CommonJS only
  const require = createRequire(import.meta.url)
  const { createChdbConnection } = require('chdb/connection') as typeof import('chdb/connection')
  let connection
  try {
    connection = createChdbConnection({ path: location.path })
  } catch (error) {
    throw lockedOr(error, location.path)
  }
  // chdb types its connection against @clickhouse/client-common; the runtime surface is the same
  const client = createClient({ connection: connection as unknown as ClickHouseConnection })
  try {
    await client.query({ query: 'SELECT 1', format: 'JSONEachRow' }).then((rs) => rs.json())
    // a SET stays with chDB's one session: every later insert on this connection has them
    for (const [name, value] of Object.entries(INSERT_SETTINGS)) await client.command({ query: `SET ${name} = ${value}` })
  } catch (error) {
    await client.close().catch(() => undefined)
    throw lockedOr(error, location.path)
  }
  return client
}

function lockedOr(error: unknown, path: string): Error {
  const message = error instanceof Error ? error.message : String(error)
  if (/lock/i.test(message)) {
    return new StoreLockedError(
      `the embedded store at ${path} is in use by another process (chDB allows one owner per directory); ` +
        'start the stack (forge stack up) so commands go through its ingester, or stop the other process',
      { cause: error },
    )
  }
  return new StoreError(`cannot open the embedded store at ${path}: ${message}`, { cause: error })
}

/**
 * Runs a parameterized query and returns its rows. `readOnly` (every read path a user can reach:
 * `forge sql`, the ingester's query service, every reader) runs it under ClickHouse's own readonly
 * mode with a time limit, after refusing what readonly lets through (store/read-only-query.ts).
 */
export async function queryRows<T>(
  client: ClickHouseClient,
  sql: string,
  params: Record<string, unknown> = {},
  opts: { readOnly?: boolean } & ReadOptions = {},
): Promise<T[]> {
  let query = sql
  if (opts.readOnly) {
    const timeoutSeconds = Math.min(opts.timeoutSeconds ?? QUERY_TIME_LIMIT_S, MAX_QUERY_TIME_LIMIT_S)
    const checked = readOnlyQuery(sql, { timeoutSeconds })
    if (!checked.ok) throw new QueryRefusedError(`query refused: ${checked.reason}\n  in: ${firstLine(sql)}`)
    // as SQL, not clickhouse_settings: chDB would turn those into SETs that stick to its one session
    query = checked.sql
  }
  try {
    const rs = await client.query({ query, query_params: params, format: 'JSONEachRow' })
    return (await rs.json()) as T[]
  } catch (error) {
    throw new StoreError(`query failed: ${(error as Error).message}\n  in: ${firstLine(sql)}`, { cause: error })
  }
}

export function directReader(client: ClickHouseClient): StoreReader {
  return {
    query: (sql, params, opts) => queryRows(client, sql, params, { readOnly: true, ...opts }),
    close: () => client.close(),
  }
}

function firstLine(sql: string): string {
  const line = sql.trim().split('\n')[0] ?? ''
  return line.length > 120 ? `${line.slice(0, 117)}...` : line
}
