/**
 * The audit trail, pure: a content hash over the canonical form of every stored result (an attempt
 * with its rows, a regrade, a review resolution), a manifest that keeps a digest per row and per
 * field so a check can name what changed, and a per-run hash chain over the results in a fixed
 * order whose head is stored on the run record. `verifyAudit` recomputes all of it from stored rows
 * and reports the first broken link. Nothing here reads a store or a clock.
 *
 * Canonical form: a row is the object the ingester inserts, without `ingested_at`; a value is its
 * JSON text (numbers as JSON numbers, which is how ClickHouse returns them with
 * `output_format_json_quote_64bit_integers = 0`).
 */
import * as crypto from 'node:crypto'
import { createHash, createHmac } from 'node:crypto'

/**
 * Bumped when the canonical form, a digest or the rows of a result change; stored in every manifest,
 * and a manifest is checked by the rules of its own version. 1: a field's digest was the first 8 hex
 * of its sha-256; 2: a field of at most SHORT_FIELD characters (nearly all of them) gets a 32-bit
 * FNV-1a instead, a hash call less per column (~0.2 ms of a worker's CPU per attempt); 3: an
 * attempt's metrics are one row per grading version and kind (table `attempt_metrics`, its columns
 * arrays) instead of one `metrics` row per metric — 5 rows for a smoke attempt instead of 22, the
 * manifest 58 % smaller (issue 15); 4: a table whose columns are its STANDARD_COLUMNS is left out
 * of the stored manifest's `columns` (they were 55 % of a manifest, the same in every one), and the
 * content hash is over the columns with those put back — the same hash as with them listed. Field
 * digests only name what changed in a row; whether it changed is the row's sha-256, in every version.
 */
export const AUDIT_VERSION = 4
/** the first version whose metrics are `attempt_metrics` rows (older manifests list one `metrics` row per metric) */
export const METRICS_AS_ARRAYS = 3
/** the first version whose manifests leave a table's standard columns out */
export const STANDARD_COLUMNS_LEFT_OUT = 4

/**
 * The columns (sorted, `ingested_at` left out) of the rows Forge stores for a result, as its
 * converters build them (test/unit/audit-columns.test.ts holds them to that): a manifest of version
 * 4 or later omits a table's columns when they are exactly these. Frozen: stored manifests rely on
 * them, so a table whose columns change is listed in full until a new version names its new ones.
 */
export const STANDARD_COLUMNS: Readonly<Record<string, readonly string[]>> = {
  attempt_grades: ['attempt', 'attempt_uid', 'config_id', 'error', 'failure_bucket', 'grades', 'grading_version', 'invariants', 'outcome', 'regraded_at', 'run_id', 'suite', 'task_id', 'validity'],
  attempt_metrics: ['attempt', 'attempt_uid', 'config_id', 'detail', 'grading_version', 'judge_decoding', 'judge_model', 'judge_prompt_version', 'kind', 'metric', 'metric_version', 'passed', 'run_id', 'status', 'suite', 'task_id', 'value'],
  attempts: [
    'adapter', 'attempt', 'attempt_uid', 'budget_limit', 'config_id', 'cost_usd', 'decoding', 'error', 'failure_bucket', 'finished_at', 'grades', 'injected_fault_kinds', 'injected_faults', 'input_tokens', 'instruction', 'invariants',
    'latency_ms', 'model', 'outcome', 'output', 'output_tokens', 'price_table_version', 'run_id', 'seed', 'self_report', 'started_at', 'suite', 'task_id', 'tool_call_count', 'validity', 'worker_id',
  ],
  judgements: [
    'attempt', 'attempt_uid', 'confidence', 'config_id', 'created_at', 'decision', 'divergence_step', 'explanation', 'grading_version', 'judge_decoding', 'judge_model', 'judge_prompt_version', 'low_confidence', 'needs_human_review',
    'review_packet', 'review_reasons', 'revision', 'run_id', 'suite', 'task_id', 'tier0_failed', 'tier2_calls', 'tier2_error', 'tier2_status',
  ],
  review_resolutions: ['attempt_uid', 'failure_bucket', 'grading_version', 'note', 'resolution_id', 'resolved_at', 'reviewer', 'run_id', 'task_id', 'verdict'],
  tool_calls: ['args', 'attempt_uid', 'call_index', 'duration_ms', 'error', 'injected_fault', 'intercepted', 'name', 'refused', 'result', 'retry_index', 'run_id', 'started_ms', 'task_id'],
  traces: ['attempt', 'attempt_uid', 'bytes', 'config_id', 'run_id', 'stored', 'stored_at', 'suite', 'task_id', 'truncated'],
}

