import { describe, expect, it } from 'vitest'
import { AgentTrace, Task, type AgentTraceInput, type GraderSpec, type ToolCall } from '../../core/contracts/index.js'
import { GraderConfigError, extractNumber, gradeAll, graders, outputText, selectOutput, validateGraderSpec } from '../../core/graders/index.js'
import type { GradeContext } from '../../core/plugins.js'

const ctx: GradeContext = {
  task: Task.parse({ id: 't1', instruction: 'do it', graders: [{ type: 'exact', expected: 'x' }] }),
  fixtures: {},
}

function trace(output: unknown, calls: Partial<ToolCall>[] = []): AgentTrace {
  const input: AgentTraceInput = {
    output,
    duration_ms: 1,
    tool_calls: calls.map((call, index) => ({ index, name: 'tool', args: {}, retry_index: 0, started_ms: 0, duration_ms: 1, ...call })),
  }
  return AgentTrace.parse(input)
}

/** Validates then grades one spec, returning the grade without its name. */
function grade(spec: GraderSpec, output: unknown, calls: Partial<ToolCall>[] = []): { passed: boolean; score: number; detail: string } {
  expect(validateGraderSpec(spec)).toEqual({ ok: true })
  const [result] = gradeAll([spec], trace(output, calls), ctx)
  if (result === undefined) throw new Error('no grade')
  const { grader: _name, ...rest } = result
  return rest
}

describe('registry', () => {
  it('registers the ten graders by name, each with a description', () => {
    expect([...graders.keys()].sort()).toEqual(['contains', 'exact', 'file', 'json_schema', 'judge', 'numeric', 'regex', 'sql', 'state_diff', 'tool_sequence'])
    for (const [name, grader] of graders) {
      expect(grader.name).toBe(name)
      expect(grader.description.length).toBeGreaterThan(10)
    }
  })
})

describe('validateGraderSpec', () => {
  it('names an unknown type and lists the known ones', () => {
    expect(validateGraderSpec({ type: 'exakt', expected: 'x' })).toEqual({
      ok: false,
      problems: [{ path: ['type'], message: 'unknown grader type "exakt" (did you mean "exact"?); known types: contains, exact, file, json_schema, judge, numeric, regex, sql, state_diff, tool_sequence' }],
    })
  })
  it('catches a misspelt key and suggests the right one', () => {
    expect(validateGraderSpec({ type: 'exact', expected: 'x', case_sensitiv: false })).toEqual({
      ok: false,
      problems: [
        {
          path: ['case_sensitiv'],
          message: 'unknown key "case_sensitiv" for the exact grader (did you mean "case_sensitive"?); known keys: type, name, field, expected, case_sensitive, trim',
        },
      ],
    })
  })
  it('reports a missing required key by path', () => {
    const result = validateGraderSpec({ type: 'numeric' })
    expect(result.ok).toBe(false)
    expect(result.ok ? [] : result.problems.map((p) => p.path)).toEqual([['expected']])
  })
  it('accepts a name on every grader', () => {
    const specs: GraderSpec[] = [
      { type: 'exact', name: 'n', expected: 1 },
      { type: 'contains', name: 'n', expected: 'a' },
      { type: 'regex', name: 'n', pattern: 'a' },
      { type: 'numeric', name: 'n', expected: 1 },
      { type: 'tool_sequence', name: 'n', sequence: ['a'] },
    ]
    expect(specs.map(validateGraderSpec)).toEqual(specs.map(() => ({ ok: true })))
  })
})

describe('gradeAll', () => {
  it('names grades by type, or by name when given, and keeps the order', () => {
    const grades = gradeAll(
      [
        { type: 'exact', expected: '42' },
        { type: 'contains', name: 'mentions-answer', expected: 'answer' },
      ],
      trace('42'),
      ctx,
    )
    expect(grades).toEqual([
      { grader: 'exact', passed: true, score: 1, detail: 'matched "42"' },
      { grader: 'mentions-answer', passed: false, score: 0, detail: 'missing "answer" (found 0 of 1) in "42"' },
    ])
  })
  it('throws GraderConfigError (a harness error) for an invalid spec rather than failing the agent', () => {
    expect(() => gradeAll([{ type: 'regex', pattern: '(' }], trace('x'), ctx)).toThrow(GraderConfigError)
    expect(() => gradeAll([{ type: 'nope' }], trace('x'), ctx)).toThrow(/unknown grader type "nope"/)
  })
  it('returns no grades for no specs', () => {
    expect(gradeAll([], trace('x'), ctx)).toEqual([])
  })
})

