/**
 * The state of an attempt's environment fixtures at one moment, and what changed between two
 * moments. Workers capture states (workspace files, SQLite tables, HTTP collections); graders and
 * invariants read the diff — what actually changed — never the agent's account of it. Pure.
 */

/** A workspace file: its digest, and its content when it is UTF-8 text of at most TEXT_LIMIT bytes. */
export interface FileState {
  sha256: string
  size: number
  text?: string
}

export interface WorkspaceState {
  kind: 'workspace'
  /** by path relative to the workspace root, `/`-separated */
  files: Record<string, FileState>
}

/** One table: its columns, the columns that identify a row (the primary key, else `rowid`), its rows. */
export interface TableState {
  columns: string[]
  key: string[]
  rows: Record<string, unknown>[]
  /** more rows than a capture keeps: a diff of this table is incomplete */
  truncated?: boolean
}

export interface SqliteState {
  kind: 'sqlite'
  tables: Record<string, TableState>
}

export interface HttpState {
  kind: 'http'
  /** records by collection; records are identified by their `id` */
  collections: Record<string, Record<string, unknown>[]>
  /** non-collection documents by path (`/docs/refunds.md`), as served */
  documents: Record<string, string>
}

export type FixtureState = WorkspaceState | SqliteState | HttpState
/** Every environment fixture of an attempt, by fixture name. */
export type EnvState = Record<string, FixtureState>

/** Text files up to this size are kept whole in a capture (graders read them); bigger ones by digest. */
export const TEXT_LIMIT = 256 * 1024

export type ChangeOp = 'added' | 'removed' | 'modified'

/** One thing that changed in one fixture. */
export interface EnvChange {
  fixture: string
  kind: FixtureState['kind']
  op: ChangeOp
  /** workspace: the file path; sqlite: the table; http: the collection, or the document path */
  target: string
  /** the row's or record's key; absent for files, documents and whole tables */
  key?: Record<string, unknown>
  /** file text (or `{sha256, size}`), row or record, before and after */
  before?: unknown
  after?: unknown
  /** for a modified row or record: the fields whose values changed */
  fields?: string[]
}

/** What the graders can read about the environment of an attempt (GradeContext.env). */
export interface EnvironmentView {
  start: EnvState
  end: EnvState
  diff: EnvChange[]
  /** answers to the graders' declared queries, run against the end state before the restore */
  queries: Record<string, EnvQueryResult>
}

/** A read-only query a grader needs answered against a fixture's end state (e.g. the `sql` grader's). */
export interface EnvQuery {
  fixture: string
  sql: string
}

export type EnvQueryResult = { ok: true; rows: Record<string, unknown>[] } | { ok: false; error: string }

/** The key under which an EnvQuery's answer is found in `EnvironmentView.queries`. */
export function envQueryKey(query: EnvQuery): string {
  return `${query.fixture}\u0000${query.sql}`
}

/** JSON with object keys sorted: equal values give equal text, whatever order their keys came in. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value)) ?? 'undefined'
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(value).sort()) out[key] = sortKeys((value as Record<string, unknown>)[key])
    return out
  }
  return value
}

/** Whether two captures of one fixture hold the same content. */
export function sameState(a: FixtureState | undefined, b: FixtureState | undefined): boolean {
  return canonicalJson(a) === canonicalJson(b)
}

/** Every change from `start` to `end`, ordered by fixture, target and key. */
export function diffEnvState(start: EnvState, end: EnvState): EnvChange[] {
  const changes: EnvChange[] = []
  for (const fixture of [...new Set([...Object.keys(start), ...Object.keys(end)])].sort()) {
    const before = start[fixture]
    const after = end[fixture]
    if (before === undefined || after === undefined || before.kind !== after.kind) {
      // a fixture appears or disappears only if the harness broke; show it whole
      changes.push({ fixture, kind: (after ?? before)?.kind ?? 'workspace', op: before === undefined ? 'added' : after === undefined ? 'removed' : 'modified', target: '' })
      continue
    }
    if (before.kind === 'workspace' && after.kind === 'workspace') changes.push(...diffFiles(fixture, before, after))
    else if (before.kind === 'sqlite' && after.kind === 'sqlite') changes.push(...diffTables(fixture, before, after))
    else if (before.kind === 'http' && after.kind === 'http') changes.push(...diffHttp(fixture, before, after))
  }
  return changes
}

function fileValue(file: FileState): unknown {
  return file.text ?? { sha256: file.sha256, size: file.size }
}