/** the chain's genesis text (unchanged since version 1, so older chains still verify) */
const CHAIN_VERSION = 1
const SHORT_FIELD = 256

/** What kind of stored result an entry covers. */
export type AuditEntryKind = 'attempt' | 'judgement' | 'regrade' | 'resolution'

/** One stored row: its table, its key within the entry, and its columns. */
export interface AuditRow {
  table: string
  key: string
  values: Record<string, unknown>
}

/** A row as the manifest keeps it: a digest of the whole row and a short one per column. */
export interface ManifestRow {
  table: string
  key: string
  /** sha-256 of the row's canonical form */
  digest: string
  /** 8 hex characters per column, in the order of `AuditManifest.columns[table]` */
  fields: string
}

/** What an entry's content hash is computed over. */
export interface AuditManifest {
  version: number
  /** the columns hashed, per table, in order */
  columns: Record<string, string[]>
  rows: ManifestRow[]
}

/** One stored result of a run with its content hash (table `audit_entries`). */
export interface AuditEntry {
  run_id: string
  entry_kind: AuditEntryKind
  /** attempt_uid; `<attempt_uid>@v<grading version>` for a judge worker's judgement or a regrade; the resolution id */
  entry_key: string
  content_hash: string
  manifest: AuditManifest
}

/** What a chain links of an entry: which result, and its content hash. */
export type AuditEntryHead = Pick<AuditEntry, 'entry_kind' | 'entry_key' | 'content_hash'>

/** One link of a run's chain (table `audit_chain`). */
export interface AuditLink {
  run_id: string
  seq: number
  entry_kind: AuditEntryKind
  entry_key: string
  content_hash: string
  prev_hash: string
  link_hash: string
}

/** Columns never hashed: when a row was stored is the store's business, not the result's. */
const UNHASHED = new Set(['ingested_at'])

// one-shot crypto.hash (Node ≥ 20.12) is ~2.5× quicker than a Hash object for the many short
// texts of a manifest; the digest is the same
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash
const sha256 = oneShot !== undefined ? (text: string): string => oneShot('sha256', text, 'hex') : (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex')

function canonicalValue(value: unknown): string {
  if (value === undefined || value === null) return 'null'
  if (typeof value === 'string' || typeof value === 'number') return JSON.stringify(value)
  if (typeof value === 'boolean') return value ? '1' : '0'
  // appended in place rather than mapped and joined: a trace's and a tool call's nested values are most of a manifest's work
  if (Array.isArray(value)) {
    // an array of strings, numbers and nulls (a metric row's columns) reads the same as JSON: the native encoder writes it
    if (isFlatJsonArray(value)) return JSON.stringify(value)
    let out = '['
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ','
      // a hole stays empty, as Array.prototype.join leaves it
      if (i in value) out += canonicalValue(value[i])
    }
    return out + ']'
  }
  const keys = Object.keys(value as object).sort()
  let out = '{'
  for (let i = 0; i < keys.length; i++) {
    if (i > 0) out += ','
    out += `${JSON.stringify(keys[i])}:${canonicalValue((value as Record<string, unknown>)[keys[i]!])}`
  }
  return out + '}'
}

/** The sorted hashed columns of each shape of row met so far (its keys in order): rows of a table nearly always share one. */
const columnsOfShape = new Map<string, string[]>()

/** An array without holes whose every element is a string, a number or null: its canonical text is its JSON. */
function isFlatJsonArray(value: readonly unknown[]): boolean {
  for (let i = 0; i < value.length; i++) {
    const element = value[i]
    if (typeof element !== 'string' && typeof element !== 'number' && element !== null) return false
  }
  return true
}

/** The columns of a table's rows that are hashed, in a fixed order. */
function columnsOf(rows: readonly AuditRow[]): string[] {
  const shapes = new Set(rows.map((row) => Object.keys(row.values).join('\u0000')))
  const [shape] = shapes
  if (shapes.size === 1 && shape !== undefined) {
    let columns = columnsOfShape.get(shape)
    if (columns === undefined) {
      columns = shape === '' ? [] : shape.split('\u0000').filter((name) => !UNHASHED.has(name)).sort()
      // bounded: a process meets a handful of shapes; rows of made-up shapes (tests) must not grow it forever
      if (columnsOfShape.size < 256) columnsOfShape.set(shape, columns)
    }
    return columns
  }
  const names = new Set<string>()
  for (const row of rows) for (const name of Object.keys(row.values)) if (!UNHASHED.has(name)) names.add(name)
  return [...names].sort()
}

