/**
 * Audit manifests of version 4 leave a table's standard columns out (core/audit.ts STANDARD_COLUMNS):
 * the list is held here to the rows Forge really stores — a worker's attempt messages, regrades,
 * judge outcomes and review resolutions — and the content hash and verification are held to be the
 * same whether a table's columns are listed or left out.
 */
import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { JetStreamClient } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import { afterAll, describe, expect, it } from 'vitest'
import { planRun } from '../../app/plan-run.js'
import { resolveConfig } from '../../config/index.js'
import { AUDIT_VERSION, auditEntryOf, contentHashOf, entryId, extendChain, manifestOf, STANDARD_COLUMNS, verifyAudit, type AuditEntry, type AuditManifest, type AuditRow } from '../../core/audit.js'
import type { AttemptRegrade, AttemptResult, JudgeOutcome, ReviewResolution, StoredTrace } from '../../core/contracts/index.js'
import { attemptKeyOf } from '../../core/identity.js'
import { createLogger } from '../../engine/logger.js'
import { attemptAuditRows, judgeAuditRows, regradeAuditRows, resolutionAuditRows } from '../../store/audit.js'
import { createActivities } from '../../workers/activities.js'
import { attemptInputOf } from '../../workflows/tally.js'

const home = mkdtempSync(join(tmpdir(), 'forge-audit-columns-'))
afterAll(() => rmSync(home, { recursive: true, force: true }))

/** Attempt messages as a worker publishes them: smoke attempts run by the worker's own activity, published into a sink. */
async function workerMessages(): Promise<(AttemptResult & { stored_trace: StoredTrace; audit: AuditEntry })[]> {
  const config = resolveConfig({ FORGE_HOME: home })
  const { plan } = await planRun(config, { suite: 'smoke', adapter: 'mock', attempts: 2, workers: 1, concurrency: 4, seed: 'columns', max_in_flight: 4 })
  const bodies: string[] = []
  const js = {
    publish: (_subject: string, body?: Uint8Array | string) => {
      bodies.push(typeof body === 'string' ? body : Buffer.from(body ?? new Uint8Array()).toString('utf8'))
      return Promise.resolve({ stream: 'FORGE_RESULTS', seq: bodies.length, duplicate: false, domain: '' })
    },
  }
  const nc = { info: { max_payload: 8 * 1024 * 1024 }, publish: () => undefined }
  const activities = createActivities({ nc: nc as unknown as NatsConnection, js: js as unknown as JetStreamClient, workerId: 'audit-columns', logger: createLogger('audit-columns', 'silent') })
  for (const task of plan.task_ids) for (let i = 0; i < plan.attempts; i++) await activities.runAttempt(attemptInputOf(plan, task, i))
  return bodies.map((body) => JSON.parse(body) as AttemptResult & { stored_trace: StoredTrace; audit: AuditEntry })
}

/** The hashed columns of each table of `rows`, as a version-3 manifest (which lists them all) has them. */
const columnsOfRows = (rows: AuditRow[]): Record<string, string[]> => manifestOf(rows, undefined, 3).columns

describe('standard columns (audit version 4)', () => {
  const published = workerMessages()

  it('are the columns of the rows a worker hashes for an attempt: its manifests list no table', async () => {
    const messages = await published
    expect(messages).toHaveLength(10)
    const tables = new Set<string>()
    for (const message of messages) {
      expect(message.audit.manifest.version).toBe(AUDIT_VERSION)
      expect(message.audit.manifest.columns).toEqual({})
      const rows = attemptAuditRows(message, message.stored_trace, true)
      for (const [table, columns] of Object.entries(columnsOfRows(rows))) {
        expect(columns, table).toEqual(STANDARD_COLUMNS[table])
        tables.add(table)
      }
      // what the worker sent is what its rows give (the content hash over the columns put back)
      expect(auditEntryOf(message.run_id, 'attempt', message.attempt_uid, rows).content_hash).toBe(message.audit.content_hash)
    }
    expect([...tables].sort()).toEqual(['attempt_metrics', 'attempts', 'judgements', 'tool_calls', 'traces'])
  })

  it('are the columns of a regrade, a judge outcome and a review resolution', async () => {
    // made of a real attempt's grading
    const attempt = (await published).find((m) => m.judgement !== undefined && (m.metrics ?? []).length > 0)!
    const key = attemptKeyOf(attempt)
    const judgement = { ...attempt.judgement!, grading_version: 2, revision: 2 }
    const regrade: AttemptRegrade = { ...key, grading_version: 2, outcome: attempt.outcome, validity: attempt.validity, failure_bucket: attempt.failure_bucket, grades: attempt.grades, invariants: attempt.invariants, error: '', regraded_at: 1, metrics: attempt.metrics!, judgement }
    const outcome: JudgeOutcome = { ...key, grading_version: 2, metrics: attempt.metrics!, judgement } as JudgeOutcome
    const resolution: ReviewResolution = { resolution_id: 'res-1', attempt_uid: key.attempt_uid, run_id: key.run_id, task_id: key.task_id, grading_version: 2, verdict: 'pass', failure_bucket: null, note: '', reviewer: 'me', resolved_at: 1 }
    const all = { ...columnsOfRows(regradeAuditRows(regrade)), ...columnsOfRows(judgeAuditRows(outcome)), ...columnsOfRows(resolutionAuditRows(resolution)) }
    expect(Object.keys(all).sort()).toEqual(['attempt_grades', 'attempt_metrics', 'judgements', 'review_resolutions'])
    for (const [table, columns] of Object.entries(all)) expect(columns, table).toEqual(STANDARD_COLUMNS[table])
    for (const rows of [regradeAuditRows(regrade), judgeAuditRows(outcome), resolutionAuditRows(resolution)]) expect(manifestOf(rows).columns).toEqual({})
  })
})