function diffFiles(fixture: string, start: WorkspaceState, end: WorkspaceState): EnvChange[] {
  const changes: EnvChange[] = []
  for (const path of sortedKeys(start.files, end.files)) {
    const before = start.files[path]
    const after = end.files[path]
    const base = { fixture, kind: 'workspace' as const, target: path }
    if (before === undefined && after !== undefined) changes.push({ ...base, op: 'added', after: fileValue(after) })
    else if (after === undefined && before !== undefined) changes.push({ ...base, op: 'removed', before: fileValue(before) })
    else if (before !== undefined && after !== undefined && before.sha256 !== after.sha256) {
      changes.push({ ...base, op: 'modified', before: fileValue(before), after: fileValue(after) })
    }
  }
  return changes
}

function diffTables(fixture: string, start: SqliteState, end: SqliteState): EnvChange[] {
  const changes: EnvChange[] = []
  for (const table of sortedKeys(start.tables, end.tables)) {
    const before = start.tables[table]
    const after = end.tables[table]
    const base = { fixture, kind: 'sqlite' as const, target: table }
    if (before === undefined && after !== undefined) {
      changes.push({ ...base, op: 'added', after: { columns: after.columns, rows: after.rows.length } })
      continue
    }
    if (after === undefined && before !== undefined) {
      changes.push({ ...base, op: 'removed', before: { columns: before.columns, rows: before.rows.length } })
      continue
    }
    if (before === undefined || after === undefined) continue
    if (canonicalJson(before.columns) !== canonicalJson(after.columns) || canonicalJson(before.key) !== canonicalJson(after.key)) {
      // a changed schema: the table as a whole changed; rows are compared by the new key where they can be
      changes.push({ ...base, op: 'modified', before: { columns: before.columns }, after: { columns: after.columns } })
    }
    changes.push(...diffRecords(base, after.key, before.rows, after.rows))
  }
  return changes
}

function diffHttp(fixture: string, start: HttpState, end: HttpState): EnvChange[] {
  const changes: EnvChange[] = []
  for (const collection of sortedKeys(start.collections, end.collections)) {
    const base = { fixture, kind: 'http' as const, target: collection }
    changes.push(...diffRecords(base, ['id'], start.collections[collection] ?? [], end.collections[collection] ?? []))
  }
  for (const path of sortedKeys(start.documents, end.documents)) {
    const before = start.documents[path]
    const after = end.documents[path]
    const base = { fixture, kind: 'http' as const, target: path }
    if (before === undefined && after !== undefined) changes.push({ ...base, op: 'added', after })
    else if (after === undefined && before !== undefined) changes.push({ ...base, op: 'removed', before })
    else if (before !== after) changes.push({ ...base, op: 'modified', before, after })
  }
  return changes
}

/**
 * Rows or records matched by key. Duplicate keys are paired in order, so a duplicated record that
 * disappears is one removal, not a modification of its twin.
 */
function diffRecords(
  base: { fixture: string; kind: 'sqlite' | 'http'; target: string },
  keyColumns: readonly string[],
  before: readonly Record<string, unknown>[],
  after: readonly Record<string, unknown>[],
): EnvChange[] {
  const keyOf = (row: Record<string, unknown>): Record<string, unknown> => Object.fromEntries(keyColumns.map((c) => [c, row[c] ?? null]))
  const group = (rows: readonly Record<string, unknown>[]): Map<string, Record<string, unknown>[]> => {
    const groups = new Map<string, Record<string, unknown>[]>()
    for (const row of rows) {
      const k = canonicalJson(keyOf(row))
      const list = groups.get(k)
      if (list === undefined) groups.set(k, [row])
      else list.push(row)
    }
    return groups
  }
  const beforeByKey = group(before)
  const afterByKey = group(after)
  const changes: EnvChange[] = []
  for (const k of [...new Set([...beforeByKey.keys(), ...afterByKey.keys()])].sort()) {
    const olds = beforeByKey.get(k) ?? []
    const news = afterByKey.get(k) ?? []
    // unchanged twins first, so a changed duplicate pairs with its own old self
    const unmatchedOld = [...olds]
    const unmatchedNew: Record<string, unknown>[] = []
    for (const row of news) {
      const at = unmatchedOld.findIndex((old) => canonicalJson(old) === canonicalJson(row))
      if (at >= 0) unmatchedOld.splice(at, 1)
      else unmatchedNew.push(row)
    }
    const pairs = Math.min(unmatchedOld.length, unmatchedNew.length)
    for (let i = 0; i < pairs; i += 1) {
      const old = unmatchedOld[i] as Record<string, unknown>
      const row = unmatchedNew[i] as Record<string, unknown>
      const fields = [...new Set([...Object.keys(old), ...Object.keys(row)])].filter((f) => canonicalJson(old[f]) !== canonicalJson(row[f])).sort()
      changes.push({ ...base, op: 'modified', key: keyOf(row), before: old, after: row, fields })
    }
    for (const old of unmatchedOld.slice(pairs)) changes.push({ ...base, op: 'removed', key: keyOf(old), before: old })
    for (const row of unmatchedNew.slice(pairs)) changes.push({ ...base, op: 'added', key: keyOf(row), after: row })
  }
  return changes
}

