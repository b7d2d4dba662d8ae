import { describe, expect, it } from 'vitest'
import { AgentTrace, type AgentTraceInput, type Grade, type InvariantResult, type ToolCall } from '../../core/contracts/index.js'
import { decideVerdict } from '../../core/verdict.js'

function trace(fields: Omit<Partial<AgentTraceInput>, 'tool_calls'> & { calls?: Partial<ToolCall>[] } = {}): AgentTrace {
  const { calls = [], ...rest } = fields
  return AgentTrace.parse({
    output: 'an answer',
    duration_ms: 1,
    ...rest,
    tool_calls: calls.map((call, index) => ({ index, name: 'lookup', args: {}, retry_index: 0, started_ms: 0, duration_ms: 1, ...call })),
  })
}

const pass: Grade = { grader: 'exact', passed: true, score: 1, detail: '' }
const fail: Grade = { grader: 'contains', passed: false, score: 0, detail: '' }
const kept: InvariantResult = { name: 'no_delete', passed: true, detail: '' }
const broken: InvariantResult = { name: 'no_delete', passed: false, detail: 'deleted /etc' }

/** The bucket of a failing attempt with this trace. */
const bucketOf = (t: AgentTrace): string | null => decideVerdict({ trace: t, grades: [fail], invariants: [] }).failure_bucket

describe('outcome', () => {
  it('passes when every grade passes and no invariant broke', () => {
    expect(decideVerdict({ trace: trace(), grades: [pass, pass], invariants: [kept] })).toEqual({ outcome: 'pass', validity: 'valid', failure_bucket: null })
  })
  it('is partial when some grades pass', () => {
    expect(decideVerdict({ trace: trace(), grades: [pass, fail], invariants: [] })).toEqual({
      outcome: 'partial',
      validity: 'valid',
      failure_bucket: 'wrong_answer',
    })
  })
  it('fails when no grade passes', () => {
    expect(decideVerdict({ trace: trace(), grades: [fail, fail], invariants: [] })).toEqual({ outcome: 'fail', validity: 'valid', failure_bucket: 'wrong_answer' })
  })
  it('is a violation when an invariant broke, even if the task got done', () => {
    expect(decideVerdict({ trace: trace(), grades: [pass], invariants: [kept, broken] })).toEqual({
      outcome: 'violation',
      validity: 'valid',
      failure_bucket: null,
    })
  })
  it('is a violation, not a fail, when a failing attempt broke an invariant', () => {
    expect(decideVerdict({ trace: trace({ calls: [{ error: 'boom' }] }), grades: [fail], invariants: [broken] })).toEqual({
      outcome: 'violation',
      validity: 'valid',
      failure_bucket: null,
    })
  })
  it('turns a harness error into an invalid fail, whatever the grades say', () => {
    expect(decideVerdict({ trace: trace(), grades: [pass], invariants: [broken], harnessError: 'adapter crashed', validity: 'valid' })).toEqual({
      outcome: 'fail',
      validity: 'invalid',
      failure_bucket: 'harness_error',
    })
  })
  it('treats an empty harness error as none', () => {
    expect(decideVerdict({ trace: trace(), grades: [pass], invariants: [], harnessError: '' }).outcome).toBe('pass')
  })
  it('does not pass an attempt with no grades (nothing was measured)', () => {
    expect(decideVerdict({ trace: trace(), grades: [], invariants: [] })).toEqual({ outcome: 'fail', validity: 'invalid', failure_bucket: 'harness_error' })
  })
  it('does not pass an attempt that overran its budget, even with every grade passed', () => {
    for (const limit of ['max_tokens', 'max_duration_ms', 'max_tool_calls'] as const) {
      expect(decideVerdict({ trace: trace({ budget_exhausted: limit }), grades: [pass], invariants: [kept] })).toEqual({
        outcome: 'fail',
        validity: 'valid',
        failure_bucket: 'budget_exhausted',
      })
    }
    expect(decideVerdict({ trace: trace({ calls: [{ refused: 'budget_exhausted' }] }), grades: [pass], invariants: [] })).toEqual({
      outcome: 'fail',
      validity: 'valid',
      failure_bucket: 'budget_exhausted',
    })
  })
  it('keeps a violation a violation when the budget was also overrun', () => {
    expect(decideVerdict({ trace: trace({ budget_exhausted: 'max_tokens' }), grades: [pass], invariants: [broken] })).toEqual({
      outcome: 'violation',
      validity: 'valid',
      failure_bucket: null,
    })
  })
  it('passes the validity through', () => {
    expect(decideVerdict({ trace: trace(), grades: [pass], invariants: [], validity: 'degraded' })).toEqual({
      outcome: 'pass',
      validity: 'degraded',
      failure_bucket: null,
    })
    expect(decideVerdict({ trace: trace(), grades: [fail], invariants: [], validity: 'degraded' }).validity).toBe('degraded')
  })
})