describe('a version-4 manifest', () => {
  const standardRow = (uid: string): AuditRow => ({ table: 'traces', key: uid, values: Object.fromEntries(STANDARD_COLUMNS['traces']!.map((c) => [c, c === 'attempt_uid' ? uid : `${c} of ${uid}`])) })
  const otherRow = (uid: string): AuditRow => ({ table: 'notes', key: uid, values: { attempt_uid: uid, text: 'hello' } })

  it('lists only the tables whose columns are not standard, and hashes as if every table were listed', () => {
    const rows = [standardRow('a1'), otherRow('a1')]
    const manifest = manifestOf(rows)
    expect(manifest.columns).toEqual({ notes: ['attempt_uid', 'text'] })
    // the content hash written out apart from the implementation: canonical JSON of version, every table's columns, row digests
    const listed: AuditManifest = { ...manifest, columns: { notes: ['attempt_uid', 'text'], traces: [...STANDARD_COLUMNS['traces']!] } }
    const canonical = JSON.stringify({ columns: listed.columns, rows: manifest.rows.map((r) => [r.table, r.key, r.digest]), version: 4 })
    expect(contentHashOf(manifest)).toBe(createHash('sha256').update(canonical).digest('hex'))
    expect(contentHashOf(listed)).toBe(contentHashOf(manifest))
    // a row with a standard table's name but other columns is listed
    const odd: AuditRow = { table: 'traces', key: 'a2', values: { attempt_uid: 'a2', stored: '{}' } }
    expect(manifestOf([odd]).columns).toEqual({ traces: ['attempt_uid', 'stored'] })
  })

  it('keeps the hash of a version-3 manifest, which lists every table', () => {
    const manifest = manifestOf([standardRow('a1')], undefined, 3)
    expect(Object.keys(manifest.columns)).toEqual(['traces'])
    const canonical = JSON.stringify({ columns: manifest.columns, rows: manifest.rows.map((r) => [r.table, r.key, r.digest]), version: 3 })
    expect(contentHashOf(manifest)).toBe(createHash('sha256').update(canonical).digest('hex'))
  })

  it('verifies, and names an edited field by the standard columns it left out', () => {
    const stored = { a1: [standardRow('a1'), otherRow('a1')], a2: [standardRow('a2')] }
    const entries = Object.entries(stored).map(([uid, rows]) => auditEntryOf('r1', 'attempt', uid, rows))
    const { links, head } = extendChain('r1', undefined, entries)
    const rows = new Map(Object.entries(stored).map(([uid, r]) => [entryId('attempt', uid), structuredClone(r)]))
    const verify = () => verifyAudit({ runId: 'r1', head, signature: '', links, entries, rows, unclaimed: [] })
    expect(verify().intact).toBe(true)
    rows.get(entryId('attempt', 'a2'))![0]!.values['stored'] = 'forged'
    expect(verify().problems[0]).toEqual({ seq: 1, kind: 'edited_field', entry: 'attempt a2', detail: 'row traces a2: stored changed' })
  })

  it('is caught when its columns are edited: listing other columns for a standard table changes its content hash', () => {
    const entry = auditEntryOf('r1', 'attempt', 'a1', [standardRow('a1')])
    const { links, head } = extendChain('r1', undefined, [entry])
    const forged: AuditEntry = { ...entry, manifest: { ...entry.manifest, columns: { traces: ['attempt_uid'] } } }
    const report = verifyAudit({ runId: 'r1', head, signature: '', links, entries: [forged], rows: new Map([[entryId('attempt', 'a1'), [standardRow('a1')]]]), unclaimed: [] })
    expect(report.problems[0]).toMatchObject({ seq: 0, kind: 'edited_entry' })
  })
})