function sortedKeys(a: Record<string, unknown>, b: Record<string, unknown>): string[] {
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()
}

/**
 * A glob over `/`-separated paths: `*` and `?` stay within a segment, `**` crosses segments
 * (`data/**` matches everything under data/, `**\/*.csv` any CSV file).
 */
export function globToRegExp(glob: string): RegExp {
  let out = ''
  for (let i = 0; i < glob.length; i += 1) {
    const c = glob[i] as string
    if (c === '*') {
      if (glob[i + 1] === '*') {
        const slash = glob[i + 2] === '/'
        out += slash ? '(?:.*/)?' : '.*'
        i += slash ? 2 : 1
      } else out += '[^/]*'
    } else if (c === '?') out += '[^/]'
    else out += c.replace(/[.+^${}()|[\]\\]/g, '\\$&')
  }
  return new RegExp(`^${out}$`)
}

/** Which changes a selector (of a state_diff grader) picks out. */
export interface ChangeSelector {
  fixture?: string | undefined
  op?: ChangeOp | 'any' | undefined
  /** workspace file path, or http document path (glob) */
  path?: string | undefined
  /** sqlite table */
  table?: string | undefined
  /** http collection */
  collection?: string | undefined
  /** the row/record key holds these values */
  key?: Record<string, unknown> | undefined
  /** the row/record before the change holds these values */
  before?: Record<string, unknown> | undefined
  /** the row/record after the change holds these values */
  after?: Record<string, unknown> | undefined
  /** the state after the change contains this text: a file's or document's text, a row's or record's JSON */
  contains?: string | undefined
}

/** Whether `change` is one the selector describes. */
export function matchesChange(selector: ChangeSelector, change: EnvChange): boolean {
  if (selector.fixture !== undefined && selector.fixture !== change.fixture) return false
  if (selector.op !== undefined && selector.op !== 'any' && selector.op !== change.op) return false
  if (selector.path !== undefined) {
    const isDocument = change.kind === 'http' && change.key === undefined
    if (change.kind !== 'workspace' && !isDocument) return false
    if (!globToRegExp(selector.path).test(change.target)) return false
  }
  if (selector.table !== undefined && (change.kind !== 'sqlite' || change.target !== selector.table)) return false
  if (selector.collection !== undefined && (change.kind !== 'http' || change.key === undefined || change.target !== selector.collection)) return false
  // a selector naming a key or values cannot match a whole-table change
  if (selector.key !== undefined && (change.key === undefined || !holds(change.key, selector.key))) return false
  if (selector.before !== undefined && !holds(change.before, selector.before)) return false
  if (selector.after !== undefined && !holds(change.after, selector.after)) return false
  if (selector.contains !== undefined) {
    const after = typeof change.after === 'string' ? change.after : change.after === undefined ? '' : canonicalJson(change.after)
    if (!after.includes(selector.contains)) return false
  }
  return true
}

/** `value` is a record holding every field of `expected` (numbers and numeric strings compare as numbers). */
function holds(value: unknown, expected: Record<string, unknown>): boolean {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false
  const record = value as Record<string, unknown>
  return Object.entries(expected).every(([field, want]) => looselyEqual(record[field], want))
}

/** Equality for values read from SQLite or JSON: 5 equals "5", everything else by canonical JSON. */
export function looselyEqual(actual: unknown, expected: unknown): boolean {
  if (typeof actual === 'number' && typeof expected === 'string' && expected.trim() !== '') return actual === Number(expected)
  if (typeof actual === 'string' && typeof expected === 'number' && actual.trim() !== '') return Number(actual) === expected
  return canonicalJson(actual) === canonicalJson(expected)
}

/** A change in one line, for grade details. */
export function describeChange(change: EnvChange): string {
  const where = change.key !== undefined ? `${change.target} ${canonicalJson(change.key)}` : change.target || '(whole fixture)'
  const fields = change.fields !== undefined && change.fields.length > 0 ? ` (${change.fields.join(', ')})` : ''
  return `${change.fixture}: ${change.op} ${where}${fields}`
}
