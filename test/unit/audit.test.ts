/** The audit trail's pure part: content hashes, manifests, the hash chain and verification of each kind of tampering. */
import { describe, expect, it } from 'vitest'
import { createHash } from 'node:crypto'
import { AUDIT_VERSION, auditEntryOf, contentHashOf, entryId, extendChain, genesisHash, manifestOf, sealLinks, signHead, verifyAudit, type AuditEntry, type AuditLink, type AuditRow } from '../../core/audit.js'

const RUN = 'run-a'

function attemptRows(uid: string, output: string, calls: string[]): AuditRow[] {
  return [
    { table: 'attempts', key: uid, values: { attempt_uid: uid, run_id: RUN, output, latency_ms: 12.5, input_tokens: 30, ingested_at: '2026-11-30 00:00:00.000' } },
    ...calls.map((name, i) => ({ table: 'tool_calls', key: `${uid}#${i}`, values: { attempt_uid: uid, run_id: RUN, call_index: i, name, args: `{"q":"${name}"}` } })),
    { table: 'traces', key: uid, values: { attempt_uid: uid, run_id: RUN, stored: `{"trace of":"${uid}","output":"${output}"}`, bytes: 40 } },
  ]
}

interface World {
  entries: AuditEntry[]
  links: AuditLink[]
  head: string
  rows: Map<string, AuditRow[]>
  unclaimed: AuditRow[]
}

function world(): World {
  const stored: Record<string, AuditRow[]> = {
    a1: attemptRows('a1', 'four', ['lookup', 'send']),
    a2: attemptRows('a2', 'five', ['lookup']),
    a3: attemptRows('a3', 'six', []),
  }
  const entries = Object.entries(stored).map(([uid, rows]) => auditEntryOf(RUN, 'attempt', uid, rows))
  const { links, head } = extendChain(RUN, undefined, entries)
  const rows = new Map(Object.entries(stored).map(([uid, r]) => [entryId('attempt', uid), structuredClone(r)]))
  return { entries, links, head, rows, unclaimed: [] }
}

const verify = (w: World, extra: { head?: string; signature?: string; key?: string } = {}) =>
  verifyAudit({ runId: RUN, head: extra.head ?? w.head, signature: extra.signature ?? '', links: w.links, entries: w.entries, rows: w.rows, unclaimed: w.unclaimed, key: extra.key })

const rowOf = (w: World, uid: string, table: string, index = 0): AuditRow => w.rows.get(entryId('attempt', uid))!.filter((r) => r.table === table)[index]!
const first = (w: World, extra: Parameters<typeof verify>[1] = {}) => {
  const report = verify(w, extra)
  return { intact: report.intact, first: report.problems[0] }
}

describe('audit chain: intact', () => {
  it('verifies a freshly sealed run, whatever order its rows come back in and however 64-bit integers are spelled', () => {
    const w = world()
    // ClickHouse may return rows in any order; ingested_at differs from the worker's
    w.rows.set(entryId('attempt', 'a1'), [...w.rows.get(entryId('attempt', 'a1'))!].reverse().map((r) => ({ ...r, values: { ...r.values, ingested_at: '2027-01-01 00:00:00.000' } })))
    expect(verify(w)).toEqual({ run_id: RUN, intact: true, head: w.head, links: 3, signature_valid: null, problems: [] })
  })

  it('is a fixed order: the same entries in any order give the same head', () => {
    const w = world()
    expect(extendChain(RUN, undefined, [...w.entries].reverse()).head).toBe(w.head)
  })

  it('extends without rewriting: a later entry appends a link after the head', () => {
    const w = world()
    const regrade = auditEntryOf(RUN, 'regrade', 'a1@v2', [{ table: 'attempt_grades', key: 'a1@v2', values: { outcome: 'pass' } }])
    const { links, head } = extendChain(RUN, w.links.at(-1), [regrade])
    expect(links.map((l) => [l.seq, l.prev_hash])).toEqual([[3, w.head]])
    const extended = { ...w, entries: [...w.entries, regrade], links: [...w.links, ...links], head, rows: new Map([...w.rows, [entryId('regrade', 'a1@v2'), [{ table: 'attempt_grades', key: 'a1@v2', values: { outcome: 'pass' } }]]]) }
    expect(verify(extended).intact).toBe(true)
  })
})