/** A manifest's columns of `table`: listed, or (version 4 and later) the table's standard ones; undefined for a table it does not know. */
export function manifestColumns(manifest: Pick<AuditManifest, 'version' | 'columns'>, table: string): readonly string[] | undefined {
  return manifest.columns[table] ?? (manifest.version >= STANDARD_COLUMNS_LEFT_OUT ? STANDARD_COLUMNS[table] : undefined)
}

function sameColumns(a: readonly string[], b: readonly string[] | undefined): boolean {
  return b !== undefined && a.length === b.length && a.every((name, i) => name === b[i])
}

/** 32-bit FNV-1a over a text's UTF-16 code units, as 8 hex characters */
function fnv1a(text: string): string {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return (h >>> 0).toString(16).padStart(8, '0')
}

/** A field's short digest in manifests of `version`. */
function fieldDigest(part: string, version: number): string {
  return version >= 2 && part.length <= SHORT_FIELD ? fnv1a(part) : sha256(part).slice(0, 8)
}

/**
 * The canonical forms and field digests one manifest already computed: its rows repeat most of their
 * values (the attempt's ids in every row; a metric row's kind, status and version), and computing
 * them was the largest part of a worker's audit work (issue 15). Only a cache: the digests are the same.
 */
class ManifestMemo {
  private readonly canonical = new Map<string | number | boolean, string>()
  private readonly digests = new Map<string, string>()

  constructor(private readonly version: number) {}

  // a long text (a stored trace, an output) is rarely repeated: looking it up would hash it once more for nothing
  canonicalOf(value: unknown): string {
    if (typeof value === 'string' ? value.length > SHORT_FIELD : typeof value !== 'number' && typeof value !== 'boolean') return canonicalValue(value)
    let text = this.canonical.get(value as string | number | boolean)
    if (text === undefined) this.canonical.set(value as string | number | boolean, (text = canonicalValue(value)))
    return text
  }

  fieldDigestOf(part: string): string {
    if (part.length > SHORT_FIELD) return fieldDigest(part, this.version)
    let digest = this.digests.get(part)
    if (digest === undefined) this.digests.set(part, (digest = fieldDigest(part, this.version)))
    return digest
  }
}

function rowDigests(row: AuditRow, columns: readonly string[], memo: ManifestMemo): { digest: string; fields: string } {
  const parts = columns.map((column) => memo.canonicalOf(row.values[column]))
  let fields = ''
  for (const part of parts) fields += memo.fieldDigestOf(part)
  return { digest: sha256(`${row.table}\n${row.key}\n${parts.join('\n')}`), fields }
}

/**
 * The manifest of a result's rows (sorted by table and key), by the rules of `version` (a stored
 * manifest's own when it is checked: then `columns` are that manifest's, see manifestColumns).
 */