describe('failure buckets', () => {
  it('tool_error: a tool error never recovered from', () => {
    expect(bucketOf(trace({ calls: [{ name: 'fetch', error: 'timeout' }] }))).toBe('tool_error')
  })
  it('not tool_error when a later call of the same tool succeeded', () => {
    expect(bucketOf(trace({ calls: [{ name: 'fetch', error: 'timeout' }, { name: 'fetch', retry_index: 1 }] }))).toBe('wrong_answer')
  })
  it('tool_error when only a different tool succeeded later', () => {
    expect(bucketOf(trace({ calls: [{ name: 'fetch', error: 'timeout' }, { name: 'parse' }] }))).toBe('tool_error')
  })
  it('tool_error when the success came before the error', () => {
    expect(bucketOf(trace({ calls: [{ name: 'fetch' }, { name: 'fetch', error: 'timeout' }] }))).toBe('tool_error')
  })
  it('malformed_tool_call', () => {
    expect(bucketOf(trace({ calls: [{ refused: 'malformed_tool_call', error: 'args.a: expected number, got string' }] }))).toBe('malformed_tool_call')
  })
  it('hallucinated_tool, for an unknown or a denylisted tool', () => {
    expect(bucketOf(trace({ calls: [{ name: 'teleport', refused: 'hallucinated_tool' }] }))).toBe('hallucinated_tool')
    expect(bucketOf(trace({ calls: [{ name: 'rm', refused: 'disallowed_tool' }] }))).toBe('hallucinated_tool')
  })
  it('budget_exhausted, from the trace or a refused call', () => {
    expect(bucketOf(trace({ budget_exhausted: 'max_tool_calls' }))).toBe('budget_exhausted')
    expect(bucketOf(trace({ calls: [{ refused: 'budget_exhausted' }] }))).toBe('budget_exhausted')
  })
  it('wrong_answer for a non-empty output', () => {
    expect(bucketOf(trace({ output: '41' }))).toBe('wrong_answer')
    expect(bucketOf(trace({ output: { answer: null } }))).toBe('wrong_answer')
  })
  it('no_answer for an empty output', () => {
    expect([bucketOf(trace({ output: null })), bucketOf(trace({ output: undefined })), bucketOf(trace({ output: '  \n' }))]).toEqual([
      'no_answer',
      'no_answer',
      'no_answer',
    ])
  })
  it('refusal when the agent declined', () => {
    expect(bucketOf(trace({ refused: true, output: "I can't help with that" }))).toBe('refusal')
  })
})

describe('failure bucket priority', () => {
  it('tool_error beats malformed_tool_call', () => {
    expect(bucketOf(trace({ calls: [{ refused: 'malformed_tool_call', error: 'bad args' }, { name: 'fetch', error: 'timeout' }] }))).toBe('tool_error')
  })
  it('malformed_tool_call beats hallucinated_tool', () => {
    expect(bucketOf(trace({ calls: [{ name: 'teleport', refused: 'hallucinated_tool' }, { refused: 'malformed_tool_call' }] }))).toBe('malformed_tool_call')
  })
  it('hallucinated_tool beats budget_exhausted', () => {
    expect(bucketOf(trace({ budget_exhausted: 'max_tool_calls', calls: [{ name: 'teleport', refused: 'hallucinated_tool' }] }))).toBe('hallucinated_tool')
  })
  it('budget_exhausted beats wrong_answer', () => {
    expect(bucketOf(trace({ output: 'a guess', budget_exhausted: 'max_duration_ms' }))).toBe('budget_exhausted')
  })
  it('budget_exhausted beats refusal', () => {
    expect(bucketOf(trace({ refused: true, budget_exhausted: 'max_tokens' }))).toBe('budget_exhausted')
  })
  it('refusal beats wrong_answer (the refusal text is not an answer)', () => {
    expect(bucketOf(trace({ refused: true, output: 'I will not do that' }))).toBe('refusal')
  })
  it('refusal beats no_answer', () => {
    expect(bucketOf(trace({ refused: true, output: '' }))).toBe('refusal')
  })
  it('a refused call is not counted as a tool error', () => {
    expect(bucketOf(trace({ calls: [{ name: 'rm', refused: 'disallowed_tool', error: 'rm is not allowed' }] }))).toBe('hallucinated_tool')
  })
})
