import { describe, expect, it } from 'vitest'
import { canonicalJson, diffEnvState, globToRegExp, matchesChange, type EnvState } from '../../core/env-diff.js'

describe('diffEnvState', () => {
  it('is empty for equal states, whatever the key order', () => {
    const a: EnvState = { db: { kind: 'sqlite', tables: { t: { columns: ['id', 'v'], key: ['id'], rows: [{ id: 1, v: 'x' }] } } } }
    const b: EnvState = { db: { kind: 'sqlite', tables: { t: { columns: ['id', 'v'], key: ['id'], rows: [{ v: 'x', id: 1 }] } } } }
    expect(diffEnvState(a, b)).toEqual([])
    expect(canonicalJson({ b: 1, a: [{ d: 1, c: 2 }] })).toBe('{"a":[{"c":2,"d":1}],"b":1}')
  })

  it('reports files added, removed and modified, with their text', () => {
    expect(
      diffEnvState(
        { ws: { kind: 'workspace', files: { 'a.txt': { sha256: '1', size: 1, text: 'a' }, 'b.txt': { sha256: '2', size: 1, text: 'b' } } } },
        { ws: { kind: 'workspace', files: { 'a.txt': { sha256: '3', size: 2, text: 'aa' }, 'c.bin': { sha256: '4', size: 9 } } } },
      ),
    ).toEqual([
      { fixture: 'ws', kind: 'workspace', op: 'modified', target: 'a.txt', before: 'a', after: 'aa' },
      { fixture: 'ws', kind: 'workspace', op: 'removed', target: 'b.txt', before: 'b' },
      { fixture: 'ws', kind: 'workspace', op: 'added', target: 'c.bin', after: { sha256: '4', size: 9 } },
    ])
  })

  it('matches rows by key, names changed fields, and reports tables created and dropped', () => {
    const before: EnvState = {
      db: {
        kind: 'sqlite',
        tables: {
          orders: { columns: ['id', 'status'], key: ['id'], rows: [{ id: 1, status: 'open' }, { id: 2, status: 'open' }] },
          old: { columns: ['x'], key: ['rowid'], rows: [{ rowid: 1, x: 1 }] },
        },
      },
    }
    const after: EnvState = {
      db: {
        kind: 'sqlite',
        tables: {
          orders: { columns: ['id', 'status'], key: ['id'], rows: [{ id: 1, status: 'refunded' }, { id: 3, status: 'open' }] },
          fresh: { columns: ['y'], key: ['rowid'], rows: [] },
        },
      },
    }
    expect(diffEnvState(before, after)).toEqual([
      { fixture: 'db', kind: 'sqlite', op: 'added', target: 'fresh', after: { columns: ['y'], rows: 0 } },
      { fixture: 'db', kind: 'sqlite', op: 'removed', target: 'old', before: { columns: ['x'], rows: 1 } },
      { fixture: 'db', kind: 'sqlite', op: 'modified', target: 'orders', key: { id: 1 }, before: { id: 1, status: 'open' }, after: { id: 1, status: 'refunded' }, fields: ['status'] },
      { fixture: 'db', kind: 'sqlite', op: 'removed', target: 'orders', key: { id: 2 }, before: { id: 2, status: 'open' } },
      { fixture: 'db', kind: 'sqlite', op: 'added', target: 'orders', key: { id: 3 }, after: { id: 3, status: 'open' } },
    ])
  })

  it('pairs duplicate records in order: removing one of two twins is one removal', () => {
    const twin = { id: 'a', v: 1 }
    expect(
      diffEnvState(
        { api: { kind: 'http', collections: { c: [twin, { ...twin }] }, documents: { '/d.md': 'x' } } },
        { api: { kind: 'http', collections: { c: [twin] }, documents: { '/d.md': 'y' } } },
      ),
    ).toEqual([
      { fixture: 'api', kind: 'http', op: 'removed', target: 'c', key: { id: 'a' }, before: twin },
      { fixture: 'api', kind: 'http', op: 'modified', target: '/d.md', before: 'x', after: 'y' },
    ])
  })
})

describe('globToRegExp and matchesChange', () => {
  it('globs stay in a segment with * and ?, cross with **', () => {
    const cases: [string, string, boolean][] = [
      ['*.csv', 'a.csv', true],
      ['*.csv', 'dir/a.csv', false],
      ['**/*.csv', 'dir/sub/a.csv', true],
      ['**/*.csv', 'a.csv', true],
      ['data/**', 'data/x/y.txt', true],
      ['data/**', 'database.txt', false],
      ['a?.txt', 'ab.txt', true],
      ['a.txt', 'aXtxt', false],
    ]
    expect(cases.map(([glob, path]) => globToRegExp(glob).test(path))).toEqual(cases.map(([, , want]) => want))
  })

  it('selects by fixture, op, target kind, key and values; 5 equals "5"', () => {
    const row = { fixture: 'db', kind: 'sqlite' as const, op: 'modified' as const, target: 'orders', key: { id: 5 }, before: { id: 5, qty: 1 }, after: { id: 5, qty: 2 } }
    expect(matchesChange({ table: 'orders', key: { id: '5' }, after: { qty: 2 } }, row)).toBe(true)
    expect(matchesChange({ table: 'orders', before: { qty: 2 } }, row)).toBe(false)
    expect(matchesChange({ path: 'orders' }, row)).toBe(false)
    expect(matchesChange({ collection: 'orders' }, row)).toBe(false)
    expect(matchesChange({ fixture: 'db', op: 'any' }, row)).toBe(true)
    expect(matchesChange({ op: 'removed' }, row)).toBe(false)
    // a whole-table change has no key
    expect(matchesChange({ table: 'orders', key: { id: 5 } }, { fixture: 'db', kind: 'sqlite', op: 'removed', target: 'orders' })).toBe(false)
    expect(matchesChange({ table: 'orders' }, { fixture: 'db', kind: 'sqlite', op: 'removed', target: 'orders' })).toBe(true)
    // `contains` reads a row's JSON as text, and a file's text as it is
    expect(matchesChange({ table: 'orders', contains: '"qty":2' }, row)).toBe(true)
    expect(matchesChange({ contains: 'qty":1' }, row)).toBe(false)
    expect(matchesChange({ path: '*.md', contains: 'hi' }, { fixture: 'ws', kind: 'workspace', op: 'added', target: 'a.md', after: 'oh hi' })).toBe(true)
  })
})
