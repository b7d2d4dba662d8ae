/**
 * The ingester seals a run as its final record comes in (workers/ingester-seal.ts, issue 15): on chDB
 * directly — which records it seals, that the links go in before the record carries their head, that
 * sealing again adds nothing, that a seal that fails leaves the record as it came — and end to end on
 * the real stack: `forge run`'s report finds the run sealed (nothing added), the one completed record
 * carries the head, the trail verifies; with FORGE_AUDIT_KEY `forge run` signs the ingester's head.
 * `npm run build` first.
 */
import { createHmac } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { auditEntryOf, extendChain, type AuditEntry } from '../../core/audit.js'
import { RunRecord, type RunRecordInput } from '../../core/contracts/index.js'
import type { Logger } from '../../engine/logger.js'
import { auditChain, insertAuditEntries, sealState } from '../../store/audit.js'
import { directReader, openClickHouse, queryRows, type ClickHouseClient } from '../../store/clickhouse.js'
import { migrate } from '../../store/migrations.js'
import { insertRuns } from '../../store/repositories.js'
import { SEAL_ON_ARRIVAL_MAX_ATTEMPTS, sealFinalRecords } from '../../workers/ingester-seal.js'
import { forge, startTestStack, type TestStack } from '../helpers/stack.js'

const NOW = Date.UTC(2026, 11, 5, 12)

function finalRecord(runId: string, over: Partial<RunRecordInput> = {}): RunRecord {
  return RunRecord.parse({
    run_id: runId,
    suite: 'smoke',
    suite_path: 'suites/smoke',
    adapter: 'mock',
    config_id: 'c1',
    attempts: 1,
    task_count: 3,
    seed: 's',
    status: 'completed',
    started_at: NOW - 5_000,
    finished_at: NOW,
    updated_at: NOW,
    price_table_version: 'p1',
    planned_attempts: 3,
    final_stored: 3,
    ...over,
  })
}

const entriesOf = (runId: string, n: number): AuditEntry[] =>
  Array.from({ length: n }, (_, i) => auditEntryOf(runId, 'attempt', `${runId}/c1/t/${i}`, [{ table: 'attempts', key: `${runId}/c1/t/${i}`, values: { attempt_uid: `${runId}/c1/t/${i}`, output: `out ${i}` } }]))

describe('the ingester seals a final record as it comes in (chDB)', () => {
  let dir: string
  let client: ClickHouseClient
  const warnings: string[] = []
  const logger = { warn: (_fields: unknown, message: string) => void warnings.push(message) } as unknown as Logger

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'forge-seal-'))
    client = await openClickHouse({ kind: 'embedded', path: dir })
    await migrate(client)
  })
  afterAll(async () => {
    await client?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('extends the chain over every stored entry and puts the head on the record; the links are stored before the record goes in', async () => {
    const entries = entriesOf('sealed', 3)
    await insertAuditEntries(client, entries, NOW)
    const [sealed] = await sealFinalRecords(client, [finalRecord('sealed')], NOW, logger)
    const expected = extendChain('sealed', undefined, entries)
    expect(sealed!.audit_head).toBe(expected.head)
    expect(sealed!.audit_signature).toBe('')
    // stored already, before the caller inserts the record
    expect(await auditChain(directReader(client), 'sealed')).toEqual(expected.links)
    await insertRuns(client, [sealed!])
    expect(await sealState(directReader(client), 'sealed')).toEqual({ entries: 3, links: 3, tail: expected.head })
  })

  it('sealing again adds no link and gives the same head; an entry stored since is linked after the chain', async () => {
    const [again] = await sealFinalRecords(client, [finalRecord('sealed')], NOW, logger)
    const first = extendChain('sealed', undefined, entriesOf('sealed', 3))
    expect(again!.audit_head).toBe(first.head)
    expect((await auditChain(directReader(client), 'sealed')).length).toBe(3)
    const later = auditEntryOf('sealed', 'regrade', 'sealed/c1/t/0@v2', [{ table: 'attempt_grades', key: 'sealed/c1/t/0@v2', values: { outcome: 'pass' } }])
    await insertAuditEntries(client, [later], NOW + 1)
    const [extended] = await sealFinalRecords(client, [finalRecord('sealed', { updated_at: NOW + 2 })], NOW + 2, logger)
    const chain = await auditChain(directReader(client), 'sealed')
    expect(chain.map((l) => [l.seq, l.entry_key])).toEqual([...first.links.map((l) => [l.seq, l.entry_key]), [3, 'sealed/c1/t/0@v2']])
    expect(extended!.audit_head).toBe(chain.at(-1)!.link_hash)
  })

  it('leaves alone what is not a checked final record: a running, failed or cancelled run, one sealed already, one of no planned attempts, one too big to hold', async () => {
    await insertAuditEntries(client, entriesOf('other', 2), NOW)
    const records = [
      finalRecord('other', { status: 'running', finished_at: null }),
      finalRecord('other', { status: 'failed' }),
      finalRecord('other', { status: 'cancelled' }),
      finalRecord('other', { audit_head: 'f'.repeat(64), audit_signature: 'sig' }),
      finalRecord('other', { planned_attempts: 0 }),
      finalRecord('other', { planned_attempts: SEAL_ON_ARRIVAL_MAX_ATTEMPTS + 1 }),
    ]
    expect(await sealFinalRecords(client, records, NOW, logger)).toEqual(records)
    expect(await auditChain(directReader(client), 'other')).toEqual([])
    // degraded and incomplete runs were checked too: sealed
    const [degraded, incomplete] = await sealFinalRecords(client, [finalRecord('other', { status: 'degraded' }), finalRecord('other', { status: 'incomplete', missing_count: 1 })], NOW, logger)
    expect([degraded!.audit_head, incomplete!.audit_head]).toEqual([extendChain('other', undefined, entriesOf('other', 2)).head, extendChain('other', undefined, entriesOf('other', 2)).head])
  })

  it('a seal that fails leaves its record as it came and says so; no link is stored', async () => {
    await insertAuditEntries(client, entriesOf('unlucky', 2), NOW)
    await client.command({ query: 'RENAME TABLE audit_chain TO audit_chain_away' })
    try {
      const record = finalRecord('unlucky')
      expect(await sealFinalRecords(client, [record], NOW, logger)).toEqual([record])
      expect(warnings.at(-1)).toMatch(/could not seal the run as its final record came in; its report seals it/)
    } finally {
      await client.command({ query: 'RENAME TABLE audit_chain_away TO audit_chain' })
    }
    const [row] = await queryRows<{ n: string | number }>(client, "SELECT count() AS n FROM audit_chain WHERE run_id = 'unlucky'")
    expect(Number(row!.n)).toBe(0)
  })
})

