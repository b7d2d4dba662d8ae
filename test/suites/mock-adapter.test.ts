import { describe, expect, it } from 'vitest'
import type { AttemptResult } from '../../core/contracts/index.js'
import { getAdapter } from '../../engine/adapters/index.js'
import { MOCK_FAILURE_MODES, chooseMockBehaviour, parseMockConfig } from '../../engine/adapters/mock.js'
import { executeAttempt } from '../../engine/attempt-runner.js'
import { loadSuite } from '../../engine/suite-loader.js'

const smoke = await loadSuite('smoke')
const mock = getAdapter('mock')

function run(taskIndex: number, attempt: number, adapterConfig: Record<string, unknown> = {}, runSeed = 'seed-1'): Promise<AttemptResult> {
  const task = smoke.tasks[taskIndex % smoke.tasks.length]
  if (task === undefined) throw new Error('no task')
  return executeAttempt({ suite: smoke, task, adapter: mock, runId: 'r1', configId: 'c0', attempt, runSeed, adapterConfig, workerId: 'w1' })
}

/** the result without its timing fields */
function untimed(result: AttemptResult): unknown {
  const { started_at: _s, finished_at: _f, latency_ms: _l, ...rest } = result
  return { ...rest, tool_calls: rest.tool_calls.map(({ started_ms: _a, duration_ms: _b, ...call }) => call) }
}

describe('mock adapter', () => {
  it('is deterministic: the same attempt gives the same result except timing', async () => {
    for (let i = 0; i < 40; i += 1) {
      const [a, b] = await Promise.all([run(i, i), run(i, i)])
      expect(untimed(a as AttemptResult)).toEqual(untimed(b as AttemptResult))
    }
  })

  it('differs across attempts, and across run seeds', async () => {
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => run(0, i)))
    const distinct = new Set(results.map((r) => JSON.stringify({ ...(untimed(r) as object), attempt_uid: '', attempt: 0, seed: '' })))
    expect(distinct.size).toBeGreaterThan(20)
    const otherSeed = await Promise.all(Array.from({ length: 40 }, (_, i) => run(0, i, {}, 'seed-2')))
    expect(otherSeed.map((r) => r.seed)).not.toEqual(results.map((r) => r.seed))
  })

  it('over 200 attempts mostly passes and fails in several different ways', async () => {
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => run(i, Math.floor(i / smoke.tasks.length))))
    const passes = results.filter((r) => r.outcome === 'pass').length
    expect(passes / results.length).toBeGreaterThan(0.7)
    expect(passes / results.length).toBeLessThan(0.92)
    const buckets = new Set(results.map((r) => r.failure_bucket).filter((b) => b !== null))
    expect(buckets.size).toBeGreaterThanOrEqual(5)
    expect(results.some((r) => r.outcome === 'violation')).toBe(true)
    expect(results.every((r) => r.validity === 'valid' && r.error.startsWith('adapter') === false)).toBe(true)
    expect(results.every((r) => r.input_tokens > 0 && r.output_tokens > 0)).toBe(true)
  })

  it('produces each failure mode when asked, with the bucket a real agent would get', async () => {
    const observed: Record<string, unknown> = {}
    for (const mode of MOCK_FAILURE_MODES) {
      // reverse_shout: two string tools, no invariant about loops that would turn failures into violations
      const result = await run(3, 0, { skill: 0, failure_modes: { [mode]: 1 } })
      observed[mode] = [result.outcome, result.failure_bucket, result.budget_limit]
    }
    expect(observed).toEqual({
      wrong_answer: ['partial', 'wrong_answer', null],
      no_answer: ['partial', 'no_answer', null],
      refusal: ['fail', 'refusal', null],
      hallucinated_tool: ['fail', 'hallucinated_tool', null],
      malformed_call: ['fail', 'malformed_tool_call', null],
      retry_loop: ['fail', 'tool_error', 'max_retries_per_tool'],
      call_loop: ['violation', null, 'max_tool_calls'],
      tool_error: ['fail', 'tool_error', null],
    })
  })

  it('loops until the tool-call budget stops it', async () => {
    const result = await run(4, 0, { skill: 0, failure_modes: { call_loop: 1 } })
    expect(result.task_id).toBe('sum_two_numbers')
    expect([result.outcome, result.failure_bucket, result.budget_limit]).toEqual(['fail', 'budget_exhausted', 'max_tool_calls'])
    expect(result.tool_calls.filter((c) => c.refused === undefined)).toHaveLength(4)
    expect(result.tool_calls.at(-1)?.refused).toBe('budget_exhausted')
  })

  it('thinks step_delay_ms before each tool call (a latency-bound agent), and otherwise behaves the same', async () => {
    // reverse_shout, clean: reverse then uppercase
    const quick = await run(3, 0, { skill: 1 })
    const slow = await run(3, 0, { skill: 1, step_delay_ms: 60 })
    expect(untimed(slow)).toEqual(untimed(quick))
    expect(slow.tool_calls.map((c) => c.name)).toEqual(['reverse', 'uppercase'])
    // timers may fire a millisecond or two early; each call starts at least one think after the previous one
    const [first, second] = slow.tool_calls
    expect(first!.started_ms).toBeGreaterThanOrEqual(55)
    expect(second!.started_ms - (first!.started_ms + first!.duration_ms)).toBeGreaterThanOrEqual(55)
    expect(slow.latency_ms).toBeGreaterThanOrEqual(110)
    expect(() => parseMockConfig({ step_delay_ms: -5 })).toThrow('step_delay_ms')
  })

  it('honours per-task skill', () => {
    const config = parseMockConfig({ skill: 1, task_skill: { count_words: 0 } })
    for (let seed = 0; seed < 50; seed += 1) {
      expect(chooseMockBehaviour(seed, 'echo_greeting', config)).toBe('clean')
      expect(chooseMockBehaviour(seed, 'count_words', config)).not.toBe('clean')
    }
  })

  it('rejects a bad config naming the field, as a harness error of the attempt', async () => {
    expect(() => parseMockConfig({ skill: 2 })).toThrow(/invalid mock adapter config: skill: /)
    const result = await run(0, 0, { skill: 'high' })
    expect([result.outcome, result.validity, result.failure_bucket]).toEqual(['fail', 'invalid', 'harness_error'])
    expect(result.error).toMatch(/^adapter "mock" threw: invalid mock adapter config: skill: /)
  })
})
