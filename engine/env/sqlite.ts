/**
 * The sqlite fixture: a per-attempt SQLite database (better-sqlite3), seeded once per pool from
 * SQL files and then CSV files into a template file that every instance copies.
 */
import Database from 'better-sqlite3'
import { copyFile, readFile, rm } from 'node:fs/promises'
import path from 'node:path'
import type { SqliteCondition, SqliteFixture } from '../../core/contracts/index.js'
import type { EnvQueryResult, SqliteState, TableState } from '../../core/env-diff.js'
import type { SqlDatabase, SqliteHandle } from '../../core/plugins.js'
import { parseCsv } from './csv.js'
import type { FixtureDriver, FixtureInstance, FixtureTemplate } from './driver.js'
import { FixtureSeedError } from './errors.js'

/** A capture keeps at most this many rows of a table (and marks it truncated beyond). */
export const MAX_CAPTURED_ROWS = 50_000

const quoteIdent = (name: string): string => `"${name.replaceAll('"', '""')}"`

interface ColumnInfo {
  name: string
  type: string
  pk: number
}

function columnsOf(db: Database.Database, table: string): ColumnInfo[] {
  return db.prepare(`PRAGMA table_info(${quoteIdent(table)})`).all() as ColumnInfo[]
}

function userTables(db: Database.Database): string[] {
  const rows = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all() as { name: string }[]
  return rows.map((r) => r.name)
}

function hasRowid(db: Database.Database, table: string): boolean {
  try {
    db.prepare(`SELECT rowid FROM ${quoteIdent(table)} LIMIT 0`).all()
    return true
  } catch {
    return false
  }
}

/** A value as JSON can carry it: blobs become `{ $blob: base64 }`, big integers numbers or text. */
function plain(value: unknown): unknown {
  if (Buffer.isBuffer(value)) return { $blob: value.toString('base64') }
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString()
  return value
}

/** Reads every user table back: columns, key (primary key, else rowid) and rows in key order. */
export function captureSqlite(db: Database.Database): SqliteState {
  const tables: Record<string, TableState> = {}
  for (const table of userTables(db)) {
    const info = columnsOf(db, table)
    const pk = info.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name)
    const key = pk.length > 0 ? pk : hasRowid(db, table) ? ['rowid'] : info.map((c) => c.name)
    const select = key[0] === 'rowid' && pk.length === 0 ? `rowid AS rowid, *` : '*'
    const order = key.map(quoteIdent).join(', ')
    const raw = db.prepare(`SELECT ${select} FROM ${quoteIdent(table)} ORDER BY ${order} LIMIT ${MAX_CAPTURED_ROWS + 1}`).all() as Record<string, unknown>[]
    const rows = raw.slice(0, MAX_CAPTURED_ROWS).map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, plain(v)])))
    const state: TableState = { columns: info.map((c) => c.name), key, rows }
    if (raw.length > MAX_CAPTURED_ROWS) state.truncated = true
    tables[table] = state
  }
  return { kind: 'sqlite', tables }
}

/** Runs one read-only query; a statement that could write is refused, never run. */
export function readOnlyQuery(db: Database.Database, sql: string): EnvQueryResult {
  try {
    const statement = db.prepare(sql)
    if (!statement.readonly || !statement.reader) return { ok: false, error: 'not a read-only query (it must return rows and write nothing)' }
    const rows = (statement.all() as Record<string, unknown>[]).map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, plain(v)])))
    return { ok: true, rows }
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) }
  }
}

function csvValue(text: string, type: string): unknown {
  if (text === '') return null
  const affinity = type.toUpperCase()
  if (/INT|REAL|FLOA|DOUB|NUM|DEC/.test(affinity) && text.trim() !== '' && Number.isFinite(Number(text))) return Number(text)
  return text
}

function inferType(values: string[]): string {
  const present = values.filter((v) => v !== '')
  if (present.length > 0 && present.every((v) => /^-?\d+$/.test(v))) return 'INTEGER'
  if (present.length > 0 && present.every((v) => v.trim() !== '' && Number.isFinite(Number(v)))) return 'REAL'
  return 'TEXT'
}

/** Loads a CSV (header row first) into `table`, creating it with inferred column types when it does not exist. */
function loadCsv(db: Database.Database, table: string, text: string, fixture: string, file: string): void {
  let rows: string[][]
  try {
    rows = parseCsv(text)
  } catch (error) {
    throw new FixtureSeedError(fixture, `${file}: ${error instanceof Error ? error.message : String(error)}`)
  }
  const [header, ...data] = rows
  if (header === undefined || header.length === 0) throw new FixtureSeedError(fixture, `${file}: no header row`)
  data.forEach((row, i) => {
    if (row.length !== header.length) throw new FixtureSeedError(fixture, `${file}: row ${i + 2} has ${row.length} fields, the header has ${header.length}`)
  })
  let info = columnsOf(db, table)
  if (info.length === 0) {
    const columns = header.map((name, c) => `${quoteIdent(name)} ${inferType(data.map((row) => row[c] ?? ''))}`)
    db.exec(`CREATE TABLE ${quoteIdent(table)} (${columns.join(', ')})`)
    info = columnsOf(db, table)
  }
  const types = new Map(info.map((c) => [c.name, c.type]))
  for (const name of header) if (!types.has(name)) throw new FixtureSeedError(fixture, `${file}: column "${name}" is not in table "${table}"`)
  const insert = db.prepare(`INSERT INTO ${quoteIdent(table)} (${header.map(quoteIdent).join(', ')}) VALUES (${header.map(() => '?').join(', ')})`)
  db.transaction(() => {
    for (const row of data) insert.run(...row.map((v, c) => csvValue(v, types.get(header[c] as string) ?? '')))
  })()
}

