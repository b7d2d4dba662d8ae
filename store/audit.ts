/**
 * The audit trail in the store: the rows each stored result consists of (built with the same
 * converters the ingester inserts with, so a worker can hash them before publishing), the
 * `audit_entries` and `audit_chain` tables, and reading a run's rows back for `forge audit verify`.
 */
import type { ClickHouseClient } from '@clickhouse/client'
import { entryId, METRICS_AS_ARRAYS, type AuditEntry, type AuditEntryHead, type AuditEntryKind, type AuditLink, type AuditManifest, type AuditRow } from '../core/audit.js'
import type { AttemptRegrade, AttemptResult, AuditRecord, JudgeOutcome, ReviewResolution, StoredTrace } from '../core/contracts/index.js'
import type { StoreReader } from './clickhouse.js'
import { attemptToRow, toChDateTime, toolCallsToRows } from './converters.js'
import { judgementToRow, metricRowsOf, metricsToRows, regradeToRow, resolutionToRow, storedTraceToRow } from './grading-converters.js'

const row = (table: string, key: string, values: object): AuditRow => ({ table, key, values: values as Record<string, unknown> })

/**
 * The rows an attempt's result becomes: its attempts row, tool calls, stored trace, `attempt_metrics`
 * rows (one per kind, keyed `<uid>@v1/<kind>`) and — when no judge worker will replace it — its judgement.
 */
export function attemptAuditRows(result: AttemptResult, trace: StoredTrace, withJudgement: boolean): AuditRow[] {
  const uid = result.attempt_uid
  return [
    row('attempts', uid, attemptToRow(result, 0)),
    ...toolCallsToRows(result, 0).map((r) => row('tool_calls', `${uid}#${r.call_index}`, r)),
    row('traces', uid, storedTraceToRow(trace, 0)),
    ...metricsToRows(result, 1, result.metrics ?? [], 0).map((r) => row('attempt_metrics', `${uid}@v1/${r.kind}`, r)),
    ...(withJudgement && result.judgement !== undefined ? [row('judgements', `${uid}@v1`, judgementToRow(result.judgement, 0))] : []),
  ]
}

/** The rows a regrade becomes: its attempt_grades row, attempt_metrics rows and judgement, at its grading version. */
export function regradeAuditRows(regrade: AttemptRegrade): AuditRow[] {
  const key = regradeKey(regrade)
  return [
    row('attempt_grades', key, regradeToRow(regrade, 0)),
    ...metricsToRows(regrade, regrade.grading_version, regrade.metrics, 0).map((r) => row('attempt_metrics', `${key}/${r.kind}`, r)),
    ...(regrade.judgement !== null ? [row('judgements', key, judgementToRow(regrade.judgement, 0))] : []),
  ]
}

/** The rows of a judge worker's outcome: its attempt_metrics row (kind judge) and revision-2 judgement, which replace the attempt worker's. */
export function judgeAuditRows(outcome: JudgeOutcome): AuditRow[] {
  const key = judgementKey(outcome)
  return [
    ...metricsToRows(outcome, outcome.grading_version, outcome.metrics, 0).map((r) => row('attempt_metrics', `${key}/${r.kind}`, r)),
    ...(outcome.judgement !== null ? [row('judgements', key, judgementToRow(outcome.judgement, 0))] : []),
  ]
}

export const judgementKey = (o: Pick<JudgeOutcome, 'attempt_uid' | 'grading_version'>): string => `${o.attempt_uid}@v${o.grading_version}`

export const regradeKey = (r: Pick<AttemptRegrade, 'attempt_uid' | 'grading_version'>): string => `${r.attempt_uid}@v${r.grading_version}`

export function resolutionAuditRows(resolution: ReviewResolution): AuditRow[] {
  return [row('review_resolutions', resolution.resolution_id, resolutionToRow(resolution))]
}

// ---------------------------------------------------------------------------------------------
// the audit tables

export async function insertAuditEntries(client: ClickHouseClient, entries: readonly AuditEntry[], createdAt: number): Promise<void> {
  if (entries.length === 0) return
  await client.insert({
    table: 'audit_entries',
    values: entries.map((e) => ({ run_id: e.run_id, entry_kind: e.entry_kind, entry_key: e.entry_key, content_hash: e.content_hash, manifest: JSON.stringify(e.manifest), created_at: toChDateTime(createdAt) })),
    format: 'JSONEachRow',
  })
}

export async function insertAuditLinks(client: ClickHouseClient, links: readonly AuditLink[], sealedAt: number): Promise<void> {
  if (links.length === 0) return
  await client.insert({ table: 'audit_chain', values: links.map((l) => ({ ...l, sealed_at: toChDateTime(sealedAt) })), format: 'JSONEachRow' })
}

export async function insertAuditRecords(client: ClickHouseClient, records: readonly AuditRecord[], at: number): Promise<void> {
  await insertAuditEntries(client, records.flatMap((r) => r.entries as AuditEntry[]), at)
  await insertAuditLinks(client, records.flatMap((r) => r.links), at)
}