describe('sealLinks: what sealing adds to a chain', () => {
  it('a new chain links every entry in the fixed order, from the genesis', () => {
    const w = world()
    expect(sealLinks(RUN, [], [...w.entries].reverse())).toEqual({ links: w.links, head: w.head })
    expect(w.links[0]!.prev_hash).toBe(genesisHash(RUN))
  })

  it('links only the entries the chain does not name, after its last link; a chain naming them all adds nothing and keeps its head', () => {
    const w = world()
    expect(sealLinks(RUN, w.links, w.entries)).toEqual({ links: [], head: w.head })
    const regrade = auditEntryOf(RUN, 'regrade', 'a1@v2', [{ table: 'attempt_grades', key: 'a1@v2', values: { outcome: 'pass' } }])
    const { links, head } = sealLinks(RUN, w.links, [...w.entries, regrade])
    expect(links.map((l) => [l.seq, l.entry_key, l.prev_hash])).toEqual([[3, 'a1@v2', w.head]])
    expect(head).toBe(links[0]!.link_hash)
    expect(verify({ ...w, entries: [...w.entries, regrade], links: [...w.links, ...links], head, rows: new Map([...w.rows, [entryId('regrade', 'a1@v2'), [{ table: 'attempt_grades', key: 'a1@v2', values: { outcome: 'pass' } }]]]) }).intact).toBe(true)
  })

  it('a run with no entries is sealed at its genesis', () => {
    expect(sealLinks(RUN, [], [])).toEqual({ links: [], head: genesisHash(RUN) })
  })
})

