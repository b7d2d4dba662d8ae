import { describe, expect, it } from 'vitest'
import { AgentTrace, Task, type GraderSpec } from '../../core/contracts/index.js'
import { diffEnvState, envQueryKey, type EnvState, type EnvironmentView } from '../../core/env-diff.js'
import { GraderConfigError, envQueriesOf, fixtureRefsOf, gradeAll, validateGraderSpec } from '../../core/graders/index.js'
import { decideVerdict } from '../../core/verdict.js'

const trace = AgentTrace.parse({ output: 'done', duration_ms: 1 })
const task = Task.parse({ id: 't', instruction: 'go', graders: [{ type: 'exact', expected: 'x' }] })

const start: EnvState = {
  workspace: {
    kind: 'workspace',
    files: {
      'report.txt': { sha256: 'a', size: 6, text: 'draft\n' },
      'data/a.csv': { sha256: 'b', size: 4, text: 'x,y\n' },
      'logo.png': { sha256: 'c', size: 400_000 },
    },
  },
  db: {
    kind: 'sqlite',
    tables: {
      orders: {
        columns: ['id', 'status', 'total'],
        key: ['id'],
        rows: [
          { id: 1, status: 'open', total: 10 },
          { id: 2, status: 'open', total: 25.5 },
        ],
      },
    },
  },
}
const end: EnvState = {
  workspace: {
    kind: 'workspace',
    files: {
      'report.txt': { sha256: 'd', size: 31, text: '{"total": 35.5, "orders": [1, 2]}' },
      'data/a.csv': { sha256: 'b', size: 4, text: 'x,y\n' },
      'logo.png': { sha256: 'c', size: 400_000 },
      'notes.md': { sha256: 'e', size: 5, text: 'hello' },
    },
  },
  db: {
    kind: 'sqlite',
    tables: {
      orders: {
        columns: ['id', 'status', 'total'],
        key: ['id'],
        rows: [
          { id: 1, status: 'shipped', total: 10 },
          { id: 2, status: 'open', total: 25.5 },
        ],
      },
    },
  },
}

function view(queries: EnvironmentView['queries'] = {}): EnvironmentView {
  return { start, end, diff: diffEnvState(start, end), queries }
}

/** Grades one spec against `env` (default: the view above; null: no environment at all). */
function grade(spec: GraderSpec, env: EnvironmentView | null = view()) {
  expect(validateGraderSpec(spec)).toEqual({ ok: true })
  const [result] = gradeAll([spec], trace, env === null ? { task, fixtures: {} } : { task, fixtures: {}, env })
  if (result === undefined) throw new Error('no grade')
  const { grader: _name, ...rest } = result
  return rest
}

function problems(spec: GraderSpec): string[] {
  const result = validateGraderSpec(spec)
  return result.ok ? [] : result.problems.map((p) => `${p.path.join('.')}: ${p.message}`)
}