/** The run's chain, in seq order. */
export async function auditChain(reader: StoreReader, runId: string): Promise<AuditLink[]> {
  const rows = await reader.query<AuditLink & { seq: number | string }>(
    'SELECT run_id, seq, entry_kind, entry_key, content_hash, prev_hash, link_hash FROM audit_chain FINAL WHERE run_id = {run:String} ORDER BY seq',
    { run: runId },
  )
  return rows.map((r) => ({ ...r, seq: Number(r.seq) }))
}

export async function auditEntries(reader: StoreReader, runId: string): Promise<AuditEntry[]> {
  const rows = await reader.query<Omit<AuditEntry, 'manifest'> & { manifest: string }>(
    'SELECT run_id, entry_kind, entry_key, content_hash, manifest FROM audit_entries FINAL WHERE run_id = {run:String} ORDER BY entry_kind, entry_key',
    { run: runId },
  )
  return rows.map((r) => ({ ...r, manifest: JSON.parse(r.manifest) as AuditManifest }))
}

/** The run's entries without their manifests: what sealing links. */
export async function auditEntryHeads(reader: StoreReader, runId: string): Promise<AuditEntryHead[]> {
  return reader.query<AuditEntryHead>('SELECT entry_kind, entry_key, content_hash FROM audit_entries FINAL WHERE run_id = {run:String} ORDER BY entry_kind, entry_key', { run: runId })
}

export async function countAuditEntries(reader: StoreReader, runId: string, kind: AuditEntryKind): Promise<number> {
  const rows = await reader.query<{ n: string | number }>('SELECT count() AS n FROM audit_entries FINAL WHERE run_id = {run:String} AND entry_kind = {kind:String}', { run: runId, kind })
  return Number(rows[0]?.n ?? 0)
}

/**
 * What a seal left in the store, in one read: the audit head on the run's newest record ('' when it
 * has none or the run is not stored) and how many links its chain has.
 */
export async function sealStored(reader: StoreReader, runId: string): Promise<{ head: string; links: number }> {
  const rows = await reader.query<{ head: string | null; links: string | number }>(
    `SELECT (SELECT any(audit_head) FROM runs FINAL WHERE run_id = {run:String}) AS head,
       (SELECT count() FROM audit_chain FINAL WHERE run_id = {run:String}) AS links`,
    { run: runId },
  )
  return { head: rows[0]?.head ?? '', links: Number(rows[0]?.links ?? 0) }
}

/**
 * A run's chain and entries, counted in one read (~7 ms where reading a 1,000-attempt run's entries
 * is ~8 and its chain ~4): how many entries and links it has, and the last link's hash ('' without
 * links). Sealed, when the run record's head is that hash and there are as many links as entries.
 */
export async function sealState(reader: StoreReader, runId: string): Promise<{ entries: number; links: number; tail: string }> {
  const rows = await reader.query<{ entries: string | number; chain: [string | number, string] | null }>(
    `SELECT (SELECT count() FROM audit_entries FINAL WHERE run_id = {run:String}) AS entries,
       (SELECT tuple(count(), argMax(link_hash, seq)) FROM audit_chain FINAL WHERE run_id = {run:String}) AS chain`,
    { run: runId },
  )
  const row = rows[0]
  const links = Number(row?.chain?.[0] ?? 0)
  return { entries: Number(row?.entries ?? 0), links, tail: links === 0 ? '' : (row?.chain?.[1] ?? '') }
}

// 64-bit integers as JSON numbers: how the worker-side rows hold them
const NUMBERS = 'SETTINGS output_format_json_quote_64bit_integers = 0'

/**
 * Every stored row of a run, assigned to the audit entry that covers it (by `entryId`), and the rows
 * no entry covers. Rows a result legitimately gains later (a judge worker's metrics and revision-2
 * judgement) are left out unless the entry's manifest lists them. An entry of manifest version ≤ 2
 * (written before `attempt_metrics`) gets its metrics as the `metrics` view's rows, one per metric,
 * as it hashed them.
 */
