import { describe, expect, it } from 'vitest'
import { StoredTrace } from '../../core/contracts/index.js'
import { attemptSpans, otlpSpanId, otlpTraceId, otlpTraceRequest, unixNano } from '../../core/otlp.js'
import { buildTraceView } from '../../core/span-tree.js'

const stored = StoredTrace.parse({
  attempt_uid: 'r/c/t/1',
  run_id: 'r',
  config_id: 'c',
  suite: 's',
  task_id: 't',
  attempt: 1,
  outcome: 'fail',
  validity: 'valid',
  failure_bucket: 'tool_error',
  grades: [{ grader: 'exact', passed: false, score: 0, detail: 'no' }],
  invariants: [],
  trace: {
    output: 'x',
    tool_calls: [{ index: 0, name: 'get', args: { k: 1 }, error: 'timeout', injected_fault: 'timeout', retry_index: 0, started_ms: 2, duration_ms: 5 }],
    spans: [
      { span_id: 'attempt', parent_span_id: null, category: 'attempt', name: 'r/c/t/1', start_ms: 0, duration_ms: 20, attributes: {} },
      { span_id: 'agent', parent_span_id: 'attempt', category: 'agent', name: 'mock', start_ms: 1, duration_ms: 10, attributes: {} },
      { span_id: 'tool-0', parent_span_id: 'agent', category: 'tool', name: 'get', start_ms: 2, duration_ms: 5, attributes: { status: 'error' } },
      { span_id: 'grading', parent_span_id: 'attempt', category: 'grading', name: 'grade', start_ms: 15, duration_ms: 1, attributes: {} },
    ],
    usage: { input_tokens: 7, output_tokens: 3 },
    duration_ms: 10,
  },
  stored_at: 0,
})

describe('OTLP spans of an attempt', () => {
  const started = Date.UTC(2026, 10, 30, 12, 0, 0, 123)
  const spans = attemptSpans(buildTraceView(stored, { model: 'm', cost_usd: 0.25 }), started)

  it('derives stable, well-formed ids: one trace per attempt, parents linked', () => {
    expect(otlpTraceId('r/c/t/1')).toMatch(/^[0-9a-f]{32}$/)
    expect(otlpSpanId('r/c/t/1', 'agent')).toMatch(/^[0-9a-f]{16}$/)
    expect(otlpTraceId('r/c/t/1')).not.toBe(otlpTraceId('r/c/t/2'))
    expect(spans.map((s) => s.name)).toEqual(['attempt t #1', 'mock', 'tool get', 'grade'])
    expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([otlpTraceId('r/c/t/1')]))
    const byName = new Map(spans.map((s) => [s.name, s]))
    expect(byName.get('attempt t #1')!.parentSpanId).toBeUndefined()
    expect(byName.get('tool get')!.parentSpanId).toBe(byName.get('mock')!.spanId)
    expect(byName.get('grade')!.parentSpanId).toBe(byName.get('attempt t #1')!.spanId)
  })

  it('writes times as unix nanoseconds (decimal strings) from the attempt start', () => {
    expect(unixNano(1.5)).toBe('1500000')
    const tool = spans.find((s) => s.name === 'tool get')!
    expect(tool.startTimeUnixNano).toBe(`${started + 2}000000`)
    expect(tool.endTimeUnixNano).toBe(`${started + 7}000000`)
  })

  it('marks errors, injected faults and the verdict; the attempt span carries outcome, tokens and cost', () => {
    const tool = spans.find((s) => s.name === 'tool get')!
    expect(tool.status).toEqual({ code: 2, message: 'injected fault: timeout' })
    expect(tool.events).toEqual([{ timeUnixNano: tool.startTimeUnixNano, name: 'injected fault: timeout', attributes: [] }])
    expect(tool.attributes).toContainEqual({ key: 'forge.error', value: { stringValue: 'timeout' } })
    const grading = spans.find((s) => s.name === 'grade')!
    expect(grading.events.map((e) => e.name)).toEqual(['grader exact: failed', 'verdict: fail (tool_error), valid'])
    const root = spans[0]!
    expect(root.attributes).toEqual(
      expect.arrayContaining([
        { key: 'forge.outcome', value: { stringValue: 'fail' } },
        { key: 'forge.failure_bucket', value: { stringValue: 'tool_error' } },
        { key: 'gen_ai.request.model', value: { stringValue: 'm' } },
        { key: 'gen_ai.usage.input_tokens', value: { intValue: '7' } },
        { key: 'forge.cost_usd', value: { doubleValue: 0.25 } },
      ]),
    )
  })

  it('wraps attempts in one request with a forge resource and scope', () => {
    const request = otlpTraceRequest([{ view: buildTraceView(stored), startedAt: started }], { version: '0.1.0' })
    expect(request.resourceSpans[0]!.resource.attributes[0]).toEqual({ key: 'service.name', value: { stringValue: 'forge' } })
    expect(request.resourceSpans[0]!.scopeSpans[0]!.scope).toEqual({ name: 'forge', version: '0.1.0' })
    expect(request.resourceSpans[0]!.scopeSpans[0]!.spans).toHaveLength(4)
  })
})
