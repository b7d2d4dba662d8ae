import { afterAll, describe, expect, it } from 'vitest'
import type { AgentAdapter, InvariantFn, LoadedSuite } from '../../core/plugins.js'
import type { Task } from '../../core/contracts/index.js'
import { LIMITS, executeAttempt, runAttempt, truncateText } from '../../engine/attempt-runner.js'
import { fakeSuite, fakeTask, fakeTool } from './fake-suite.js'
import { loadSuite } from '../../engine/suite-loader.js'
import { makeSuite, removeTempSuites } from '../suites/temp-suite.js'

function ticking(start = 1_700_000_000_000): () => number {
  let t = start
  return () => (t += 1)
}

function options(adapter: AgentAdapter, suite: LoadedSuite = fakeSuite(), task: Task = suite.tasks[0] as Task) {
  return { suite, task, adapter, runId: 'run1', configId: 'c0', attempt: 2, runSeed: 'rs', adapterConfig: {}, workerId: 'worker-a', now: ticking() }
}

const solver: AgentAdapter = {
  name: 'solver',
  async invoke(payload, ctx) {
    const step = await ctx.tools.call('upper', { value: payload.input['value'] })
    return { output: step.ok ? step.result : null, usage: { input_tokens: 10, output_tokens: 3 }, self_report: 'upper-cased it' }
  },
}

describe('executeAttempt', () => {
  it('runs, grades and reports a passing attempt', async () => {
    const result = await executeAttempt(options(solver))
    expect(result).toEqual({
      attempt_uid: 'run1/c0/task_one/2',
      run_id: 'run1',
      config_id: 'c0',
      suite: 'fake',
      task_id: 'task_one',
      attempt: 2,
      adapter: 'solver',
      outcome: 'pass',
      validity: 'valid',
      failure_bucket: null,
      budget_limit: null,
      grades: [{ grader: 'exact', passed: true, score: 1, detail: 'matched "ABC"' }],
      invariants: [],
      instruction: 'Do the thing.',
      output: 'ABC',
      self_report: 'upper-cased it',
      error: '',
      cost_usd: null,
      latency_ms: 3,
      tool_call_count: 1,
      input_tokens: 10,
      output_tokens: 3,
      model: 'solver',
      decoding: {},
      price_table_version: '',
      seed: expect.stringMatching(/^\d+$/),
      worker_id: 'worker-a',
      started_at: 1_700_000_000_001,
      finished_at: 1_700_000_000_007,
      tool_calls: [{ index: 0, name: 'upper', args: { value: 'abc' }, result: 'ABC', retry_index: 0, started_ms: 2, duration_ms: 1 }],
    })
  })

  it('derives the seed from the run seed and the attempt uid', async () => {
    const a = await executeAttempt(options(solver))
    const b = await executeAttempt({ ...options(solver), runSeed: 'other' })
    const c = await executeAttempt({ ...options(solver), attempt: 3 })
    expect(a.seed).not.toBe(b.seed)
    expect(a.seed).not.toBe(c.seed)
    expect((await executeAttempt(options(solver))).seed).toBe(a.seed)
  })

  it('records an adapter crash as a harness error of the attempt, keeping its tool calls', async () => {
    const crashing: AgentAdapter = {
      name: 'crashing',
      async invoke(_payload, ctx) {
        await ctx.tools.call('upper', { value: 'x' })
        throw new Error('segfault in the agent')
      },
    }
    const result = await executeAttempt(options(crashing))
    expect([result.outcome, result.validity, result.failure_bucket]).toEqual(['fail', 'invalid', 'harness_error'])
    expect(result.error).toBe('adapter "crashing" threw: segfault in the agent')
    expect(result.grades).toEqual([])
    expect(result.tool_calls.map((c) => c.name)).toEqual(['upper'])
  })

  it('treats an adapter output that is not a trace as a harness error', async () => {
    const liar: AgentAdapter = { name: 'liar', invoke: async () => ({ output: 'ABC', usage: { input_tokens: -5, output_tokens: 1 } }) }
    const result = await executeAttempt(options(liar))
    expect([result.outcome, result.failure_bucket]).toEqual(['fail', 'harness_error'])
    expect(result.error).toMatch(/^adapter "liar" returned an invalid trace: usage\.input_tokens: /)
  })

  it('stops an agent at the deadline and does not wait for one that ignores it', async () => {
    let callsAfterDeadline: unknown
    const stubborn: AgentAdapter = {
      name: 'stubborn',
      async invoke(_payload, ctx) {
        await new Promise((resolve) => setTimeout(resolve, 80))
        callsAfterDeadline = await ctx.tools.call('upper', { value: 'late' })
        return new Promise(() => {}) // never returns
      },
    }
    const task = fakeTask({ budget: { max_duration_ms: 30 } })
    const started = Date.now()
    const result = await executeAttempt({ ...options(stubborn, fakeSuite({ tasks: [task] }), task), now: Date.now, graceMs: 100 })
    expect(Date.now() - started).toBeLessThan(5_000)
    expect([result.outcome, result.validity, result.failure_bucket, result.budget_limit]).toEqual(['fail', 'valid', 'budget_exhausted', 'max_duration_ms'])
    expect(callsAfterDeadline).toEqual({ ok: false, error: 'budget exhausted (max_duration_ms): no more tool calls' })
    expect(result.tool_calls.map((c) => c.refused)).toEqual(['budget_exhausted'])
  })

  it('keeps what an agent that honours the abort hands back', async () => {
    const polite: AgentAdapter = {
      name: 'polite',
      invoke: (_payload, ctx) =>
        new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve({ output: 'partial', self_report: 'stopped early' }))),
    }
    const task = fakeTask({ budget: { max_duration_ms: 20 } })
    const result = await executeAttempt({ ...options(polite, fakeSuite({ tasks: [task] }), task), now: Date.now })
    expect([result.output, result.self_report, result.budget_limit, result.failure_bucket]).toEqual(['partial', 'stopped early', 'max_duration_ms', 'budget_exhausted'])
  })

  it('flags token use over max_tokens', async () => {
    const task = fakeTask({ budget: { max_tokens: 12 } })
    const result = await executeAttempt(options(solver, fakeSuite({ tasks: [task] }), task))
    // a right answer over the token budget is not a pass: the budget was overrun (issue 12)
    expect([result.outcome, result.validity, result.failure_bucket, result.budget_limit]).toEqual(['fail', 'valid', 'budget_exhausted', 'max_tokens'])
  })

  it('turns a broken invariant into a violation and a throwing one into a harness error', async () => {
    const invariants: Record<string, InvariantFn> = {
      never_upper: (trace) => ({ passed: !trace.tool_calls.some((c) => c.name === 'upper'), detail: 'upper was called' }),
      broken: () => {
        throw new Error('bug in the suite')
      },
    }
    const violated = fakeTask({ invariants: ['never_upper'] })
    const v = await executeAttempt(options(solver, fakeSuite({ tasks: [violated], invariants }), violated))
    expect([v.outcome, v.failure_bucket, v.invariants]).toEqual(['violation', null, [{ name: 'never_upper', passed: false, detail: 'upper was called' }]])

    const broken = fakeTask({ invariants: ['broken'] })
    const b = await executeAttempt(options(solver, fakeSuite({ tasks: [broken], invariants }), broken))
    expect([b.outcome, b.validity, b.failure_bucket, b.error]).toEqual(['fail', 'invalid', 'harness_error', 'invariant "broken" threw: bug in the suite'])
  })

  it('turns a grader that cannot run into a harness error, not an agent failure', async () => {
    const task = fakeTask({ outcome_graders: [{ type: 'exact' }] })
    const result = await executeAttempt(options(solver, fakeSuite({ tasks: [task] }), task))
    expect([result.outcome, result.validity, result.failure_bucket]).toEqual(['fail', 'invalid', 'harness_error'])
    expect(result.error).toMatch(/^grading failed: /)
  })

  it('truncates a huge output and huge tool arguments and results, grading the full output', async () => {
    const huge = 'é'.repeat(50_000)
    const verbose: AgentAdapter = {
      name: 'verbose',
      async invoke(_payload, ctx) {
        const step = await ctx.tools.call('echo', { value: huge })
        return { output: step.ok ? step.result : null }
      },
    }
    const task = fakeTask({ tools: ['echo'], outcome_graders: [{ type: 'contains', expected: 'éééé' }, { type: 'regex', pattern: 'é$' }] })
    const suite = fakeSuite({ tasks: [task], tools: [fakeTool('echo', (args) => args['value'])] })
    const { result, trace } = await runAttempt(options(verbose, suite, task))
    expect(result.outcome).toBe('pass')
    expect(trace.output).toBe(huge)
    expect(Buffer.byteLength(result.output)).toBeLessThanOrEqual(LIMITS.outputBytes)
    expect(result.output).toMatch(/^é+…\[truncated 100000 bytes\]$/)
    expect(Buffer.byteLength(JSON.stringify(result.tool_calls[0]))).toBeLessThanOrEqual(4 * 1024)
  })

  it('records spans: the attempt, the agent, each tool call and grading', async () => {
    const { trace } = await runAttempt(options(solver))
    expect(trace.spans.map((s) => [s.span_id, s.parent_span_id, s.category])).toEqual([
      ['attempt', null, 'attempt'],
      ['agent', 'attempt', 'agent'],
      ['tool-0', 'agent', 'tool'],
      ['grading', 'attempt', 'grading'],
    ])
  })
})

