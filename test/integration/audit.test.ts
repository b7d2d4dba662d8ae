/**
 * The audit trail end to end on the real embedded stack: `forge run` seals the run (head on the run
 * record, printed at the end); `forge audit verify` finds it intact, and finds each kind of
 * tampering done to the stored rows with the stack down — an edited attempt, tool call or trace, a
 * deleted row, a forged row, reordered tool calls, two attempts' traces swapped, a replaced head —
 * naming the broken link, exit 1. A regrade extends the chain without rewriting it (and is covered). With
 * FORGE_AUDIT_KEY the head is signed, and a chain rewritten whole fails. `npm run build` first.
 */
import { spawnSync } from 'node:child_process'
import { cpSync, rmSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { AuditReport } from '../../core/audit.js'
import { stackDown } from '../../stack/local-stack.js'
import { forge, startTestStack, type TestStack } from '../helpers/stack.js'

let stack: TestStack
let runId: string
let pristine: string

beforeAll(async () => {
  stack = await startTestStack('audit')
  const r = forge(['run', '--suite', 'smoke', '--attempts', '2', '--seed', 'audit', '--run-id', 'audited-run'], stack.env)
  expect(r.status, r.stderr).toBe(0)
  runId = 'audited-run'
  expect(r.stdout).toMatch(/audit head [0-9a-f]{64}: forge audit verify --run-id audited-run checks it/)
  // tampering happens with the stack down, the way the issue did it; each case starts from this copy
  await stackDown(stack.config)
  pristine = `${stack.config.storePath}.pristine`
  cpSync(stack.config.storePath, pristine, { recursive: true })
})
afterAll(async () => {
  await stack?.down()
  if (pristine) rmSync(pristine, { recursive: true, force: true })
})

function restore(): void {
  rmSync(stack.config.storePath, { recursive: true, force: true })
  cpSync(pristine, stack.config.storePath, { recursive: true })
}

/** Runs SQL against the embedded store in a process of its own (chDB binds a directory to one process). */
function tamper(...statements: string[]): void {
  const script = `import { Session } from 'chdb'
const session = new Session(process.env.STORE)
for (const q of JSON.parse(process.env.SQL)) session.query(q)`
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, STORE: stack.config.storePath, SQL: JSON.stringify(statements) }, encoding: 'utf8' })
  expect(r.status, r.stderr).toBe(0)
}

function verify(env: NodeJS.ProcessEnv = stack.env): { status: number; report: AuditReport; text: string } {
  const json = forge(['audit', 'verify', '--run-id', runId, '--json'], env)
  const text = forge(['audit', 'verify', '--run-id', runId], env)
  return { status: json.status, report: JSON.parse(json.stdout) as AuditReport, text: text.stdout }
}

const first = (report: AuditReport) => report.problems[0]

/** Some attempt of the run with at least two tool calls, by uid. */
function attemptWithCalls(): string {
  const r = forge(['sql', `SELECT attempt_uid FROM tool_calls FINAL WHERE run_id = '${runId}' GROUP BY attempt_uid HAVING count() >= 2 ORDER BY attempt_uid LIMIT 1`, '--json'], stack.env)
  return (JSON.parse(r.stdout) as { attempt_uid: string }[])[0]!.attempt_uid
}

