/**
 * Failure buckets: every pair of buckets that can occur together in one attempt, the higher one
 * wins. The priority is FAILURE_BUCKETS' order, with the documented deviation of core/verdict.ts:
 * `refusal` is checked before `wrong_answer` / `no_answer` (a refusal's text is not an answer).
 * `harness_error` beats everything and stays visible (invalid), never folded into "failed";
 * `injected_fault` (a fault the harness injected and the agent never got past) comes next.
 */
import { describe, expect, it } from 'vitest'
import { AgentTrace, FAILURE_BUCKETS, type AgentTraceInput, type FailureBucket, type Grade, type ToolCall } from '../../core/contracts/index.js'
import { decideVerdict } from '../../core/verdict.js'

type Ingredient = { calls?: Partial<ToolCall>[]; fields?: Partial<AgentTraceInput>; harnessError?: string }

/** what puts an attempt into each bucket */
const INGREDIENTS: Record<FailureBucket, Ingredient> = {
  injected_fault: { calls: [{ name: 'lookup', error: '500 Internal Server Error', injected_fault: '500' }] },
  tool_error: { calls: [{ name: 'fetch', error: 'timeout' }] },
  malformed_tool_call: { calls: [{ name: 'lookup', refused: 'malformed_tool_call', error: 'args.key: expected string' }] },
  hallucinated_tool: { calls: [{ name: 'teleport', refused: 'hallucinated_tool' }] },
  budget_exhausted: { fields: { budget_exhausted: 'max_tool_calls' } },
  wrong_answer: { fields: { output: '41' } },
  no_answer: { fields: { output: '' } },
  refusal: { fields: { refused: true } },
  harness_error: { harnessError: 'adapter "x" threw: boom' },
}

/** the implemented order: FAILURE_BUCKETS with refusal moved ahead of wrong_answer and no_answer, harness_error first */
const PRIORITY: FailureBucket[] = ['harness_error', 'injected_fault', 'tool_error', 'malformed_tool_call', 'hallucinated_tool', 'budget_exhausted', 'refusal', 'wrong_answer', 'no_answer']

const fail: Grade = { grader: 'exact', passed: false, score: 0, detail: '' }

function verdictOf(...ingredients: Ingredient[]) {
  const calls = ingredients.flatMap((i) => i.calls ?? [])
  const fields = Object.assign({ output: 'an answer' }, ...ingredients.map((i) => i.fields ?? {})) as Partial<AgentTraceInput>
  const trace = AgentTrace.parse({
    duration_ms: 1,
    ...fields,
    tool_calls: calls.map((call, index) => ({ index, name: 'tool', args: {}, retry_index: 0, started_ms: 0, duration_ms: 1, ...call })),
  })
  const harnessError = ingredients.find((i) => i.harnessError !== undefined)?.harnessError
  return decideVerdict({ trace, grades: [fail], invariants: [], ...(harnessError !== undefined ? { harnessError } : {}) })
}

describe('every bucket on its own', () => {
  it.each(FAILURE_BUCKETS.map((bucket) => [bucket]))('%s', (bucket) => {
    expect(verdictOf(INGREDIENTS[bucket])).toEqual({ outcome: 'fail', validity: bucket === 'harness_error' ? 'invalid' : 'valid', failure_bucket: bucket })
  })
})

describe('every priority clash: the higher bucket wins', () => {
  const pairs = PRIORITY.flatMap((higher, i) => PRIORITY.slice(i + 1).map((lower) => [higher, lower] as const))
    // an output is either empty or not: these two never meet
    .filter(([a, b]) => !(a === 'wrong_answer' && b === 'no_answer'))
  it('covers 35 pairs', () => {
    expect(pairs).toHaveLength(35)
  })
  it.each(pairs)('%s beats %s', (higher, lower) => {
    expect(verdictOf(INGREDIENTS[lower], INGREDIENTS[higher]).failure_bucket).toBe(higher)
    expect(verdictOf(INGREDIENTS[higher], INGREDIENTS[lower]).failure_bucket).toBe(higher)
  })
  it('a harness error with a broken invariant is still a harness error (invalid), not a violation', () => {
    const trace = AgentTrace.parse({ output: 'x', duration_ms: 1 })
    expect(decideVerdict({ trace, grades: [fail], invariants: [{ name: 'n', passed: false, detail: '' }], harnessError: 'boom' })).toEqual({
      outcome: 'fail',
      validity: 'invalid',
      failure_bucket: 'harness_error',
    })
  })
})