describe('truncateText', () => {
  it('keeps short text and cuts long text on a character boundary', () => {
    expect(truncateText('short', 10)).toBe('short')
    const cut = truncateText('ab€€€€€€€€€€', 30)
    expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(30)
    expect(cut).toBe('ab€…[truncated 32 bytes]')
  })
})

describe("a suite's catastrophic pattern on an agent's text", () => {
  afterAll(() => removeTempSuites())
  it('is refused at load when it nests a repetition, naming the file and field', async () => {
    const dir = makeSuite({ 'tasks/beta.yaml': 'id: beta\ninstruction: Shout.\ninput: {}\ntools: [shout]\ngraders:\n  - type: regex\n    pattern: "^(a+)+$"\n' })
    await expect(loadSuite(dir)).rejects.toThrow(/tasks\/beta\.yaml.*pattern repeats a group that itself repeats \("\(a\+\)\+"\)/s)
  })

  it('finishes: a regex grader falls back to the linear engine instead of backtracking for hours', async () => {
    // suite validation refuses nested repetition (^(a+)+$); overlapping alternatives under a repetition
    // pass it, and ^(a|aa)+$ on sixty a's and a b takes V8's default engine ~1.6^60 steps
    const evil = `${'a'.repeat(60)}b`
    const task = fakeTask({ outcome_graders: [{ type: 'regex', pattern: '^(a|aa)+$' }, { type: 'regex', pattern: '^(?:a|aa)+$', flags: 'm' }] })
    const agent: AgentAdapter = { name: 'evil', invoke: async () => ({ output: evil }) }
    const result = await executeAttempt(options(agent, fakeSuite({ tasks: [task] }), task))
    expect([result.outcome, result.grades.map((g) => [g.grader, g.passed])]).toEqual(['fail', [['regex', false], ['regex', false]]])
  }, 60_000)
})
