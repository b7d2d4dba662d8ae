import { describe, expect, it } from 'vitest'
import { StoredTrace, type Span, type StoredTrace as StoredTraceType } from '../../core/contracts/index.js'
import { buildTraceView, flattenTrace, type TraceNode } from '../../core/span-tree.js'
import { traceLines } from '../../app/render/trace-text.js'

const span = (span_id: string, parent_span_id: string | null, category: Span['category'], name: string, start_ms: number, duration_ms: number, attributes: Record<string, unknown> = {}): Span => ({
  span_id,
  parent_span_id,
  category,
  name,
  start_ms,
  duration_ms,
  attributes,
})

/** A stored attempt the way the attempt runner stores it: spans in recording order (grading before the fixtures). */
function stored(overrides: Partial<StoredTraceType> = {}, spans?: Span[]): StoredTraceType {
  return StoredTrace.parse({
    attempt_uid: 'r1/c1/lookup/2',
    run_id: 'r1',
    config_id: 'c1',
    suite: 'core',
    task_id: 'lookup',
    attempt: 2,
    outcome: 'fail',
    validity: 'valid',
    failure_bucket: 'budget_exhausted',
    grades: [
      { grader: 'exact', passed: false, score: 0, detail: 'expected "42", got "41"' },
      { grader: 'judge', passed: true, score: 1, detail: 'fine', judge: { model: 'gpt-x', prompt_version: 'p1', decoding: {} } },
    ],
    invariants: [{ name: 'no_delete', passed: true, detail: '' }],
    trace: {
      output: '41',
      tool_calls: [
        { index: 0, name: 'kv_get', args: { key: 'a' }, result: { value: 1 }, retry_index: 0, started_ms: 20, duration_ms: 5 },
        { index: 1, name: 'kv_get', args: { key: 'b' }, error: 'timeout', injected_fault: 'timeout', retry_index: 0, started_ms: 30, duration_ms: 50 },
        { index: 2, name: 'kv_get', args: { key: 'b' }, error: 'budget exhausted: at most 2 tool calls', refused: 'budget_exhausted', retry_index: 1, started_ms: 90, duration_ms: 0 },
      ],
      spans: spans ?? [
        span('attempt', null, 'attempt', 'r1/c1/lookup/2', 0, 100),
        span('agent', 'attempt', 'agent', 'react', 10, 90, { result: 'returned' }),
        // the model span comes later in the list but starts before the tools: the tree orders by start
        span('tool-0', 'agent', 'tool', 'kv_get', 20, 5, { status: 'ok' }),
        span('tool-1', 'agent', 'tool', 'kv_get', 30, 50, { status: 'error' }),
        span('tool-2', 'agent', 'tool', 'kv_get', 90, 0, { status: 'budget_exhausted' }),
        span('model-0', 'agent', 'model', 'gpt-4o-mini', 11, 8, { status: 'ok', input_tokens: 120, output_tokens: 30, cost_usd: 0.0012, finish_reason: 'tool_calls' }),
        span('grading', 'attempt', 'grading', 'grade', 100, 2),
        span('env-seed', 'attempt', 'fixture', 'seed+verify', 0, 10, { status: 'ready' }),
        span('env-restore', 'attempt', 'fixture', 'restore+verify', 100, 7, { status: 'restored' }),
      ],
      usage: { input_tokens: 120, output_tokens: 30 },
      duration_ms: 90,
      budget_exhausted: 'max_tool_calls',
      self_report: 'I did it',
    },
    stored_at: 1,
    ...overrides,
  })
}

const shape = (node: TraceNode): unknown => ({ id: node.id, depth: node.depth, children: node.children.map(shape) })

