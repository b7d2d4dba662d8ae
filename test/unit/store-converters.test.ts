import { describe, expect, it } from 'vitest'
import { RunRecord, type AttemptResult, type BaselineRecord } from '../../core/contracts/index.js'
import { attemptToRow, baselineToRow, fromChDateTime, rowToBaseline, rowToRun, runToRow, toChDateTime, toolCallsToRows } from '../../store/converters.js'

const attempt: AttemptResult = {
  attempt_uid: 'r1/c0/t1/2',
  run_id: 'r1',
  config_id: 'c0',
  suite: 'smoke',
  task_id: 't1',
  attempt: 2,
  adapter: 'mock',
  outcome: 'fail',
  validity: 'valid',
  failure_bucket: 'wrong_answer',
  budget_limit: null,
  grades: [{ grader: 'exact', passed: false, score: 0, detail: 'expected "a", got "b"' }],
  invariants: [{ name: 'never_x', passed: true, detail: '' }],
  instruction: 'Say a.',
  output: 'b',
  self_report: 'I said a',
  error: '',
  cost_usd: null,
  latency_ms: 12.5,
  tool_call_count: 1,
  input_tokens: 30,
  output_tokens: 4,
  model: 'mock',
  decoding: { temperature: 0 },
  price_table_version: '',
  seed: '99',
  worker_id: 'w1',
  started_at: Date.UTC(2026, 10, 30, 2, 40, 21, 123),
  finished_at: Date.UTC(2026, 10, 30, 2, 40, 21, 136),
  tool_calls: [{ index: 0, name: 'echo', args: { message: 'b' }, error: 'boom', refused: 'malformed_tool_call', retry_index: 1, started_ms: 1, duration_ms: 2 }],
}