describe('the file grader', () => {
  it('passes on equals, contains, regex, json (exact and partial) and exists', () => {
    expect(grade({ type: 'file', path: 'notes.md', equals: ' hello ' })).toEqual({ passed: true, score: 1, detail: 'workspace:notes.md equals "hello"' })
    expect(grade({ type: 'file', path: 'report.txt', contains: ['35.5', 'orders'] }).passed).toBe(true)
    expect(grade({ type: 'file', path: 'report.txt', regex: '"TOTAL": 35\\.5', flags: 'i' }).passed).toBe(true)
    expect(grade({ type: 'file', path: 'report.txt', json: { orders: [1, 2], total: 35.5 } }).passed).toBe(true)
    expect(grade({ type: 'file', path: 'report.txt', json: { total: '35.5' }, partial: true }).passed).toBe(true)
    expect(grade({ type: 'file', path: 'missing.txt', exists: false })).toEqual({ passed: true, score: 1, detail: 'workspace:missing.txt does not exist' })
  })

  it('fails with a detail that shows what it found', () => {
    expect(grade({ type: 'file', path: 'notes.md', equals: 'bye' })).toEqual({ passed: false, score: 0, detail: 'workspace:notes.md is "hello", expected "bye"' })
    expect(grade({ type: 'file', path: 'report.txt', contains: ['35.5', 'refund'] })).toEqual({
      passed: false,
      score: 0.5,
      detail: 'workspace:report.txt lacks "refund": "{\\"total\\": 35.5, \\"orders\\": [1, 2]}"',
    })
    expect(grade({ type: 'file', path: 'report.txt', json: { total: 35.5 } }).passed).toBe(false)
    expect(grade({ type: 'file', path: 'absent.txt', contains: 'x' })).toEqual({ passed: false, score: 0, detail: 'workspace:absent.txt does not exist' })
    expect(grade({ type: 'file', path: 'notes.md', exists: false }).passed).toBe(false)
    expect(grade({ type: 'file', path: 'logo.png', contains: 'x' })).toEqual({ passed: false, score: 0, detail: 'workspace:logo.png is binary or too large to read (400000 bytes)' })
    expect(grade({ type: 'file', fixture: 'other', path: 'notes.md', exists: true })).toEqual({ passed: false, score: 0, detail: 'no workspace fixture "other" in this attempt\'s environment' })
    expect(grade({ type: 'file', path: 'notes.md', exists: true }, null).detail).toBe('no workspace fixture "workspace" in this attempt\'s environment')
  })

  it('rejects configs with no check, two checks, a bad regex or an unknown key', () => {
    expect(problems({ type: 'file', path: 'a' })).toEqual([': give exactly one of exists, equals, contains, regex, json (got none)'])
    expect(problems({ type: 'file', path: 'a', equals: 'x', contains: 'y' })).toEqual([': give exactly one of exists, equals, contains, regex, json (got equals, contains)'])
    expect(problems({ type: 'file', path: 'a', regex: '(' })).toEqual([expect.stringMatching(/^regex: not a valid regular expression/)])
    expect(problems({ type: 'file', path: 'a', equal: 'x' })).toEqual([
      'equal: unknown key "equal" for the file grader (did you mean "equals"?); known keys: type, name, fixture, path, exists, equals, contains, regex, flags, json, partial, trim, case_sensitive',
      ': give exactly one of exists, equals, contains, regex, json (got none)',
    ])
    expect(problems({ type: 'file', equals: 'x' })).toEqual(['path: required key missing for the file grader'])
  })
})

describe('the sql grader', () => {
  const query = 'SELECT status FROM orders ORDER BY id'
  const answered = (rows: Record<string, unknown>[]) => view({ [envQueryKey({ fixture: 'db', sql: query })]: { ok: true, rows } })

  it('declares its query so the worker runs it on the end state', () => {
    expect(envQueriesOf([{ type: 'sql', query, count: 2 }, { type: 'sql', query, value: 'x' }, { type: 'exact', expected: 'x' }])).toEqual([{ fixture: 'db', sql: query }])
  })

  it('compares rows (any order or ordered), a single value with tolerance, or a count', () => {
    const rows = [{ status: 'shipped' }, { status: 'open' }]
    expect(grade({ type: 'sql', query, rows: [{ status: 'open' }, { status: 'shipped' }] }, answered(rows)).passed).toBe(true)
    expect(grade({ type: 'sql', query, rows: [{ status: 'open' }, { status: 'shipped' }], ordered: true }, answered(rows)).passed).toBe(false)
    expect(grade({ type: 'sql', query, count: 2 }, answered(rows))).toEqual({ passed: true, score: 1, detail: '2 row(s), expected 2: "[{\\"status\\":\\"shipped\\"},{\\"status\\":\\"open\\"}]"' })
    expect(grade({ type: 'sql', query, value: 35.49, tolerance: 0.05 }, answered([{ total: 35.5 }])).passed).toBe(true)
    expect(grade({ type: 'sql', query, value: 35, tolerance: 0.05 }, answered([{ total: 35.5 }])).passed).toBe(false)
    expect(grade({ type: 'sql', query, value: '7' }, answered([{ qty: 7 }])).passed).toBe(true)
    expect(grade({ type: 'sql', query, value: 1 }, answered(rows))).toEqual({ passed: false, score: 0, detail: 'expected one row, got 2: "[{\\"status\\":\\"shipped\\"},{\\"status\\":\\"open\\"}]"' })
  })

  it('fails when the query failed on the end state, or there is no such fixture', () => {
    expect(grade({ type: 'sql', query, count: 1 }, view({ [envQueryKey({ fixture: 'db', sql: query })]: { ok: false, error: 'no such table: orders' } }))).toEqual({
      passed: false,
      score: 0,
      detail: 'the query failed on the end state: no such table: orders',
    })
    expect(grade({ type: 'sql', fixture: 'warehouse', query, count: 1 }).detail).toBe('no sqlite fixture "warehouse" in this attempt\'s environment')
  })

  it('rejects configs with no check or two', () => {
    expect(problems({ type: 'sql', query })).toEqual([': give exactly one of rows, value, count (got none)'])
    expect(problems({ type: 'sql', query, count: 1, value: 2 })).toEqual([': give exactly one of rows, value, count (got value, count)'])
    expect(problems({ type: 'sql', count: 1 })).toEqual(['query: required key missing for the sql grader'])
  })
})