describe('buildTraceView', () => {
  it('nests spans by parent, in start order, with grades, invariants and the verdict under grading', () => {
    const view = buildTraceView(stored())
    expect(view.roots.map(shape)).toEqual([
      {
        id: 'attempt',
        depth: 0,
        children: [
          { id: 'env-seed', depth: 1, children: [] },
          {
            id: 'agent',
            depth: 1,
            children: [
              { id: 'model-0', depth: 2, children: [] },
              { id: 'tool-0', depth: 2, children: [] },
              { id: 'tool-1', depth: 2, children: [] },
              { id: 'tool-2', depth: 2, children: [] },
            ],
          },
          {
            id: 'grading',
            depth: 1,
            children: [
              { id: 'grading/grade-0', depth: 2, children: [] },
              { id: 'grading/grade-1', depth: 2, children: [] },
              { id: 'grading/invariant-0', depth: 2, children: [] },
              { id: 'grading/verdict', depth: 2, children: [] },
            ],
          },
          // grading and restore start together: recorded order decides
          { id: 'env-restore', depth: 1, children: [] },
        ],
      },
    ])
    expect(view.nodes).toBe(13)
  })

  it('gives tool nodes their arguments, result, error and marks injected faults and budget refusals', () => {
    const nodes = new Map(flattenTrace(buildTraceView(stored())).map((n) => [n.id, n]))
    expect(nodes.get('tool-0')).toMatchObject({
      name: 'tool kv_get',
      status: 'ok',
      marks: [],
      fields: [
        { label: 'arguments', value: '{\n  "key": "a"\n}', block: true },
        { label: 'result', value: '{\n  "value": 1\n}', block: true },
      ],
    })
    expect(nodes.get('tool-1')).toMatchObject({ status: 'error', marks: ['injected fault: timeout'] })
    expect(nodes.get('tool-2')).toMatchObject({
      status: 'refused',
      marks: ['budget refusal'],
      fields: [
        { label: 'arguments', value: '{\n  "key": "b"\n}', block: true },
        { label: 'error', value: 'budget exhausted: at most 2 tool calls', block: false },
        { label: 'retry', value: '1' },
      ],
    })
    expect(nodes.get('agent')!.marks).toEqual(['stopped at budget max_tool_calls'])
    expect(nodes.get('model-0')).toMatchObject({
      name: 'model gpt-4o-mini',
      status: 'ok',
      fields: [
        { label: 'tokens', value: '120 in, 30 out' },
        { label: 'cost', value: '$0.00120' },
        { label: 'finish reason', value: 'tool_calls', block: false },
      ],
    })
    expect(nodes.get('grading/grade-0')).toMatchObject({ name: 'grader exact: failed', status: 'failed', fields: [{ label: 'score', value: '0.00' }, { label: 'detail', value: 'expected "42", got "41"', block: false }] })
    expect(nodes.get('grading/grade-1')!.fields).toContainEqual({ label: 'judge', value: 'gpt-x (prompt p1)' })
    expect(nodes.get('grading/verdict')).toMatchObject({
      name: 'verdict: fail (budget_exhausted), valid',
      fields: [
        { label: 'outcome', value: 'fail' },
        { label: 'validity', value: 'valid' },
        { label: 'failure bucket', value: 'budget_exhausted' },
      ],
    })
  })

  it('marks the call tier 2 localised and adds the localisation under grading', () => {
    const tier2 = { status: 'localized' as const, divergence_step: 2, decision: 'asked for b', explanation: 'should use c', confidence: 0.9, low_confidence: false, calls: 1, error: '', judge: null }
    const view = buildTraceView(stored(), { tier2 })
    const nodes = new Map(flattenTrace(view).map((n) => [n.id, n]))
    expect(nodes.get('tool-1')!.marks).toEqual(['injected fault: timeout', 'tier 2: earliest wrong decision (step 2)'])
    expect(nodes.get('grading/tier2')).toMatchObject({
      name: 'tier 2 golden divergence: localized at step 2',
      fields: [
        { label: 'status', value: 'localized' },
        { label: 'divergence step', value: '2' },
        { label: 'decision', value: 'asked for b' },
        { label: 'explanation', value: 'should use c', block: false },
        { label: 'confidence', value: '0.90' },
      ],
    })
  })

  it('hangs orphans from the root and breaks parent cycles instead of losing or looping', () => {
    const view = buildTraceView(
      stored({ grades: [], invariants: [] }, [
        span('attempt', null, 'attempt', 'x', 0, 10),
        span('lost', 'never-recorded', 'harness', 'orphan', 5, 1),
        span('a', 'b', 'agent', 'a', 1, 1),
        span('b', 'a', 'agent', 'b', 2, 1),
        span('c', 'a', 'tool', 'c', 3, 1),
      ]),
    )
    expect(view.roots.map(shape)).toEqual([
      {
        id: 'attempt',
        depth: 0,
        children: [
          { id: 'a', depth: 1, children: [{ id: 'c', depth: 2, children: [] }] },
          { id: 'b', depth: 1, children: [] },
          { id: 'lost', depth: 1, children: [] },
          { id: 'grading', depth: 1, children: [{ id: 'grading/verdict', depth: 2, children: [] }] },
        ],
      },
    ])
  })

  it('rebuilds attempt, agent and tool nodes from the calls when the spans were cut to fit the store', () => {
    const view = buildTraceView(stored({ truncated: ['span_attributes', 'spans'] }, []))
    expect(view.truncated).toEqual(['span_attributes', 'spans'])
    expect(view.roots.map(shape)).toEqual([
      {
        id: 'attempt',
        depth: 0,
        children: [
          { id: 'agent', depth: 1, children: ['tool-0', 'tool-1', 'tool-2'].map((id) => ({ id, depth: 2, children: [] })) },
          { id: 'grading', depth: 1, children: ['grade-0', 'grade-1', 'invariant-0', 'verdict'].map((id) => ({ id: `grading/${id}`, depth: 2, children: [] })) },
        ],
      },
    ])
  })
})

describe('traceLines', () => {
  it('indents every node two spaces per span depth and its fields one level further', () => {
    const view = buildTraceView(stored(), { model: 'gpt-4o-mini', cost_usd: 0.0012, latency_ms: 90 })
    const lines = traceLines(view, { width: 100 })
    expect(lines.slice(0, 4)).toEqual([
      'attempt r1/c1/lookup/2',
      'run r1  suite core  task lookup  attempt 2',
      'outcome fail (budget_exhausted)  validity valid  model gpt-4o-mini  tokens 120 in / 30 out  cost $0.00120  latency 90 ms',
      'stopped at budget max_tool_calls',
    ])
    expect(lines).toContain('▾ attempt lookup #2  @0 ms +100 ms  FAIL')
    expect(lines).toContain('  ▾ react  @10 ms +90 ms  [stopped at budget max_tool_calls]')
    expect(lines).toContain('    • tool kv_get  @30 ms +50 ms  ERROR  [injected fault: timeout]')
    expect(lines).toContain('        arguments: {"key":"b"}')
    expect(lines).toContain('    • tool kv_get  @90 ms +0 ms  REFUSED  [budget refusal]')
    expect(lines).toContain('    • grader exact: failed  FAIL')
    expect(lines.at(-1)).toBe('self-report (kept, never graded): I did it')
  })
})