export async function auditRowsOfRun(reader: StoreReader, runId: string, entries: readonly AuditEntry[]): Promise<{ rows: Map<string, AuditRow[]>; unclaimed: AuditRow[] }> {
  const q = (sql: string) => reader.query<Record<string, unknown>>(`${sql} ${NUMBERS}`, { run: runId })
  const [attempts, toolCalls, traces, metrics, judgements, grades, resolutions] = await Promise.all([
    q('SELECT * FROM attempts FINAL WHERE run_id = {run:String}'),
    q('SELECT * FROM tool_calls FINAL WHERE run_id = {run:String}'),
    q('SELECT * FROM traces FINAL WHERE run_id = {run:String}'),
    q('SELECT * FROM attempt_metrics FINAL WHERE run_id = {run:String}'),
    q('SELECT * FROM judgements FINAL WHERE run_id = {run:String}'),
    q('SELECT * FROM attempt_grades FINAL WHERE run_id = {run:String}'),
    q('SELECT * FROM review_resolutions FINAL WHERE run_id = {run:String}'),
  ])
  const attemptEntries = new Set(entries.filter((e) => e.entry_kind === 'attempt').map((e) => e.entry_key))
  const judgementEntries = new Set(entries.filter((e) => e.entry_kind === 'judgement').map((e) => e.entry_key))
  const attemptRows = new Set(entries.filter((e) => e.entry_kind === 'attempt').flatMap((e) => e.manifest.rows.map((r) => `${r.table}\u0000${r.key}`)))
  const attemptListed = (table: string, key: string): boolean => attemptRows.has(`${table}\u0000${key}`)
  const perMetric = new Set(entries.filter((e) => e.manifest.version < METRICS_AS_ARRAYS).map((e) => entryId(e.entry_kind, e.entry_key)))
  const rows = new Map<string, AuditRow[]>()
  const unclaimed: AuditRow[] = []
  const claim = (kind: AuditEntryKind, key: string, r: AuditRow): void => {
    const id = entryId(kind, key)
    rows.set(id, [...(rows.get(id) ?? []), r])
  }
  const str = (r: Record<string, unknown>, column: string): string => String(r[column])
  const version = (r: Record<string, unknown>): number => Number(r['grading_version'] ?? 1)

  for (const r of attempts) {
    const uid = str(r, 'attempt_uid')
    const audited = row('attempts', uid, r)
    if (attemptEntries.has(uid)) claim('attempt', uid, audited)
    else unclaimed.push(audited)
  }
  const byAttempt = (table: string, key: (r: Record<string, unknown>) => string, source: Record<string, unknown>[]) => {
    for (const r of source) {
      const uid = str(r, 'attempt_uid')
      const audited = row(table, key(r), r)
      if (attemptEntries.has(uid)) claim('attempt', uid, audited)
      else unclaimed.push(audited)
    }
  }
  byAttempt('tool_calls', (r) => `${str(r, 'attempt_uid')}#${Number(r['call_index'])}`, toolCalls)
  byAttempt('traces', (r) => str(r, 'attempt_uid'), traces)
  // an attempt_metrics row as the entry claiming it hashed it: itself, or (manifest ≤ 2) one metrics row per metric
  const asHashed = (kind: AuditEntryKind, key: string, r: AuditRow): AuditRow[] =>
    r.table === 'attempt_metrics' && perMetric.has(entryId(kind, key))
      ? metricRowsOf(r.values).map((m) => row('metrics', `${r.key.slice(0, r.key.lastIndexOf('/'))}/${str(m, 'metric')}`, m))
      : [r]
  const listed = (r: AuditRow): boolean => asHashed('attempt', str(r.values, 'attempt_uid'), r).some((m) => attemptListed(m.table, m.key))
  for (const [table, source, keyOf] of [
    ['attempt_metrics', metrics, (r: Record<string, unknown>) => `${str(r, 'attempt_uid')}@v${version(r)}/${str(r, 'kind')}`],
    ['judgements', judgements, (r: Record<string, unknown>) => `${str(r, 'attempt_uid')}@v${version(r)}`],
  ] as const) {
    for (const r of source) {
      const uid = str(r, 'attempt_uid')
      const v = version(r)
      const audited = row(table, keyOf(r), r)
      const claimAs = (kind: AuditEntryKind, key: string): void => {
        for (const hashed of asHashed(kind, key, audited)) claim(kind, key, hashed)
      }
      if (v > 1) claimAs('regrade', `${uid}@v${v}`)
      else if (listed(audited)) claimAs('attempt', uid)
      else if (table === 'judgements' || r['kind'] === 'judge') {
        // left to the judge worker by the attempt's entry: the judge's own entry covers it (none: its outcome predates the audit trail)
        if (judgementEntries.has(`${uid}@v1`)) claimAs('judgement', `${uid}@v1`)
      } else if (attemptEntries.has(uid)) claimAs('attempt', uid)
      else unclaimed.push(audited)
    }
  }
  const regradeEntries = new Set(entries.filter((e) => e.entry_kind === 'regrade').map((e) => e.entry_key))
  for (const r of grades) {
    const key = `${str(r, 'attempt_uid')}@v${version(r)}`
    const audited = row('attempt_grades', key, r)
    if (regradeEntries.has(key)) claim('regrade', key, audited)
    else unclaimed.push(audited)
  }
  const resolutionEntries = new Set(entries.filter((e) => e.entry_kind === 'resolution').map((e) => e.entry_key))
  for (const r of resolutions) {
    const key = str(r, 'resolution_id')
    const audited = row('review_resolutions', key, r)
    if (resolutionEntries.has(key)) claim('resolution', key, audited)
    else unclaimed.push(audited)
  }
  // metric and judgement rows of a regrade nobody recorded: unclaimed, like its attempt_grades row
  for (const [id, claimed] of rows) {
    const [kind, key] = id.split('\u0000') as [AuditEntryKind, string]
    if (kind === 'regrade' && !regradeEntries.has(key)) {
      rows.delete(id)
      unclaimed.push(...claimed)
    }
  }
  return { rows, unclaimed }
}
