/** The injected_fault bucket: a fault the agent never got past is kept apart from its own mistakes. */
import { describe, expect, it } from 'vitest'
import { AgentTrace, type AgentTraceInput, type Grade, type ToolCall } from '../../core/contracts/index.js'
import { decideVerdict } from '../../core/verdict.js'

const fail: Grade = { grader: 'exact', passed: false, score: 0, detail: '' }
const call = (index: number, fields: Partial<ToolCall>): ToolCall => ({ index, name: 'lookup', args: {}, retry_index: 0, started_ms: index, duration_ms: 1, ...fields })
const model = (i: number, attributes: Record<string, unknown>) => ({ span_id: `model-${i}`, parent_span_id: 'agent', category: 'model' as const, name: 'm', start_ms: i, duration_ms: 1, attributes })
const bucket = (fields: Partial<AgentTraceInput>) => decideVerdict({ trace: AgentTrace.parse({ output: 'an answer', duration_ms: 1, ...fields }), grades: [fail], invariants: [] }).failure_bucket

describe('failure bucket under injected faults', () => {
  it('an injected error never followed by a clean call of the tool: injected_fault, not tool_error', () => {
    expect(bucket({ tool_calls: [call(0, { error: '500 Internal Server Error', injected_fault: '500' })] })).toBe('injected_fault')
    expect(bucket({ tool_calls: [call(0, { result: '<html>', injected_fault: 'garbage' })] })).toBe('injected_fault')
    // a retry that met another fault is no recovery
    expect(bucket({ tool_calls: [call(0, { error: 'x', injected_fault: '500' }), call(1, { result: 'ok?', injected_fault: 'garbage', retry_index: 1 })] })).toBe('injected_fault')
  })

  it('a fault the agent got past leaves the failure to the agent', () => {
    expect(bucket({ tool_calls: [call(0, { error: 'timeout', injected_fault: 'timeout' }), call(1, { result: 42, retry_index: 1 })] })).toBe('wrong_answer')
    // slow answers correctly: it is no failure at all
    expect(bucket({ tool_calls: [call(0, { result: 42, injected_fault: 'slow' })] })).toBe('wrong_answer')
    // its own tool error stays a tool_error
    expect(bucket({ tool_calls: [call(0, { name: 'other', error: 'bad id' })] })).toBe('tool_error')
  })

  it('model faults: unrecovered when no clean completion came after', () => {
    expect(bucket({ spans: [model(0, { status: 'injected_fault', injected_fault: 'rate_limit' })], output: '' })).toBe('injected_fault')
    expect(bucket({ spans: [model(0, { status: 'injected_fault', injected_fault: '500' }), model(1, { status: 'ok' })] })).toBe('wrong_answer')
    expect(bucket({ spans: [model(0, { status: 'ok', injected_fault: 'slow' })] })).toBe('wrong_answer')
  })
})