describe('forge run on the real stack: the run comes back sealed', () => {
  let stack: TestStack
  beforeAll(async () => {
    stack = await startTestStack('seal-on-arrival')
  })
  afterAll(async () => {
    await stack?.down()
  })

  const sql = <T>(query: string): T[] => {
    const r = forge(['sql', query, '--json'], stack.env)
    expect(r.status, r.stderr).toBe(0)
    return JSON.parse(r.stdout) as T[]
  }

  it("the report adds nothing to the ingester's seal; the one completed record carries the head; the trail verifies", () => {
    const r = forge(['run', '--suite', 'smoke', '--adapter', 'mock', '--attempts', '2', '--seed', 'seal', '--run-id', 'sealed-on-arrival', '--json'], stack.env)
    expect(r.status, r.stderr).toBe(0)
    const report = JSON.parse(r.stdout) as { status: string; audit: { head: string; signature: string; links: number; added: number } }
    expect(report.status).toBe('completed')
    expect(report.audit).toMatchObject({ links: 10, added: 0, signature: '' })
    expect(report.audit.head).toMatch(/^[0-9a-f]{64}$/)
    expect(sql<{ status: string; audit_head: string }>("SELECT status, audit_head FROM runs WHERE run_id = 'sealed-on-arrival' ORDER BY updated_at")).toEqual([
      { status: 'running', audit_head: '' },
      { status: 'completed', audit_head: report.audit.head },
    ])
    const verified = forge(['audit', 'verify', '--run-id', 'sealed-on-arrival', '--json'], stack.env)
    expect(verified.status, verified.stderr).toBe(0)
    expect(JSON.parse(verified.stdout)).toMatchObject({ intact: true, head: report.audit.head, links: 10, problems: [] })
  })

  it('with FORGE_AUDIT_KEY forge run signs the head the ingester put on the record, and the signature checks out', () => {
    const key = 'a-key-held-outside-the-store'
    const env = { ...stack.env, FORGE_AUDIT_KEY: key }
    const r = forge(['run', '--suite', 'smoke', '--adapter', 'mock', '--attempts', '2', '--seed', 'signed', '--run-id', 'signed-on-arrival', '--json'], env)
    expect(r.status, r.stderr).toBe(0)
    const { audit } = JSON.parse(r.stdout) as { audit: { head: string; signature: string; links: number; added: number } }
    expect(audit).toMatchObject({ links: 10, added: 0, signature: createHmac('sha256', key).update(`signed-on-arrival\n${audit.head}`, 'utf8').digest('hex') })
    // the ingester's unsigned version, then forge run's signed one
    expect(sql<{ audit_head: string; signed: number }>("SELECT audit_head, audit_signature != '' AS signed FROM runs WHERE run_id = 'signed-on-arrival' AND status = 'completed' ORDER BY updated_at")).toEqual([
      { audit_head: audit.head, signed: 0 },
      { audit_head: audit.head, signed: 1 },
    ])
    const verified = forge(['audit', 'verify', '--run-id', 'signed-on-arrival', '--json'], env)
    expect(verified.status, verified.stderr).toBe(0)
    expect(JSON.parse(verified.stdout)).toMatchObject({ intact: true, signature_valid: true })
  })
})