describe('exact', () => {
  it('passes on equal text, trimming by default', () => {
    expect(grade({ type: 'exact', expected: '42' }, ' 42\n')).toEqual({ passed: true, score: 1, detail: 'matched "42"' })
  })
  it('fails with what it expected and what it got', () => {
    expect(grade({ type: 'exact', expected: '42' }, '41')).toEqual({ passed: false, score: 0, detail: 'expected "42", got "41"' })
  })
  it('is case-sensitive by default and can be told not to be', () => {
    expect(grade({ type: 'exact', expected: 'Paris' }, 'paris').passed).toBe(false)
    expect(grade({ type: 'exact', expected: 'Paris', case_sensitive: false }, 'paris').passed).toBe(true)
  })
  it('does not trim when trim is false', () => {
    expect(grade({ type: 'exact', expected: 'a', trim: false }, ' a')).toEqual({ passed: false, score: 0, detail: 'expected "a", got " a"' })
  })
  it('compares numbers and booleans as text', () => {
    expect(grade({ type: 'exact', expected: 42 }, 42).passed).toBe(true)
    expect(grade({ type: 'exact', expected: true }, 'true').passed).toBe(true)
    expect(grade({ type: 'exact', expected: 42 }, null)).toEqual({ passed: false, score: 0, detail: 'expected "42", got ""' })
  })
  it('reads a dot-path field from an object or a JSON string', () => {
    expect(grade({ type: 'exact', field: 'answer.city', expected: 'Oslo' }, { answer: { city: 'Oslo' } }).passed).toBe(true)
    expect(grade({ type: 'exact', field: 'items.1', expected: 'b' }, '{"items":["a","b"]}').passed).toBe(true)
  })
  it('fails clearly when the field is missing or the output is not JSON', () => {
    expect(grade({ type: 'exact', field: 'answer', expected: 'x' }, { other: 1 })).toEqual({
      passed: false,
      score: 0,
      detail: 'field "answer" not found in output "{\\"other\\":1}"',
    })
    expect(grade({ type: 'exact', field: 'answer', expected: 'x' }, 'plain text')).toEqual({
      passed: false,
      score: 0,
      detail: 'field "answer" not found: output is not JSON ("plain text")',
    })
  })
  it('rejects malformed configs', () => {
    expect(validateGraderSpec({ type: 'exact' }).ok).toBe(false)
    expect(validateGraderSpec({ type: 'exact', expected: ['a'] }).ok).toBe(false)
    expect(validateGraderSpec({ type: 'exact', expected: 'a', trim: 'yes' }).ok).toBe(false)
  })
})

describe('contains', () => {
  it('passes when the text appears, case-insensitively by default', () => {
    expect(grade({ type: 'contains', expected: 'PARIS' }, 'The capital is Paris.')).toEqual({ passed: true, score: 1, detail: 'found "PARIS"' })
  })
  it('needs every item of a list, scoring the share found', () => {
    expect(grade({ type: 'contains', expected: ['apple', 'pear', 'plum', 'fig'] }, 'apple and fig')).toEqual({
      passed: false,
      score: 0.5,
      detail: 'missing "pear", "plum" (found 2 of 4) in "apple and fig"',
    })
  })
  it('honours case_sensitive', () => {
    expect(grade({ type: 'contains', expected: 'Paris', case_sensitive: true }, 'paris').passed).toBe(false)
  })
  it('searches JSON text of structured output', () => {
    expect(grade({ type: 'contains', expected: '"ok":true' }, { ok: true }).passed).toBe(true)
  })
  it('rejects malformed configs', () => {
    expect(validateGraderSpec({ type: 'contains', expected: [] })).toEqual({
      ok: false,
      problems: [{ path: ['expected'], message: 'expected at least one string' }],
    })
    expect(validateGraderSpec({ type: 'contains', expected: 3 })).toEqual({
      ok: false,
      problems: [{ path: ['expected'], message: 'expected a non-empty string or a non-empty list of non-empty strings' }],
    })
    expect(validateGraderSpec({ type: 'contains', expected: 'a', regex: true }).ok).toBe(false)
  })
})