describe('store converters', () => {
  it('writes DateTime64(3) text in UTC and reads it back', () => {
    const ms = Date.UTC(2026, 10, 30, 2, 40, 21, 123)
    expect(toChDateTime(ms)).toBe('2026-11-30 02:40:21.123')
    expect(fromChDateTime('2026-11-30 02:40:21.123')).toBe(ms)
    // the last answer is kept: the next instant, the same again, the epoch, a six-digit year
    expect(toChDateTime(ms + 1)).toBe('2026-11-30 02:40:21.124')
    expect(toChDateTime(ms + 1)).toBe('2026-11-30 02:40:21.124')
    expect(toChDateTime(0)).toBe('1970-01-01 00:00:00.000')
    expect(toChDateTime(Date.UTC(10000, 0, 1))).toBe('+010000-01-01 00:00:00.000')
    expect(() => toChDateTime(Number.NaN)).toThrow(RangeError)
  })

  it('turns an attempt into one attempts row, nulls into empty strings and objects into JSON', () => {
    expect(attemptToRow(attempt, Date.UTC(2026, 10, 30, 2, 41, 0, 0))).toEqual({
      attempt_uid: 'r1/c0/t1/2',
      run_id: 'r1',
      config_id: 'c0',
      suite: 'smoke',
      task_id: 't1',
      attempt: 2,
      adapter: 'mock',
      outcome: 'fail',
      validity: 'valid',
      failure_bucket: 'wrong_answer',
      budget_limit: '',
      grades: JSON.stringify(attempt.grades),
      invariants: JSON.stringify(attempt.invariants),
      instruction: 'Say a.',
      output: 'b',
      self_report: 'I said a',
      error: '',
      cost_usd: null,
      latency_ms: 12.5,
      tool_call_count: 1,
      input_tokens: 30,
      output_tokens: 4,
      model: 'mock',
      decoding: '{"temperature":0}',
      price_table_version: '',
      seed: '99',
      worker_id: 'w1',
      started_at: '2026-11-30 02:40:21.123',
      finished_at: '2026-11-30 02:40:21.136',
      ingested_at: '2026-11-30 02:41:00.000',
      injected_faults: 0,
      injected_fault_kinds: [],
    })
    expect(attemptToRow({ ...attempt, injected_faults: 3, injected_fault_kinds: ['500', 'slow'] }, 0)).toMatchObject({ injected_faults: 3, injected_fault_kinds: ['500', 'slow'] })
  })

  it("stores the answer guard's interceptions of a call as a JSON list", () => {
    const guarded = { ...attempt, tool_calls: attempt.tool_calls.map((c) => ({ ...c, intercepted: ['outcome_graders[0].expected'] })) }
    expect(toolCallsToRows(guarded, 0).map((row) => row.intercepted)).toEqual(['["outcome_graders[0].expected"]'])
  })

  it('turns tool calls into rows keyed by attempt and index', () => {
    expect(toolCallsToRows(attempt, 0)).toEqual([
      {
        attempt_uid: 'r1/c0/t1/2',
        run_id: 'r1',
        task_id: 't1',
        call_index: 0,
        name: 'echo',
        args: '{"message":"b"}',
        result: '',
        error: 'boom',
        refused: 'malformed_tool_call',
        injected_fault: '',
        intercepted: '',
        retry_index: 1,
        started_ms: 1,
        duration_ms: 2,
        ingested_at: '1970-01-01 00:00:00.000',
      },
    ])
  })

  it('round-trips a run record', () => {
    const run: RunRecord = {
      run_id: 'r1', suite: 'smoke', suite_path: '/s', adapter: 'mock', config_id: 'c0', attempts: 5, task_count: 5,
      seed: 'x', status: 'completed', started_at: 1_764_470_000_000, finished_at: 1_764_470_005_000, updated_at: 1_764_470_005_000,
      price_table_version: 'v1', price_table_date: '2026-11-30', suite_hash: 'ab'.repeat(32), judge_model: 'gpt-4o-mini',
      judge_prompt_version: 'p3', stop_width: 0.2, stopped_tasks: ['t2', 't5'], isolation: 'unsandboxed',
      redacted: false, guard_answers: true, audit_head: 'cd'.repeat(32), audit_signature: '',
      planned_attempts: 25, final_stored: 23, missing_count: 2, missing_sample: ['t1#3', 't4#0'], harness_errors: 1,
    }
    expect(runToRow(run)).toMatchObject({
      redacted: 0, guard_answers: 1, audit_head: 'cd'.repeat(32),
      price_table_version: 'v1', price_table_date: '2026-11-30', stop_width: 0.2, stopped_tasks: ['t2', 't5'], judge_prompt_version: 'p3', isolation: 'unsandboxed',
      planned_attempts: 25, final_stored: 23, missing_count: 2, missing_sample: ['t1#3', 't4#0'], harness_errors: 1,
    })
    expect(rowToRun(runToRow(run))).toEqual(run)
    expect(rowToRun(runToRow({ ...run, status: 'running', finished_at: null }))).toEqual({ ...run, status: 'running', finished_at: null })
    // a run without faults has empty fault columns and reads back without fault stamps
    expect(runToRow(run)).toMatchObject({ fault_profile_hash: '', fault_mode: '', fault_rate: 0, fault_sweep_id: '', fault_profile: '' })
    const faulted: RunRecord = { ...run, fault_profile_hash: 'f'.repeat(64), fault_mode: 'burst', fault_rate: 0.2, fault_sweep_id: 'sw1', fault_profile: '{"rules":[]}' }
    expect(rowToRun(runToRow(faulted))).toEqual(faulted)
  })

  it('reads a run message written before the comparability stamps existed with their defaults', () => {
    const old = {
      run_id: 'r0', suite: 'smoke', suite_path: '/s', adapter: 'mock', config_id: 'c0', attempts: 5, task_count: 5,
      seed: 'x', status: 'completed', started_at: 1, finished_at: 2, updated_at: 2, price_table_version: '',
    }
    expect(RunRecord.parse(old)).toEqual({
      ...old, price_table_date: '', suite_hash: '', judge_model: '', judge_prompt_version: '', stop_width: 0, stopped_tasks: [],
      redacted: true, guard_answers: false, audit_head: '', audit_signature: '',
      planned_attempts: 0, final_stored: 0, missing_count: 0, missing_sample: [], harness_errors: 0,
    })
    // a row read before migration 9 has no isolation column
    const { isolation: _dropped, ...rowBefore9 } = runToRow(RunRecord.parse(old))
    expect(rowToRun(rowBefore9)).toEqual(RunRecord.parse(old))
  })

  it('round-trips a baseline, with DateTime64 text for its timestamp', () => {
    const baseline: BaselineRecord = {
      name: 'main', version: 3, run_id: 'r1', suite: 'smoke', commit_hash: '0123abcd', agent_version: '1.4.2', note: 'nightly',
      created_at: Date.UTC(2026, 10, 30, 3, 0, 0, 250),
    }
    expect(baselineToRow(baseline)).toEqual({
      name: 'main', version: 3, run_id: 'r1', suite: 'smoke', commit_hash: '0123abcd', agent_version: '1.4.2', note: 'nightly',
      created_at: '2026-11-30 03:00:00.250',
    })
    // ClickHouse returns UInt32 as a number and DateTime64 as text
    expect(rowToBaseline(baselineToRow(baseline))).toEqual(baseline)
  })
})
