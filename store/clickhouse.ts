/**
 * The one ClickHouse gateway. Store code is written once against `@clickhouse/client`;
 * only the connection differs: chDB in-process (embedded) or a ClickHouse server over HTTP (fleet).
 */
import { createClient, type ClickHouseClient } from '@clickhouse/client'
import { mkdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { StoreError, StoreLockedError } from './errors.js'

export type { ClickHouseClient }
type ClickHouseConnection = NonNullable<NonNullable<Parameters<typeof createClient>[0]>['connection']>

export type StoreLocation = { kind: 'embedded'; path: string } | { kind: 'server'; url: string; database?: string }

/** A read-only view of the store: direct, or through the process that owns the embedded store. */
export interface StoreReader {
  query<T = Record<string, unknown>>(sql: string, params?: Record<string, unknown>): Promise<T[]>
  close(): Promise<void>
}

export async function openClickHouse(location: StoreLocation): Promise<ClickHouseClient> {
  if (location.kind === 'server') {
    const client = createClient({
      url: location.url,
      ...(location.database ? { database: location.database } : {}),
      clickhouse_settings: { date_time_input_format: 'best_effort' },
    })
    const ping = await client.ping()
    if (!ping.success) throw new StoreError(`cannot reach ClickHouse at ${location.url}: ${String(ping.error)}`, { cause: ping.error })
    return client
  }
  mkdirSync(location.path, { recursive: true })
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
  embeddedClients.add(client)
  try {
    await client.query({ query: 'SELECT 1', format: 'JSONEachRow' }).then((rs) => rs.json())
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
 * `forge sql`, the ingester's query service) makes ClickHouse refuse anything that writes.
 */
export async function queryRows<T>(
  client: ClickHouseClient,
  sql: string,
  params: Record<string, unknown> = {},
  opts: { readOnly?: boolean } = {},
): Promise<T[]> {
  // chDB turns clickhouse_settings into SETs on its one session: `readonly` would stick and make the
  // ingester's next insert fail. Embedded reads are checked statement by statement instead.
  const embedded = embeddedClients.has(client)
  if (opts.readOnly && embedded) {
    const problem = notReadOnly(sql)
    if (problem) throw new StoreError(`query refused (readonly): ${problem}\n  in: ${firstLine(sql)}`)
  }
  try {
    const rs = await client.query({
      query: sql,
      query_params: params,
      format: 'JSONEachRow',
      ...(opts.readOnly && !embedded ? { clickhouse_settings: { readonly: '2' } } : {}),
    })
    return (await rs.json()) as T[]
  } catch (error) {
    throw new StoreError(`query failed: ${(error as Error).message}\n  in: ${firstLine(sql)}`, { cause: error })
  }
}

export function directReader(client: ClickHouseClient): StoreReader {
  return {
    query: (sql, params) => queryRows(client, sql, params, { readOnly: true }),
    close: () => client.close(),
  }
}

const embeddedClients = new WeakSet<ClickHouseClient>()

const READ_STATEMENTS = /^(select|with|show|describe|desc|explain|exists)\b/i

/** Why `sql` is not one read-only statement, or undefined when it is (strings and comments ignored). */
export function notReadOnly(sql: string): string | undefined {
  const code = sql
    .replace(/'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.)*"|`[^`]*`/g, "''")
    .replace(/--[^\n]*|#[^\n]*|\/\*[\s\S]*?\*\//g, ' ')
    .trim()
    .replace(/;\s*$/, '')
  if (code.includes(';')) return 'one statement at a time'
  if (!READ_STATEMENTS.test(code)) return 'the store is read-only here: SELECT, WITH, SHOW, DESCRIBE, EXPLAIN or EXISTS only'
  if (/\binto\s+outfile\b/i.test(code)) return 'INTO OUTFILE writes a file'
  return undefined
}

function firstLine(sql: string): string {
  const line = sql.trim().split('\n')[0] ?? ''
  return line.length > 120 ? `${line.slice(0, 117)}...` : line
}