describe('forge audit verify', () => {
  it('finds a sealed run intact (exit 0)', () => {
    restore()
    const { status, report, text } = verify()
    expect({ status, intact: report.intact, problems: report.problems, links: report.links }).toEqual({ status: 0, intact: true, problems: [], links: 10 })
    expect(text).toContain(`run ${runId}: audit trail intact — 10 link(s), head ${report.head}`)
  })

  const cases: { name: string; sql: (uid: string) => string[]; kind: string; detail: RegExp }[] = [
    {
      name: 'an edited field of an attempt',
      sql: (uid) => [`ALTER TABLE attempts UPDATE output = 'forged answer', outcome = 'violation' WHERE attempt_uid = '${uid}' SETTINGS mutations_sync = 1`],
      kind: 'edited_field',
      detail: /^row attempts .+: outcome, output changed$/,
    },
    {
      name: 'an edited field of a tool call',
      sql: (uid) => [`ALTER TABLE tool_calls UPDATE args = '{"forged":1}' WHERE attempt_uid = '${uid}' AND call_index = 1 SETTINGS mutations_sync = 1`],
      kind: 'edited_field',
      detail: /^row tool_calls .+#1: args changed$/,
    },
    {
      name: 'an edited trace',
      sql: (uid) => [`ALTER TABLE traces UPDATE stored = replaceOne(stored, '"output"', '"forged_output"') WHERE attempt_uid = '${uid}' SETTINGS mutations_sync = 1`],
      kind: 'edited_field',
      detail: /^row traces .+: stored changed$/,
    },
    {
      name: 'an edited metric (one row of arrays per attempt and kind)',
      sql: (uid) => [`ALTER TABLE attempt_metrics UPDATE passed = arrayMap(p -> if(isNull(p), p, 1 - p), passed) WHERE attempt_uid = '${uid}' AND kind = 'deterministic' SETTINGS mutations_sync = 1`],
      kind: 'edited_field',
      detail: /^row attempt_metrics .+@v1\/deterministic: passed changed$/,
    },
    {
      name: 'a deleted row',
      sql: (uid) => [`ALTER TABLE tool_calls DELETE WHERE attempt_uid = '${uid}' AND call_index = 0 SETTINGS mutations_sync = 1`],
      kind: 'missing_row',
      detail: /^row tool_calls .+#0 is missing$/,
    },
    {
      name: 'a forged row inserted',
      // a whole extra attempt: another attempt number, passed
      sql: (uid) => [
        `INSERT INTO attempts SELECT * REPLACE (concat(run_id, '/', config_id, '/', task_id, '/7') AS attempt_uid, 7 AS attempt, 'pass' AS outcome) FROM (SELECT * FROM attempts FINAL WHERE attempt_uid = '${uid}')`,
      ],
      kind: 'extra_row',
      detail: /that no audit entry covers/,
    },
    {
      name: 'reordered tool calls',
      // call_index is a key column: the reorder is written as newer versions of both rows
      sql: (uid) => [
        `INSERT INTO tool_calls SELECT * REPLACE (1 - call_index AS call_index, ingested_at + 1 AS ingested_at) FROM (SELECT * FROM tool_calls FINAL WHERE attempt_uid = '${uid}' AND call_index IN (0, 1))`,
      ],
      kind: 'reordered_rows',
      detail: /rows were reordered$/,
    },
    {
      name: "two attempts' traces swapped",
      sql: (uid) => {
        const other = `(SELECT min(attempt_uid) FROM traces WHERE run_id = '${runId}' AND attempt_uid != '${uid}')`
        const set = (from: string) =>
          ['stored', 'bytes', 'truncated', 'stored_at'].map((column) => `${column} = (SELECT any(${column}) FROM swap WHERE attempt_uid = ${from})`).join(', ')
        return [
          `CREATE TABLE swap ENGINE = Memory AS SELECT attempt_uid, stored, bytes, truncated, stored_at FROM traces FINAL WHERE run_id = '${runId}'`,
          `ALTER TABLE traces UPDATE ${set(other)} WHERE attempt_uid = '${uid}' SETTINGS mutations_sync = 1, allow_nondeterministic_mutations = 1`,
          `ALTER TABLE traces UPDATE ${set(`'${uid}'`)} WHERE attempt_uid = ${other} SETTINGS mutations_sync = 1, allow_nondeterministic_mutations = 1`,
        ]
      },
      kind: 'swapped_rows',
      detail: /^row traces .+ holds what traces .+ of .+ held$/,
    },
    {
      name: "the run's head replaced",
      sql: () => [`INSERT INTO runs SELECT * REPLACE ('${'f'.repeat(64)}' AS audit_head, updated_at + 1 AS updated_at) FROM runs FINAL WHERE run_id = '${runId}'`],
      kind: 'head_replaced',
      detail: /^the run's head ffffffffffff is not the chain's last link/,
    },
  ]

  for (const c of cases) {
    it(`finds ${c.name}, naming the broken link (exit 1)`, () => {
      restore()
      const uid = attemptWithCalls()
      tamper(...c.sql(uid))
      const { status, report, text } = verify()
      expect({ status, intact: report.intact, kind: first(report)?.kind }).toEqual({ status: 1, intact: false, kind: c.kind })
      expect(first(report)?.detail).toMatch(c.detail)
      // the first broken link: the tampered attempt (of two swapped, the one first in the chain)
      if (['edited_field', 'missing_row', 'reordered_rows'].includes(c.kind)) expect(first(report)?.entry).toBe(`attempt ${uid}`)
      if (c.kind === 'swapped_rows') expect(report.problems.filter((p) => p.kind === 'swapped_rows').map((p) => p.entry)).toContain(`attempt ${uid}`)
      expect(text).toContain(`run ${runId}: audit trail BROKEN`)
      expect(text).toContain(`first broken link: `)
    })
  }

  it('a regrade extends the chain without rewriting a link; the extended chain verifies, and tampering with a regrade is found', () => {
    restore()
    const before = verify().report
    const regrade = forge(['regrade', '--run-id', runId, '--json'], stack.env)
    expect(regrade.status, regrade.stderr).toBe(0)
    const after = verify()
    expect({ status: after.status, intact: after.report.intact, links: after.report.links }).toEqual({ status: 0, intact: true, links: 20 })
    expect(after.report.head).not.toBe(before.head)
    // the first ten links are the ones sealed by forge run, unchanged
    const links = JSON.parse(forge(['sql', `SELECT seq, link_hash FROM audit_chain FINAL WHERE run_id = '${runId}' ORDER BY seq`, '--json'], stack.env).stdout) as { seq: number; link_hash: string }[]
    expect(links.at(9)?.link_hash).toBe(before.head)
    tamper(`ALTER TABLE attempt_grades UPDATE outcome = 'violation' WHERE run_id = '${runId}' AND attempt = 1 SETTINGS mutations_sync = 1`)
    const caught = verify().report
    expect(first(caught)).toMatchObject({ kind: 'edited_field', detail: expect.stringMatching(/^row attempt_grades .+@v2: outcome changed$/) })
    expect(first(caught)?.seq).toBeGreaterThanOrEqual(10)
  })

  it('signs the head with FORGE_AUDIT_KEY; a chain rewritten whole then fails the signature check', () => {
    restore()
    const key = 'held-outside-the-store'
    const env = { ...stack.env, FORGE_AUDIT_KEY: key }
    // a run sealed without a key has no signature to check
    expect(verify(env).report.problems.map((p) => p.kind)).toEqual(['bad_signature'])
    // sealed with the key: intact, signature valid (the chain is as it was, only the head's record is new)
    tamper(`ALTER TABLE runs UPDATE audit_head = '' WHERE run_id = '${runId}' SETTINGS mutations_sync = 1`)
    const seal = forge(['audit', 'seal', '--run-id', runId, '--json'], env)
    expect(seal.status, seal.stderr).toBe(0)
    const sealed = JSON.parse(seal.stdout) as { head: string; added: number; signature: string }
    const signed = verify(env)
    expect({ status: signed.status, intact: signed.report.intact, signature: signed.report.signature_valid, head: signed.report.head, added: sealed.added }).toEqual({
      status: 0,
      intact: true,
      signature: true,
      head: sealed.head,
      added: 0,
    })
    // someone who can write the store rewrites the chain whole: without the key they cannot sign the new head
    tamper(`ALTER TABLE audit_chain DELETE WHERE run_id = '${runId}' SETTINGS mutations_sync = 1`, `ALTER TABLE runs UPDATE audit_head = '', audit_signature = '' WHERE run_id = '${runId}' SETTINGS mutations_sync = 1`)
    expect(forge(['audit', 'seal', '--run-id', runId], { ...stack.env, FORGE_AUDIT_KEY: 'the-attackers-own-key' }).status).toBe(0)
    expect(verify(stack.env).report.intact).toBe(true)
    const caught = verify(env)
    expect({ status: caught.status, kind: first(caught.report)?.kind, signature: caught.report.signature_valid }).toEqual({ status: 1, kind: 'bad_signature', signature: false })
  })
})