describe('audit chain: every kind of tampering is found, with the broken link named', () => {
  it('an edited field of an attempt', () => {
    const w = world()
    rowOf(w, 'a2', 'attempts').values['output'] = 'FIVE'
    expect(first(w)).toEqual({ intact: false, first: { seq: 1, kind: 'edited_field', entry: 'attempt a2', detail: 'row attempts a2: output changed' } })
  })

  it('an edited field of a tool call', () => {
    const w = world()
    rowOf(w, 'a1', 'tool_calls', 1).values['args'] = '{"q":"other"}'
    expect(first(w)).toEqual({ intact: false, first: { seq: 0, kind: 'edited_field', entry: 'attempt a1', detail: 'row tool_calls a1#1: args changed' } })
  })

  it('an edited trace', () => {
    const w = world()
    rowOf(w, 'a3', 'traces').values['stored'] = '{"forged":true}'
    expect(first(w)).toEqual({ intact: false, first: { seq: 2, kind: 'edited_field', entry: 'attempt a3', detail: 'row traces a3: stored changed' } })
  })

  it('a deleted row', () => {
    const w = world()
    w.rows.set(entryId('attempt', 'a1'), w.rows.get(entryId('attempt', 'a1'))!.filter((r) => !(r.table === 'tool_calls' && r.key === 'a1#1')))
    expect(first(w)).toEqual({ intact: false, first: { seq: 0, kind: 'missing_row', entry: 'attempt a1', detail: 'row tool_calls a1#1 is missing' } })
  })

  it('a forged row inserted into a result, and a forged result', () => {
    const w = world()
    w.rows.get(entryId('attempt', 'a2'))!.push({ table: 'tool_calls', key: 'a2#1', values: { attempt_uid: 'a2', run_id: RUN, call_index: 1, name: 'forged', args: '{}' } })
    expect(first(w)).toEqual({ intact: false, first: { seq: 1, kind: 'extra_row', entry: 'attempt a2', detail: 'row tool_calls a2#1 is not in the audit entry (inserted after the fact?)' } })
    const forged = world()
    forged.unclaimed.push({ table: 'attempts', key: 'a9', values: { attempt_uid: 'a9', output: 'pass me' } })
    expect(first(forged)).toEqual({ intact: false, first: { seq: null, kind: 'extra_row', entry: 'attempts a9', detail: 'a attempts row of the run that no audit entry covers (inserted after the fact?)' } })
  })

  it('reordered rows: two tool calls swap places', () => {
    const w = world()
    const [c0, c1] = [rowOf(w, 'a1', 'tool_calls', 0), rowOf(w, 'a1', 'tool_calls', 1)]
    ;[c0.values['name'], c1.values['name'], c0.values['args'], c1.values['args']] = [c1.values['name'], c0.values['name'], c1.values['args'], c0.values['args']]
    expect(first(w)).toEqual({ intact: false, first: { seq: 0, kind: 'reordered_rows', entry: 'attempt a1', detail: 'row tool_calls a1#0 holds what tool_calls a1#1 held: rows were reordered' } })
  })

  it('reordered links of the chain', () => {
    const w = world()
    const [l0, l1] = [w.links[0]!, w.links[1]!]
    w.links = [{ ...l1, seq: 0 }, { ...l0, seq: 1 }, w.links[2]!]
    expect(first(w)).toEqual({ intact: false, first: { seq: 0, kind: 'reordered_links', entry: 'attempt a2', detail: 'link 0 follows a link stored elsewhere in the chain: links were reordered' } })
  })

  it("two attempts' traces swapped", () => {
    const w = world()
    const [t1, t2] = [rowOf(w, 'a1', 'traces'), rowOf(w, 'a2', 'traces')]
    ;[t1.values['stored'], t2.values['stored']] = [t2.values['stored'], t1.values['stored']]
    expect(first(w)).toEqual({ intact: false, first: { seq: 0, kind: 'swapped_rows', entry: 'attempt a1', detail: 'row traces a1 holds what traces a2 of a2 held' } })
  })

  it("the run's head replaced", () => {
    const w = world()
    expect(first(w, { head: 'f'.repeat(64) })).toEqual({
      intact: false,
      first: { seq: 2, kind: 'head_replaced', entry: 'run record', detail: `the run's head ffffffffffff is not the chain's last link ${w.head.slice(0, 12)}` },
    })
  })

  it('an edited audit entry or link', () => {
    const w = world()
    w.entries[1]!.manifest.rows[0]!.digest = '0'.repeat(64)
    expect(first(w).first).toMatchObject({ seq: 1, kind: 'edited_entry', entry: 'attempt a2' })
    const l = world()
    l.links[1] = { ...l.links[1]!, content_hash: '0'.repeat(64) }
    expect(first(l).first).toMatchObject({ seq: 1, kind: 'edited_link' })
  })

  it('a chain rewritten whole (results edited, every hash recomputed) passes without a key and fails with FORGE_AUDIT_KEY', () => {
    const w = world()
    const key = 'kept-outside-the-store'
    const signature = signHead(RUN, w.head, key)
    expect(verify(w, { signature, key }).signature_valid).toBe(true)
    // the attacker edits an output and recomputes the entry, every link and the head
    rowOf(w, 'a2', 'attempts').values['output'] = 'FIVE'
    const entries = [...w.rows.entries()].map(([id, rows]) => auditEntryOf(RUN, 'attempt', id.split('\u0000')[1]!, rows))
    const rewritten = { ...w, entries, ...extendChain(RUN, undefined, entries) }
    expect(verify(rewritten).intact).toBe(true)
    expect(first(rewritten, { signature, key })).toEqual({
      intact: false,
      first: { seq: 2, kind: 'bad_signature', entry: 'run record', detail: "the head's signature does not match FORGE_AUDIT_KEY: the head (or the whole chain) was rewritten" },
    })
  })

  it('a run never sealed', () => {
    expect(verifyAudit({ runId: RUN, head: '', signature: '', links: [], entries: [], rows: new Map(), unclaimed: [] }).problems).toEqual([
      { seq: null, kind: 'not_sealed', entry: '', detail: 'run run-a has no audit chain (it was never sealed)' },
    ])
  })
})