function applyCondition(db: Database.Database, condition: SqliteCondition, fixture: string): void {
  const info = columnsOf(db, condition.table)
  if (info.length === 0) throw new FixtureSeedError(fixture, `${condition.type}: no table "${condition.table}"`)
  const where = condition.where === undefined ? '' : ` WHERE ${condition.where}`
  if (condition.type === 'missing_records') {
    db.exec(`DELETE FROM ${quoteIdent(condition.table)}${where}`)
    return
  }
  const pk = info.filter((c) => c.pk > 0)
  // a single INTEGER PRIMARY KEY is the rowid: copies get new ids; any other key would collide
  if (pk.length > 1 || (pk.length === 1 && (pk[0] as ColumnInfo).type.toUpperCase() !== 'INTEGER')) {
    throw new FixtureSeedError(fixture, `duplicate_records: table "${condition.table}" has a primary key other than one INTEGER column, so its rows cannot be duplicated`)
  }
  const columns = info.filter((c) => c.pk === 0).map((c) => quoteIdent(c.name)).join(', ')
  db.exec(`INSERT INTO ${quoteIdent(condition.table)} (${columns}) SELECT ${columns} FROM ${quoteIdent(condition.table)}${where} ORDER BY rowid`)
}

function expectations(spec: SqliteFixture, state: SqliteState): string[] {
  const problems: string[] = []
  for (const [table, count] of Object.entries(spec.expect?.rows ?? {})) {
    const found = state.tables[table]
    if (found === undefined) problems.push(`expected table "${table}" is missing`)
    else if (found.rows.length !== count) problems.push(`table "${table}" has ${found.rows.length} row(s), expected ${count}`)
  }
  return problems
}

export const sqliteDriver: FixtureDriver<SqliteFixture> = {
  kind: 'sqlite',
  async template(spec, ctx): Promise<FixtureTemplate> {
    const templatePath = path.join(ctx.dir, `${spec.name}.sqlite`)
    const db = new Database(templatePath)
    let baseline: SqliteState
    try {
      const runSql = async (files: string | string[] | undefined): Promise<void> => {
        for (const file of files === undefined ? [] : typeof files === 'string' ? [files] : files) {
          const text = await readFile(path.resolve(ctx.fixturesDir, file), 'utf8')
          try {
            db.exec(text)
          } catch (error) {
            throw new FixtureSeedError(spec.name, `${file}: ${error instanceof Error ? error.message : String(error)}`, { cause: error })
          }
        }
      }
      await runSql(spec.sql)
      for (const [table, file] of Object.entries(spec.csv ?? {})) {
        loadCsv(db, table, await readFile(path.resolve(ctx.fixturesDir, file), 'utf8'), spec.name, file)
      }
      await runSql(spec.sql_after)
      for (const condition of spec.conditions) {
        try {
          applyCondition(db, condition, spec.name)
        } catch (error) {
          if (error instanceof FixtureSeedError) throw error
          throw new FixtureSeedError(spec.name, `${condition.type} on "${condition.table}": ${error instanceof Error ? error.message : String(error)}`, { cause: error })
        }
      }
      baseline = captureSqlite(db)
    } finally {
      db.close()
    }
    return {
      baseline,
      expectations: (state) => (state.kind === 'sqlite' ? expectations(spec, state) : [`expected a sqlite state, got ${state.kind}`]),
      async instantiate(dir): Promise<FixtureInstance> {
        const file = path.join(dir, `${spec.name}.sqlite`)
        const copy = async (): Promise<void> => {
          await rm(`${file}-journal`, { force: true })
          await rm(`${file}-wal`, { force: true })
          await rm(`${file}-shm`, { force: true })
          await copyFile(templatePath, file)
        }
        await copy()
        let live = new Database(file)
        const handle: SqliteHandle = { kind: 'sqlite', name: spec.name, path: file, db: live as unknown as SqlDatabase }
        const settle = (): void => {
          // an agent's transaction left open never committed: it did not happen
          if (live.inTransaction) live.exec('ROLLBACK')
        }
        return {
          handle,
          async capture() {
            settle()
            return captureSqlite(live)
          },
          query(sql) {
            settle()
            const reader = new Database(file, { readonly: true, fileMustExist: true })
            try {
              return readOnlyQuery(reader, sql)
            } finally {
              reader.close()
            }
          },
          async restore() {
            if (live.open) live.close()
            await copy()
            live = new Database(file)
            handle.db = live as unknown as SqlDatabase
          },
          async close() {
            if (live.open) live.close()
          },
        }
      },
      async dispose() {
        await rm(templatePath, { force: true })
      },
    }
  },
}
