import { describe, expect, it } from 'vitest'
import { StoredTrace } from '../../core/contracts/index.js'
import { attemptRecords, formatRecord, runRecord, shows, type LogFilter, type LogRecord } from '../../core/log-records.js'
import { crossedMilestone, progressLine, ProgressTracker } from '../../core/progress.js'
import { buildTraceView } from '../../core/span-tree.js'
import { parseLogOptions, runOutput } from '../../cli/log-options.js'

const stored = StoredTrace.parse({
  attempt_uid: 'r1/c/t/4',
  run_id: 'r1',
  config_id: 'c',
  suite: 's',
  task_id: 't',
  attempt: 4,
  outcome: 'fail',
  validity: 'valid',
  failure_bucket: 'tool_error',
  grades: [{ grader: 'exact', passed: false, score: 0, detail: 'no' }],
  invariants: [],
  trace: {
    output: 'x',
    tool_calls: [
      { index: 0, name: 'a', args: { q: 1 }, result: 2, retry_index: 0, started_ms: 5, duration_ms: 10 },
      { index: 1, name: 'b', args: { q: 2 }, error: 'boom', injected_fault: 'http_500', retry_index: 0, started_ms: 6, duration_ms: 3 },
    ],
    spans: [
      { span_id: 'attempt', parent_span_id: null, category: 'attempt', name: 'r1/c/t/4', start_ms: 0, duration_ms: 30, attributes: {} },
      { span_id: 'agent', parent_span_id: 'attempt', category: 'agent', name: 'react', start_ms: 1, duration_ms: 20, attributes: {} },
      // two tool calls in parallel: both nest under the agent
      { span_id: 'tool-0', parent_span_id: 'agent', category: 'tool', name: 'a', start_ms: 5, duration_ms: 10, attributes: { status: 'ok' } },
      { span_id: 'tool-1', parent_span_id: 'agent', category: 'tool', name: 'b', start_ms: 6, duration_ms: 3, attributes: { status: 'error' } },
      { span_id: 'model-0', parent_span_id: 'agent', category: 'model', name: 'm', start_ms: 2, duration_ms: 2, attributes: { status: 'ok', input_tokens: 10, output_tokens: 2, cost_usd: 0.5 } },
      { span_id: 'grading', parent_span_id: 'attempt', category: 'grading', name: 'grade', start_ms: 25, duration_ms: 1, attributes: {} },
    ],
    usage: { input_tokens: 10, output_tokens: 2 },
    duration_ms: 20,
  },
  stored_at: 0,
})

const view = buildTraceView(stored, { cost_usd: 0.5 })
const filter = (level: LogFilter['level'], only: LogFilter['only'] = [], exclude: LogFilter['exclude'] = []): LogFilter => ({ level, only, exclude })
const visible = (f: LogFilter) => attemptRecords(view).filter((r) => shows(f, r))
const line = (r: LogRecord) => formatRecord(r, 'pretty')

describe('attempt log records', () => {
  it('shows the steps at steps, the calls at calls, arguments and results at trace, each indented by span depth', () => {
    expect(visible(filter('progress'))).toEqual([])
    expect(visible(filter('steps')).map(line)).toEqual([
      '[t#4] attempt t #4 @0ms +30ms failed',
      '[t#4]   react @1ms +20ms',
      '[t#4]   grade @25ms +1ms',
      '[t#4]     verdict: fail (tool_error), valid',
      '[t#4]   10 tokens in, 2 out, cost $0.5000',
    ])
    expect(visible(filter('calls')).map(line)).toEqual([
      '[t#4] attempt t #4 @0ms +30ms failed',
      '[t#4]   react @1ms +20ms',
      '[t#4]     model m @2ms +2ms ok',
      '[t#4]       model m: 10 in, 2 out, $0.5000',
      '[t#4]     tool a @5ms +10ms ok',
      '[t#4]     tool b @6ms +3ms error [injected fault: http_500]',
      '[t#4]       injected fault: http_500 on tool b',
      '[t#4]   grade @25ms +1ms',
      '[t#4]     grader exact: failed',
      '[t#4]     verdict: fail (tool_error), valid',
      '[t#4]   10 tokens in, 2 out, cost $0.5000',
    ])
    expect(visible(filter('trace')).filter((r) => r.level === 'trace').map(line)).toEqual([
      '[t#4]       arguments: { "q": 1 }',
      '[t#4]       result: 2',
      '[t#4]       arguments: { "q": 2 }',
      '[t#4]       error: boom',
    ])
  })

  it('selects categories with --log-only and --log-exclude', () => {
    expect(visible(filter('calls', ['tools', 'faults'])).map((r) => [r.category, r.span_id])).toEqual([
      ['tools', 'tool-0'],
      ['tools', 'tool-1'],
      ['faults', 'tool-1'],
    ])
    expect(new Set(visible(filter('calls', [], ['tools', 'grading', 'scheduler'])).map((r) => r.category))).toEqual(new Set(['model', 'cost', 'faults']))
  })

  it('carries run, task, attempt, span, parent span and category on every record; jsonl writes them all', () => {
    for (const record of attemptRecords(view)) {
      expect(Object.keys(record)).toEqual(expect.arrayContaining(['run_id', 'task_id', 'attempt', 'span_id', 'parent_span_id', 'category']))
      expect(record).toMatchObject({ run_id: 'r1', task_id: 't', attempt: 4 })
    }
    const tool = attemptRecords(view).find((r) => r.span_id === 'tool-1' && r.category === 'tools')!
    expect(JSON.parse(formatRecord(tool, 'jsonl', Date.UTC(2026, 10, 30)))).toEqual({
      time: '2026-11-30T00:00:00.000Z',
      level: 'calls',
      category: 'tools',
      run_id: 'r1',
      task_id: 't',
      attempt: 4,
      span_id: 'tool-1',
      parent_span_id: 'agent',
      depth: 2,
      msg: 'tool b @6ms +3ms error [injected fault: http_500]',
    })
    expect(formatRecord(runRecord('r1', 'run r1 started'), 'pretty')).toBe('run r1 started')
  })
})

