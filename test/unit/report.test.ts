import { describe, expect, it } from 'vitest'
import { aggregateAttempts, suiteFigures, taskFigures, type AttemptMeasurement } from '../../core/report.js'

const attempt = (task_id: string, outcome: string, latency_ms: number, cost_usd: number | null, suite = 'smoke'): AttemptMeasurement => ({
  suite,
  task_id,
  outcome,
  latency_ms,
  tool_call_count: outcome === 'pass' ? 2 : 5,
  input_tokens: 100,
  output_tokens: 10,
  cost_usd,
})

describe('aggregateAttempts', () => {
  it('sums per task and per suite, with type-7 latency percentiles', () => {
    const { tasks, suites } = aggregateAttempts([
      attempt('b', 'pass', 10, 0.01),
      attempt('a', 'pass', 20, 0.02),
      attempt('a', 'fail', 40, 0.04),
      attempt('a', 'pass', 30, 0.03),
    ])
    expect(tasks).toEqual([
      { suite: 'smoke', task_id: 'a', n: 3, k: 2, latency_ms: { p50: 30, p90: 38, p99: expect.closeTo(39.8, 10) }, tool_calls: 9, input_tokens: 300, output_tokens: 30, priced: 3, cost_usd: expect.closeTo(0.09, 12) },
      { suite: 'smoke', task_id: 'b', n: 1, k: 1, latency_ms: { p50: 10, p90: 10, p99: 10 }, tool_calls: 2, input_tokens: 100, output_tokens: 10, priced: 1, cost_usd: 0.01 },
    ])
    expect(suites).toEqual([
      { suite: 'smoke', n: 4, k: 3, latency_ms: { p50: 25, p90: 37, p99: expect.closeTo(39.7, 10) }, tool_calls: 11, input_tokens: 400, output_tokens: 40, priced: 4, cost_usd: expect.closeTo(0.1, 12) },
    ])
  })
})

describe('taskFigures', () => {
  it('carries k, n, the Wilson interval, pass@k / pass^k, consistency and per-attempt figures', () => {
    const [a] = aggregateAttempts([attempt('a', 'pass', 20, 0.02), attempt('a', 'fail', 40, 0.04), attempt('a', 'pass', 30, 0.03)]).tasks
    const figures = taskFigures(a!, [1, 2, 5])
    expect(figures).toMatchObject({ suite: 'smoke', task_id: 'a', k: 2, n: 3, rate: 2 / 3, consistency: 1 / 3 })
    expect(figures.pass_k).toEqual([
      { k: 1, pass_at_k: 2 / 3, pass_hat_k: 2 / 3 },
      { k: 2, pass_at_k: 1, pass_hat_k: 1 / 3 },
      { k: 5, pass_at_k: null, pass_hat_k: null },
    ])
    expect(figures.tool_calls_per_attempt).toBe(3)
    expect(figures.cost.per_attempt_usd).toBeCloseTo(0.03, 15)
    // cost per success = total cost / successes
    expect(figures.cost.per_success_usd).toBeCloseTo(0.045, 15)
  })
  it('reports cost as unavailable (null), never zero, when any attempt has no price', () => {
    const [a] = aggregateAttempts([attempt('a', 'pass', 20, 0.02), attempt('a', 'pass', 30, null)]).tasks
    expect(taskFigures(a!).cost).toEqual({ priced: 1, total_usd: null, per_attempt_usd: null, per_success_usd: null })
  })
  it('prices a free model at zero and has no cost per success without successes', () => {
    const [a] = aggregateAttempts([attempt('a', 'fail', 20, 0), attempt('a', 'fail', 30, 0)]).tasks
    expect(taskFigures(a!).cost).toEqual({ priced: 2, total_usd: 0, per_attempt_usd: 0, per_success_usd: null })
  })
})

describe('suiteFigures', () => {
  it('keeps suites apart and takes the unweighted mean of task rates, never the pooled rate', () => {
    const attempts = [
      // smoke: task a 1/1, task b 1/4 → mean 0.625 (pooled would be 2/5)
      attempt('a', 'pass', 1, 0),
      ...['pass', 'fail', 'fail', 'fail'].map((o) => attempt('b', o, 1, 0)),
      // toy_math: one task 0/2
      attempt('x', 'fail', 1, 0, 'toy_math'),
      attempt('x', 'fail', 1, 0, 'toy_math'),
    ]
    const { tasks, suites } = aggregateAttempts(attempts)
    const figures = suiteFigures(tasks, suites, [1, 2])
    expect(figures.map((s) => ({ suite: s.suite, success: s.success, n: s.n, k: s.k, tasks: s.tasks.map((t) => t.task_id) }))).toEqual([
      { suite: 'smoke', success: { rate: 0.625, tasks: 2 }, n: 5, k: 2, tasks: ['a', 'b'] },
      { suite: 'toy_math', success: { rate: 0, tasks: 1 }, n: 2, k: 0, tasks: ['x'] },
    ])
    // pass@2 is defined for b (n = 4) only; a has n = 1 < 2
    expect(figures[0]!.pass_k).toEqual([
      { k: 1, pass_at_k: 0.625, pass_hat_k: 0.625, tasks: 2 },
      { k: 2, pass_at_k: 0.5, pass_hat_k: 0, tasks: 1 },
    ])
    // consistency of b: [C(1,2) + C(3,2)] / C(4,2) = 3/6; a has n < 2
    expect(figures[0]!.consistency).toBe(0.5)
  })
})