describe('audit manifests by version', () => {
  const sha8 = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 8)
  const row: AuditRow = { table: 'attempts', key: 'a1', values: { attempt_uid: 'a1', output: 'four', long: 'x'.repeat(300) } }

  it('version 1 kept a sha-256 prefix per field; version 2 a 32-bit FNV-1a of short fields and the prefix of long ones', () => {
    const parts = ['"a1"', '"' + 'x'.repeat(300) + '"', '"four"'] // columns sorted: attempt_uid, long, output
    expect(manifestOf([row], undefined, 1).rows[0]!.fields).toBe(parts.map(sha8).join(''))
    const v2 = manifestOf([row], undefined, 2).rows[0]!
    // versions 3 and 4 changed which rows a result has (attempt_metrics) and which columns a manifest lists, not how a row is digested
    expect(AUDIT_VERSION).toBe(4)
    expect(manifestOf([row]).rows[0]).toEqual(v2)
    // FNV-1a 32 of '"a1"' and '"four"' (offset basis 0x811c9dc5, prime 0x01000193), recomputed below apart from the implementation
    expect(v2.fields).toBe(`${fnv('"a1"')}${sha8(parts[1]!)}${fnv('"four"')}`)
    expect(v2.fields).toHaveLength(24)
    // the row's digest does not depend on the version
    expect(v2.digest).toBe(manifestOf([row], undefined, 1).rows[0]!.digest)
  })

  it('a run sealed with version-1 manifests still verifies, and an edit in it is named by column', () => {
    const stored = { a1: attemptRows('a1', 'four', ['lookup', 'send']), a2: attemptRows('a2', 'five', ['lookup']) }
    const entries: AuditEntry[] = Object.entries(stored).map(([uid, rows]) => {
      const manifest = manifestOf(rows, undefined, 1)
      return { run_id: RUN, entry_kind: 'attempt', entry_key: uid, content_hash: contentHashOf(manifest), manifest }
    })
    const w: World = { entries, ...extendChain(RUN, undefined, entries), rows: new Map(Object.entries(stored).map(([uid, r]) => [entryId('attempt', uid), structuredClone(r)])), unclaimed: [] }
    expect(verify(w).intact).toBe(true)
    rowOf(w, 'a2', 'tool_calls').values['args'] = '{"q":"other"}'
    expect(first(w)).toEqual({ intact: false, first: { seq: 1, kind: 'edited_field', entry: 'attempt a2', detail: 'row tool_calls a2#0: args changed' } })
  })

  it("a row's digest is the sha-256 of its table, key and each column's canonical text, the same for every row that repeats a value", () => {
    // the canonical form written out apart from the implementation: JSON, booleans as 0/1, object keys sorted, missing as null
    const canonical = (value: unknown): string => {
      if (value === undefined || value === null) return 'null'
      if (typeof value === 'boolean') return value ? '1' : '0'
      if (typeof value !== 'object') return JSON.stringify(value)
      if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
      return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(',')}}`
    }
    const sparse: unknown[] = [1]
    sparse[3] = 'z'
    const nested = { zeta: [true, { b: null, a: [1.5, 'q"uote'] }], alpha: { missing: undefined, n: -0 }, sparse }
    // a flat array (strings, numbers, nulls: a metric row's columns) is written by the native encoder: the same text, edge numbers and lone surrogates included
    const flat = ['a', 1.5, null, -0, Number.NaN, Number.POSITIVE_INFINITY, 1e21, '\ud800x', 'q"uote\n']
    // …but not one holding a boolean (0/1 in the canonical form, true/false in JSON)
    const mixed = ['x', false, 2]
    const rows: AuditRow[] = [0, 1, 2, 3].map((i) => ({ table: 'metrics', key: `m${i}`, values: { attempt_uid: 'a1', passed: i === 1, value: i === 2 ? nested : i === 3 ? { flat, mixed } : 0.25, kind: 'deterministic' } }))
    const manifest = manifestOf(rows)
    expect(manifest.columns['metrics']).toEqual(['attempt_uid', 'kind', 'passed', 'value'])
    manifest.rows.forEach((r, i) => {
      const parts = manifest.columns['metrics']!.map((c) => canonical(rows[i]!.values[c]))
      expect(r.digest).toBe(createHash('sha256').update(`metrics\nm${i}\n${parts.join('\n')}`).digest('hex'))
      expect(r.fields).toBe(parts.map((part) => fnv(part)).join(''))
    })
    expect(canonical(nested)).toBe('{"alpha":{"missing":null,"n":0},"sparse":[1,,,"z"],"zeta":[1,{"a":[1.5,"q\\"uote"],"b":null}]}')
    expect(canonical(mixed)).toBe('["x",0,2]')
    expect(canonical(flat)).toBe('["a",1.5,null,0,null,null,1e+21,"\\ud800x","q\\"uote\\n"]')
  })

  it('names an edited long field in a version-2 manifest too', () => {
    const w = world()
    rowOf(w, 'a1', 'traces').values['stored'] = 'y'.repeat(1_000)
    expect(first(w)).toEqual({ intact: false, first: { seq: 0, kind: 'edited_field', entry: 'attempt a1', detail: 'row traces a1: stored changed' } })
  })
})

/** FNV-1a 32 written out the long way (BigInt arithmetic), apart from the implementation's Math.imul */
function fnv(text: string): string {
  let h = 0x811c9dc5n
  for (let i = 0; i < text.length; i++) h = ((h ^ BigInt(text.charCodeAt(i))) * 0x01000193n) % 2n ** 32n
  return h.toString(16).padStart(8, '0')
}