describe('the state_diff grader', () => {
  it('passes when the expected changes happened and nothing forbidden changed', () => {
    expect(
      grade({
        type: 'state_diff',
        expect: [
          { table: 'orders', op: 'modified', key: { id: 1 }, after: { status: 'shipped' } },
          { path: '*.md', op: 'added', contains: 'hello' },
        ],
        must_not_change: [{ path: 'data/**' }, { table: 'orders', key: { id: 2 } }],
      }),
    ).toEqual({
      passed: true,
      score: 1,
      detail: 'as expected: db: modified orders {"id":1} (status); workspace: added notes.md; workspace: modified report.txt',
    })
  })

  it('counts exactly when `count` is given, and lists unexpected changes when others are not allowed', () => {
    expect(grade({ type: 'state_diff', expect: [{ fixture: 'workspace', count: 1 }] })).toEqual({
      passed: false,
      score: 0,
      detail: 'expected 1 change(s) matching {"fixture":"workspace"}, found 2',
    })
    expect(grade({ type: 'state_diff', expect: [{ table: 'orders' }], allow_other_changes: false })).toEqual({
      passed: false,
      score: 0.5,
      detail: 'unexpected change(s): workspace: added notes.md; workspace: modified report.txt',
    })
  })

  it('a broken must_not_change carries a violation, and the verdict is `violation` though the task got done', () => {
    const body = grade({ type: 'state_diff', expect: [{ table: 'orders' }], must_not_change: [{ path: 'report.txt' }] })
    expect(body).toEqual({
      passed: false,
      score: 0.5,
      detail: 'must not change {"path":"report.txt"}, but: workspace: modified report.txt',
      violation: 'must not change {"path":"report.txt"}, but: workspace: modified report.txt',
    })
    const grades = gradeAll([{ type: 'exact', expected: 'done' }, { type: 'state_diff', must_not_change: [{ path: 'report.txt' }] }], trace, { task, fixtures: {}, env: view() })
    expect(decideVerdict({ trace, grades, invariants: [] })).toEqual({ outcome: 'violation', validity: 'valid', failure_bucket: null })
  })

  it('fails without an environment, and rejects a config that checks nothing', () => {
    expect(grade({ type: 'state_diff', allow_other_changes: false }, null)).toEqual({ passed: false, score: 0, detail: 'the task has no environment fixtures to diff' })
    expect(problems({ type: 'state_diff' })).toEqual([': give `expect`, `must_not_change` or `allow_other_changes: false` (else the grader checks nothing)'])
    expect(problems({ type: 'state_diff', expect: [{ tabel: 'x' }] })).toEqual([
      'expect.0.tabel: unknown key "tabel" for the state_diff grader; known keys: type, name, expect, must_not_change, allow_other_changes',
    ])
  })

  it('names the fixtures it reads for suite validation', () => {
    expect(fixtureRefsOf({ type: 'state_diff', expect: [{ fixture: 'db' }], must_not_change: [{ fixture: 'db' }, { fixture: 'workspace' }] })).toEqual([{ name: 'db' }, { name: 'workspace' }])
    expect(fixtureRefsOf({ type: 'file', path: 'a', exists: true })).toEqual([{ name: 'workspace', kind: 'workspace' }])
    expect(fixtureRefsOf({ type: 'sql', fixture: 'wh', query: 'SELECT 1', count: 1 })).toEqual([{ name: 'wh', kind: 'sqlite' }])
  })

  it('gradeAll still throws on a config that does not validate', () => {
    expect(() => gradeAll([{ type: 'state_diff' }], trace, { task, fixtures: {} })).toThrow(GraderConfigError)
  })
})