describe('regex', () => {
  it('passes on a match and shows what matched', () => {
    expect(grade({ type: 'regex', pattern: '\\d{4}-\\d{2}' }, 'due 2024-05-01')).toEqual({ passed: true, score: 1, detail: '/\\d{4}-\\d{2}/ matched "2024-05"' })
  })
  it('fails on no match', () => {
    expect(grade({ type: 'regex', pattern: '^yes$', flags: 'i' }, 'no')).toEqual({ passed: false, score: 0, detail: '/^yes$/i did not match "no"' })
  })
  it('uses flags', () => {
    expect(grade({ type: 'regex', pattern: '^yes$', flags: 'i' }, 'YES').passed).toBe(true)
  })
  it('gives the same answer on every call even with the g flag', () => {
    const spec = { type: 'regex', pattern: 'a', flags: 'g' }
    expect([grade(spec, 'a').passed, grade(spec, 'a').passed]).toEqual([true, true])
  })
  it('rejects a pattern that does not compile, on the pattern', () => {
    const result = validateGraderSpec({ type: 'regex', pattern: '(unclosed' })
    expect(result.ok ? [] : result.problems.map((p) => p.path)).toEqual([['pattern']])
    expect(result.ok ? '' : result.problems[0]?.message).toMatch(/^pattern does not compile: /)
  })
  it('rejects bad flags, on the flags', () => {
    const result = validateGraderSpec({ type: 'regex', pattern: 'a', flags: 'q' })
    expect(result.ok ? [] : result.problems.map((p) => p.path)).toEqual([['flags']])
  })
})

describe('numeric', () => {
  it('passes on the exact number, from a number or a numeric string', () => {
    expect(grade({ type: 'numeric', expected: 42 }, 42)).toEqual({ passed: true, score: 1, detail: 'got 42, within 42' })
    expect(grade({ type: 'numeric', expected: -1.5 }, ' -1.5 ').passed).toBe(true)
  })
  it('takes the last number in text', () => {
    expect(grade({ type: 'numeric', expected: 1234 }, 'Step 1: add 2 and 3. The answer is 1,234.').passed).toBe(true)
  })
  it('fails outside the tolerance, saying by how much', () => {
    expect(grade({ type: 'numeric', expected: 10, tolerance: 0.5 }, 'about 11')).toEqual({
      passed: false,
      score: 0,
      detail: 'expected 10 ± 0.5, got 11 (off by 1)',
    })
  })
  it('passes inside the absolute or relative tolerance, whichever is wider', () => {
    expect(grade({ type: 'numeric', expected: 10, tolerance: 0.5 }, '10.4').passed).toBe(true)
    expect(grade({ type: 'numeric', expected: 1000, tolerance: 0.5, relative_tolerance: 0.01 }, '1009').passed).toBe(true)
    expect(grade({ type: 'numeric', expected: 1000, relative_tolerance: 0.01 }, '1011').passed).toBe(false)
  })
  it('reads a field', () => {
    expect(grade({ type: 'numeric', field: 'total', expected: 7 }, { total: '7' }).passed).toBe(true)
  })
  it('fails when there is no number', () => {
    expect(grade({ type: 'numeric', expected: 3 }, 'no idea')).toEqual({ passed: false, score: 0, detail: 'expected 3, no number found in "no idea"' })
  })
  it('rejects malformed configs', () => {
    expect(validateGraderSpec({ type: 'numeric', expected: '42' }).ok).toBe(false)
    expect(validateGraderSpec({ type: 'numeric', expected: 42, tolerance: -1 }).ok).toBe(false)
    expect(validateGraderSpec({ type: 'numeric', expected: 42, tolerence: 1 }).ok).toBe(false)
  })
})