describe('ProgressTracker', () => {
  it('counts each attempt once, with rate, ETA, pass rate, harness errors and per-worker counts', () => {
    const tracker = new ProgressTracker(10, 1_000)
    expect(tracker.snapshot(1_000)).toMatchObject({ done: 0, pass_rate: null, rate: null, eta_s: null })
    tracker.startAt(2_000)
    const event = (uid: string, outcome: string, bucket: string | null, worker: string) => ({ attempt_uid: uid, task_id: uid.split('/')[0]!, outcome, failure_bucket: bucket, worker_id: worker })
    expect(tracker.record(event('a/0', 'pass', null, 'w1'))).toBe(true)
    expect(tracker.record(event('a/0', 'pass', null, 'w1'))).toBe(false)
    tracker.record(event('b/0', 'fail', 'harness_error', 'w2'))
    tracker.record(event('b/1', 'fail', 'wrong_answer', 'w1'))
    tracker.record(event('c/0', 'pass', null, 'w2'))
    expect(tracker.snapshot(4_000)).toEqual({
      done: 4,
      planned: 10,
      passed: 2,
      harness_errors: 1,
      pass_rate: 0.5,
      rate: 2,
      eta_s: 3,
      elapsed_s: 2,
      workers: [
        { worker_id: 'w1', done: 2, last_task: 'b' },
        { worker_id: 'w2', done: 2, last_task: 'c' },
      ],
    })
    expect(progressLine(tracker.snapshot(4_000))).toBe('4/10 attempts (40%) · 2.0/s · ETA 3s · pass 50.0% · harness errors 1 · workers w1:2 w2:2')
  })
  it('prints plain lines at each 10% of the planned attempts and at the end', () => {
    expect(crossedMilestone(0, 1, 100)).toBe(false)
    expect(crossedMilestone(9, 10, 100)).toBe(true)
    expect(crossedMilestone(10, 11, 100)).toBe(false)
    expect(crossedMilestone(2, 3, 3)).toBe(true)
    expect(crossedMilestone(0, 1, 3)).toBe(true)
  })
})

describe('log options', () => {
  it('parses the flags and refuses bad values naming the flag and value', () => {
    expect(parseLogOptions({ 'log-level': 'calls', 'log-only': 'tools, faults', 'log-format': 'jsonl' })).toEqual({
      filter: { level: 'calls', only: ['tools', 'faults'], exclude: [] },
      format: 'jsonl',
    })
    expect(parseLogOptions({})).toEqual({ filter: { level: 'progress', only: [], exclude: [] }, format: 'pretty' })
    expect(() => parseLogOptions({ 'log-only': 'tools,network' })).toThrow('--log-only: unknown category "network" (known: tools, model, grading, faults, scheduler, cost)')
    expect(() => parseLogOptions({ 'log-exclude': ',' })).toThrow('--log-exclude names no category')
    expect(() => parseLogOptions({ 'log-only': 'tools', 'log-exclude': 'tools,cost' })).toThrow('--log-only and --log-exclude both name tools')
    expect(() => parseLogOptions({ 'log-level': 'verbose' })).toThrow('--log-level must be one of silent, progress, steps, calls, trace, got "verbose"')
  })

  it('prints run events at progress, nothing when silent, and sends them to stderr under --json', () => {
    const run = (level: LogFilter['level'], json: boolean) => {
      const out: string[] = []
      const err: string[] = []
      const output = runOutput({ filter: filter(level), format: 'pretty' }, { out: (l) => out.push(l), err: { write: (s: string) => err.push(s) } as unknown as NodeJS.WritableStream, json, tty: false }, (e) =>
        e.kind === 'task-done' ? `  [${e.done_tasks}/${e.total_tasks}] ${e.task_id}: ${e.k}/${e.n} passed` : e.kind,
      )
      output.onEvent({ kind: 'task-done', task_id: 'add', k: 2, n: 3, done_tasks: 1, total_tasks: 2 })
      return { out, err }
    }
    expect(run('progress', false)).toEqual({ out: ['  [1/2] add: 2/3 passed'], err: [] })
    expect(run('silent', false)).toEqual({ out: [], err: [] })
    expect(run('progress', true)).toEqual({ out: [], err: ['  [1/2] add: 2/3 passed\n'] })
  })
})