export function manifestOf(rows: readonly AuditRow[], columns?: (table: string) => readonly string[] | undefined, version = AUDIT_VERSION): AuditManifest {
  const tables = [...new Set(rows.map((row) => row.table))].sort()
  const cols = new Map<string, readonly string[]>()
  for (const table of tables) cols.set(table, columns?.(table) ?? columnsOf(rows.filter((row) => row.table === table)))
  const memo = new ManifestMemo(version)
  const manifestRows = [...rows]
    .sort((a, b) => (a.table === b.table ? compare(a.key, b.key) : compare(a.table, b.table)))
    .map((row) => ({ table: row.table, key: row.key, ...rowDigests(row, cols.get(row.table)!, memo) }))
  const listed: Record<string, string[]> = {}
  for (const [table, names] of cols) {
    if (version < STANDARD_COLUMNS_LEFT_OUT || !sameColumns(names, STANDARD_COLUMNS[table])) listed[table] = [...names]
  }
  return { version, columns: listed, rows: manifestRows }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/** Canonical texts of the columns of the tables of a manifest, by their tables and columns (a handful per process). */
const canonicalColumnsOf = new Map<string, string>()

/**
 * The content hash of a manifest: sha-256 over its version, columns (each table's, listed or
 * standard) and row digests — the canonical text of `{ version, columns, rows: [table, key, digest][] }`.
 */
export function contentHashOf(manifest: AuditManifest): string {
  // before version 4 every table is listed (and only those count)
  const tables = manifest.version < STANDARD_COLUMNS_LEFT_OUT ? Object.keys(manifest.columns).sort() : [...new Set([...Object.keys(manifest.columns), ...manifest.rows.map((r) => r.table)])].sort()
  const columns = tables.map((table) => [table, manifestColumns(manifest, table) ?? []] as const)
  const key = columns.map(([table, names]) => `${table}=${names.join(',')}`).join('\n')
  let canonicalColumns = canonicalColumnsOf.get(key)
  if (canonicalColumns === undefined) {
    canonicalColumns = canonicalValue(Object.fromEntries(columns))
    if (canonicalColumnsOf.size < 256) canonicalColumnsOf.set(key, canonicalColumns)
  }
  // canonicalValue of the whole object, its keys in their sorted order (columns, rows, version)
  return sha256(`{"columns":${canonicalColumns},"rows":${canonicalValue(manifest.rows.map((r) => [r.table, r.key, r.digest]))},"version":${canonicalValue(manifest.version)}}`)
}

/** The audit entry of one stored result. */
export function auditEntryOf(runId: string, kind: AuditEntryKind, key: string, rows: readonly AuditRow[]): AuditEntry {
  const manifest = manifestOf(rows)
  return { run_id: runId, entry_kind: kind, entry_key: key, content_hash: contentHashOf(manifest), manifest }
}

/** Where a run's chain starts. */
export function genesisHash(runId: string): string {
  return sha256(`forge-audit-v${CHAIN_VERSION}\n${runId}`)
}

/** The hash of one link: its predecessor, position, entry and content. */
export function linkHashOf(link: Omit<AuditLink, 'link_hash' | 'run_id'>): string {
  return sha256(`${link.prev_hash}\n${link.seq}\n${link.entry_kind}\n${link.entry_key}\n${link.content_hash}`)
}

/** Kinds in the order a run is first sealed: attempts by key, then the judge worker's judgements; later regrades and resolutions append. */
const KIND_ORDER: Record<AuditEntryKind, number> = { attempt: 0, judgement: 1, regrade: 2, resolution: 3 }

/** The fixed order of entries in a chain. */
export function chainOrder(a: Pick<AuditEntry, 'entry_kind' | 'entry_key'>, b: Pick<AuditEntry, 'entry_kind' | 'entry_key'>): number {
  return KIND_ORDER[a.entry_kind] - KIND_ORDER[b.entry_kind] || compare(a.entry_key, b.entry_key)
}

/**
 * Links extending a chain whose last link is `tail` (none: a new chain) by `entries`, in the fixed
 * order. Returns the links and the new head.
 */
export function extendChain(runId: string, tail: Pick<AuditLink, 'seq' | 'link_hash'> | undefined, entries: readonly AuditEntryHead[]): { links: AuditLink[]; head: string } {
  let prev = tail?.link_hash ?? genesisHash(runId)
  let seq = tail === undefined ? 0 : tail.seq + 1
  const links = [...entries].sort(chainOrder).map((entry) => {
    const link = { seq: seq++, entry_kind: entry.entry_kind, entry_key: entry.entry_key, content_hash: entry.content_hash, prev_hash: prev }
    prev = linkHashOf(link)
    return { run_id: runId, ...link, link_hash: prev }
  })
  return { links, head: prev }
}

/**
 * What sealing adds to a run's chain: a link for every entry the chain does not link yet, in the fixed
 * order after its last link, and the head then (the last link's hash; a chain of nothing: the genesis).
 */
export function sealLinks(
  runId: string,
  chain: readonly Pick<AuditLink, 'seq' | 'entry_kind' | 'entry_key' | 'link_hash'>[],
  entries: readonly AuditEntryHead[],
): { links: AuditLink[]; head: string } {
  const linked = new Set(chain.map((l) => entryId(l.entry_kind, l.entry_key)))
  return extendChain(runId, chain.at(-1), entries.filter((e) => !linked.has(entryId(e.entry_kind, e.entry_key))))
}

/** HMAC-SHA256 of a run's head under a key held outside the store (FORGE_AUDIT_KEY). */
export function signHead(runId: string, head: string, key: string): string {
  return createHmac('sha256', key).update(`${runId}\n${head}`, 'utf8').digest('hex')
}

// ---------------------------------------------------------------------------------------------
// verification

/** What verification found wrong, in chain order; the first is the first broken link. */
export interface AuditProblem {
  /** the chain position the problem is at (null: not at a link, e.g. a row no entry covers) */
  seq: number | null
  kind:
    | 'not_sealed'
    | 'missing_link'
    | 'reordered_links'
    | 'edited_link'
    | 'head_replaced'
    | 'bad_signature'
    | 'missing_entry'
    | 'edited_entry'
    | 'extra_entry'
    | 'missing_row'
    | 'extra_row'
    | 'edited_field'
    | 'reordered_rows'
    | 'swapped_rows'
  entry: string
  detail: string
}

export interface AuditVerifyInput {
  runId: string
  /** the run record's head and signature */
  head: string
  signature: string
  /** the chain as stored, in seq order */
  links: readonly AuditLink[]
  /** the stored entries */
  entries: readonly AuditEntry[]
  /** the stored rows of each entry, by `<kind>\u0000<key>`, as read back */
  rows: ReadonlyMap<string, readonly AuditRow[]>
  /** rows of the run that no entry claims (e.g. an attempt inserted later) */
  unclaimed: readonly AuditRow[]
  /** FORGE_AUDIT_KEY when set: the head's signature is checked */
  key?: string | undefined
}

export interface AuditReport {
  run_id: string
  intact: boolean
  head: string
  links: number
  /** checked against FORGE_AUDIT_KEY; null: no key given, or the run was not signed */
  signature_valid: boolean | null
  problems: AuditProblem[]
}

export const entryId = (kind: AuditEntryKind, key: string): string => `${kind}\u0000${key}`

/** Recomputes the chain, every entry's content hash and every row digest; names each difference. */
export function verifyAudit(input: AuditVerifyInput): AuditReport {
  const problems: AuditProblem[] = []
  const { runId, links } = input
  if (links.length === 0 && input.head === '') {
    problems.push({ seq: null, kind: 'not_sealed', entry: '', detail: `run ${runId} has no audit chain (it was never sealed)` })
  }

  // the chain: contiguous positions, each link's predecessor and hash
  let prev = genesisHash(runId)
  const byContent = new Map(links.map((l) => [l.link_hash, l]))
  links.forEach((link, i) => {
    const where = `${link.entry_kind} ${link.entry_key}`
    if (link.seq !== i) problems.push({ seq: i, kind: 'missing_link', entry: where, detail: `chain position ${i} is missing (next stored link is seq ${link.seq})` })
    if (link.prev_hash !== prev) {
      const moved = byContent.has(link.prev_hash)
      problems.push({
        seq: i,
        kind: moved ? 'reordered_links' : 'edited_link',
        entry: where,
        detail: moved ? `link ${i} follows a link stored elsewhere in the chain: links were reordered` : `link ${i} does not follow link ${i - 1} (its prev_hash was changed, or a link before it was removed)`,
      })
    }
    const recomputed = linkHashOf({ seq: link.seq, entry_kind: link.entry_kind, entry_key: link.entry_key, content_hash: link.content_hash, prev_hash: link.prev_hash })
    if (recomputed !== link.link_hash) problems.push({ seq: i, kind: 'edited_link', entry: where, detail: `link ${i} was edited: its hash does not match its fields` })
    prev = link.link_hash
  })
  const tip = links.at(-1)?.link_hash ?? genesisHash(runId)
  if (links.length > 0 && input.head !== tip) {
    problems.push({ seq: links.length - 1, kind: 'head_replaced', entry: 'run record', detail: `the run's head ${short(input.head)} is not the chain's last link ${short(tip)}` })
  }
  let signatureValid: boolean | null = null
  if (input.key !== undefined && input.key !== '' && input.head !== '') {
    signatureValid = input.signature !== '' && input.signature === signHead(runId, input.head, input.key)
    if (!signatureValid) {
      problems.push({
        seq: links.length - 1,
        kind: 'bad_signature',
        entry: 'run record',
        detail: input.signature === '' ? 'the run has no head signature, but FORGE_AUDIT_KEY is set' : "the head's signature does not match FORGE_AUDIT_KEY: the head (or the whole chain) was rewritten",
      })
    }
  }

  // entries: each link's entry, its content hash, its rows
  const entries = new Map(input.entries.map((e) => [entryId(e.entry_kind, e.entry_key), e]))
  const linked = new Set<string>()
  const rowsByTable = new Map<string, { entry: string; row: ManifestRow }[]>()
  for (const entry of input.entries) {
    for (const row of entry.manifest.rows) {
      const list = rowsByTable.get(row.table) ?? []
      list.push({ entry: entry.entry_key, row })
      rowsByTable.set(row.table, list)
    }
  }
  links.forEach((link, i) => {
    const id = entryId(link.entry_kind, link.entry_key)
    const where = `${link.entry_kind} ${link.entry_key}`
    linked.add(id)
    const entry = entries.get(id)
    if (entry === undefined) {
      problems.push({ seq: i, kind: 'missing_entry', entry: where, detail: `the audit entry of link ${i} is missing` })
      return
    }
    if (entry.content_hash !== link.content_hash || contentHashOf(entry.manifest) !== entry.content_hash) {
      problems.push({ seq: i, kind: 'edited_entry', entry: where, detail: `the audit entry was edited: its content hash no longer matches link ${i}` })
    }
    problems.push(...compareRows(i, where, entry.entry_key, entry.manifest, input.rows.get(id) ?? [], rowsByTable))
  })
  for (const entry of input.entries) {
    const id = entryId(entry.entry_kind, entry.entry_key)
    if (!linked.has(id)) problems.push({ seq: null, kind: 'extra_entry', entry: `${entry.entry_kind} ${entry.entry_key}`, detail: 'an audit entry no link of the chain covers' })
  }
  for (const row of input.unclaimed) {
    problems.push({ seq: null, kind: 'extra_row', entry: `${row.table} ${row.key}`, detail: `a ${row.table} row of the run that no audit entry covers (inserted after the fact?)` })
  }
  problems.sort((a, b) => (a.seq ?? Infinity) - (b.seq ?? Infinity))
  return { run_id: runId, intact: problems.length === 0, head: input.head, links: links.length, signature_valid: signatureValid, problems }
}

/** Columns that place a row (which attempt, which call): content moved between places differs only in these. */
const PLACE_COLUMNS = new Set(['attempt_uid', 'run_id', 'config_id', 'suite', 'task_id', 'attempt', 'call_index', 'grading_version', 'resolution_id'])

/** The rows as stored against the manifest: missing, extra, edited (naming columns), reordered or swapped. */
function compareRows(seq: number, where: string, entryKey: string, manifest: AuditManifest, stored: readonly AuditRow[], others: ReadonlyMap<string, { entry: string; row: ManifestRow }[]>): AuditProblem[] {
  const problems: AuditProblem[] = []
  const recomputed = manifestOf(stored, (table) => manifestColumns(manifest, table), manifest.version)
  const now = new Map(recomputed.rows.map((r) => [`${r.table}\u0000${r.key}`, r]))
  const then = new Map(manifest.rows.map((r) => [`${r.table}\u0000${r.key}`, r]))
  for (const [id, expected] of then) {
    const actual = now.get(id)
    const at = `${expected.table} ${expected.key}`
    if (actual === undefined) {
      problems.push({ seq, kind: 'missing_row', entry: where, detail: `row ${at} is missing` })
      continue
    }
    if (actual.digest === expected.digest) continue
    const columns = manifestColumns(manifest, expected.table) ?? []
    const field = (r: ManifestRow, i: number): string => r.fields.slice(i * 8, i * 8 + 8)
    // the row holds what another row held, apart from where it sits: rows were reordered (same entry) or swapped (another entry's)
    const moved = (others.get(expected.table) ?? []).find(
      (other) => other.row !== expected && other.row.digest !== actual.digest && columns.every((column, i) => PLACE_COLUMNS.has(column) || field(other.row, i) === field(actual, i)),
    )
    if (moved !== undefined && moved.entry === entryKey) {
      problems.push({ seq, kind: 'reordered_rows', entry: where, detail: `row ${at} holds what ${expected.table} ${moved.row.key} held: rows were reordered` })
      continue
    }
    if (moved !== undefined) {
      problems.push({ seq, kind: 'swapped_rows', entry: where, detail: `row ${at} holds what ${expected.table} ${moved.row.key} of ${moved.entry} held` })
      continue
    }
    const changed = columns.filter((_, i) => field(actual, i) !== field(expected, i))
    problems.push({ seq, kind: 'edited_field', entry: where, detail: `row ${at}: ${changed.length > 0 ? changed.join(', ') : 'its key'} changed` })
  }
  for (const [id, actual] of now) {
    if (!then.has(id)) problems.push({ seq, kind: 'extra_row', entry: where, detail: `row ${actual.table} ${actual.key} is not in the audit entry (inserted after the fact?)` })
  }
  return problems
}

function short(hash: string): string {
  return hash === '' ? '(none)' : hash.slice(0, 12)
}