describe('tool_sequence', () => {
  const calls = (...names: string[]): Partial<ToolCall>[] => names.map((name) => ({ name }))

  it('ordered: passes when the sequence appears in order, other calls interleaved', () => {
    expect(grade({ type: 'tool_sequence', sequence: ['search', 'read'] }, 'x', calls('search', 'log', 'read'))).toEqual({
      passed: true,
      score: 1,
      detail: 'called [search, read] in order; calls were [search, log, read]',
    })
  })
  it('ordered: fails out of order, scoring the matched prefix', () => {
    expect(grade({ type: 'tool_sequence', sequence: ['search', 'read'] }, 'x', calls('read', 'search'))).toEqual({
      passed: false,
      score: 0.5,
      detail: 'expected [search, read] in order, matched 1 of 2 (next missing: "read"); calls were [read, search]',
    })
  })
  it('ignores failed and refused calls', () => {
    const trail = [{ name: 'search' }, { name: 'read', error: 'timeout' }, { name: 'write', refused: 'disallowed_tool' as const }]
    expect(grade({ type: 'tool_sequence', sequence: ['search', 'read'] }, 'x', trail).passed).toBe(false)
    expect(grade({ type: 'tool_sequence', sequence: ['search'], mode: 'subset' }, 'x', trail).passed).toBe(true)
  })
  it('unordered: needs the same multiset', () => {
    expect(grade({ type: 'tool_sequence', sequence: ['a', 'b', 'b'], mode: 'unordered' }, 'x', calls('b', 'a', 'b')).passed).toBe(true)
    expect(grade({ type: 'tool_sequence', sequence: ['a', 'b', 'b'], mode: 'unordered' }, 'x', calls('b', 'a', 'c'))).toEqual({
      passed: false,
      score: 2 / 3,
      detail: 'expected exactly [a, b, b] in any order: missing [b], unexpected [c]; calls were [b, a, c]',
    })
  })
  it('subset: every call must be in the sequence', () => {
    expect(grade({ type: 'tool_sequence', sequence: ['a', 'b'], mode: 'subset' }, 'x', calls('a', 'a')).passed).toBe(true)
    expect(grade({ type: 'tool_sequence', sequence: ['a', 'b'], mode: 'subset' }, 'x', calls('a', 'rm', 'rm'))).toEqual({
      passed: false,
      score: 1 / 3,
      detail: 'called tools outside [a, b]: [rm]; calls were [a, rm, rm]',
    })
  })
  it('superset: every sequence tool must be called', () => {
    expect(grade({ type: 'tool_sequence', sequence: ['a', 'b'], mode: 'superset' }, 'x', calls('b', 'c', 'a')).passed).toBe(true)
    expect(grade({ type: 'tool_sequence', sequence: ['a', 'b'], mode: 'superset' }, 'x', calls('a'))).toEqual({
      passed: false,
      score: 0.5,
      detail: 'never called [b]; calls were [a]',
    })
  })
  it('rejects malformed configs', () => {
    expect(validateGraderSpec({ type: 'tool_sequence', sequence: 'a' }).ok).toBe(false)
    expect(validateGraderSpec({ type: 'tool_sequence', sequence: ['a'], mode: 'exact' }).ok).toBe(false)
    expect(validateGraderSpec({ type: 'tool_sequence', sequense: ['a'] }).ok).toBe(false)
  })
})

describe('output helpers', () => {
  it('outputText turns any output into text', () => {
    expect([outputText(null), outputText(undefined), outputText('a'), outputText(3), outputText(false), outputText({ a: [1] })]).toEqual([
      '',
      '',
      'a',
      '3',
      'false',
      '{"a":[1]}',
    ])
  })
  it('extractNumber prefers the whole value, then the last number, and ignores hyphens inside words', () => {
    expect([extractNumber(5), extractNumber('1e3'), extractNumber('x = -2, y = 7.25'), extractNumber('on 2024-05'), extractNumber('none')]).toEqual([
      5, 1000, 7.25, 5, null,
    ])
    expect(extractNumber('drop to -3')).toBe(-3)
  })
  it('selectOutput does not walk into inherited properties', () => {
    expect(selectOutput({}, 'constructor').ok).toBe(false)
  })
})
