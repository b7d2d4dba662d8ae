import { describe, expect, it } from 'vitest'
import { compareRuns, DEFAULT_THRESHOLDS, metricChanges, toolUsageTests, type CompareSide, type RunStamps, type ToolSequenceCount } from '../../core/compare.js'
import { benjaminiHochberg, compareProportions } from '../../core/hypothesis.js'
import { aggregateAttempts, suiteFigures, type AttemptMeasurement } from '../../core/report.js'

const stamps: RunStamps = { price_table_version: 'v1', price_table_date: '2026-11-30', suite_hash: 'a'.repeat(64), judge_model: '', judge_prompt_version: '' }

/** k passes out of n for each task, with a per-attempt cost and latency */
function side(
  runId: string,
  counts: Record<string, [number, number]>,
  opts: { suite?: string; cost?: number; latency?: number; sequences?: ToolSequenceCount[]; stamps?: Partial<RunStamps> } = {},
): CompareSide {
  const attempts: AttemptMeasurement[] = Object.entries(counts).flatMap(([task, [k, n]]) =>
    Array.from({ length: n }, (_, i) => ({
      suite: opts.suite ?? 'smoke',
      task_id: task,
      outcome: i < k ? 'pass' : 'fail',
      latency_ms: opts.latency ?? 100,
      tool_call_count: 2,
      input_tokens: 100,
      output_tokens: 10,
      cost_usd: opts.cost ?? 0.001,
    })),
  )
  const { tasks, suites } = aggregateAttempts(attempts)
  return { run_id: runId, suites: suiteFigures(tasks, suites), tool_sequences: opts.sequences ?? [], stamps: { ...stamps, ...opts.stamps } }
}

describe('compareRuns', () => {
  const a = side('A', { dropped: [38, 40], improved: [10, 40], same: [36, 40], small_drop: [36, 40], tiny: [3, 3] })
  const b = side('B', { dropped: [20, 40], improved: [30, 40], same: [35, 40], small_drop: [33, 40], tiny: [1, 3] })
  const result = compareRuns(a, b)

  it('flags only tasks significant after Benjamini–Hochberg whose rate dropped', () => {
    const tasks = result.suites[0]!.tasks
    expect(tasks.map((t) => [t.task_id, t.regressed, t.improved])).toEqual([
      ['dropped', true, false],
      ['improved', false, true],
      ['same', false, false],
      ['small_drop', false, false],
      ['tiny', false, false],
    ])
    expect(result.findings).toEqual({ success: 1, tool_usage: 0, cost: 0, latency: 0, tool_calls: 0 })
    expect(result.regression).toBe(true)
  })

  it('uses the per-task test and BH-adjusts across the tasks of the comparison', () => {
    const tasks = result.suites[0]!.tasks
    const expected = [
      compareProportions(38, 40, 20, 40),
      compareProportions(10, 40, 30, 40),
      compareProportions(36, 40, 35, 40),
      compareProportions(36, 40, 33, 40),
      compareProportions(3, 3, 1, 3),
    ]
    expect(tasks.map((t) => ({ test: t.test, p: t.p }))).toEqual(expected.map((e) => ({ test: e.test, p: e.p })))
    expect(tasks.map((t) => t.q)).toEqual(benjaminiHochberg(expected.map((e) => e.p)))
    // 3/3 → 1/3 has expected cells below 5: Fisher, and far from significant
    expect(tasks[4]).toMatchObject({ test: 'fisher exact', delta: expect.closeTo(-2 / 3, 12) })
    expect(tasks[0]).toMatchObject({ a: { k: 38, n: 40 }, b: { k: 20, n: 40 }, delta: expect.closeTo(-0.45, 12) })
  })

  it('reports the suite rates as unweighted means and warns about nothing when the stamps match', () => {
    expect(result.suites[0]!.a.tasks).toBe(5)
    expect(result.warnings).toEqual([])
  })

  it('does not flag identical runs', () => {
    const same = compareRuns(a, side('A2', { dropped: [38, 40], improved: [10, 40], same: [36, 40], small_drop: [36, 40], tiny: [3, 3] }))
    expect({ regression: same.regression, findings: same.findings }).toEqual({
      regression: false,
      findings: { success: 0, tool_usage: 0, cost: 0, latency: 0, tool_calls: 0 },
    })
  })

  it('never pools suites: suites in one run only are listed, not compared', () => {
    const other = compareRuns(side('A', { t: [5, 10] }), side('B', { x: [5, 10] }, { suite: 'toy_math' }))
    expect({ suites: other.suites, only_a: other.suites_only_in_a, only_b: other.suites_only_in_b }).toEqual({
      suites: [],
      only_a: ['smoke'],
      only_b: ['toy_math'],
    })
    expect(other.warnings).toContain('the runs share no suite: nothing was compared (suites are never pooled)')
  })

  it('lists tasks present in one run only', () => {
    const partial = compareRuns(side('A', { t1: [5, 10], t2: [5, 10] }), side('B', { t1: [5, 10], t3: [5, 10] }))
    expect(partial.suites[0]).toMatchObject({ only_in_a: ['t2'], only_in_b: ['t3'] })
    expect(partial.suites[0]!.tasks.map((t) => t.task_id)).toEqual(['t1'])
  })

  it('warns when suite content, price table or judge differ', () => {
    const changed = compareRuns(
      side('A', { t: [5, 10] }),
      side('B', { t: [5, 10] }, { stamps: { suite_hash: 'b'.repeat(64), price_table_version: 'v2', price_table_date: '2026-12-31', judge_model: 'gpt-4o' } }),
    )
    expect(changed.warnings).toEqual([
      'suite content differs (aaaaaaaaaaaa vs bbbbbbbbbbbb): tasks, graders or tools may have changed between the runs',
      'judge model is not recorded for run A: judge-graded outcomes may not be comparable',
      'price table differs (v1 (2026-11-30) vs v2 (2026-12-31)): cost differences may come from prices, not from the agent',
    ])
  })

  it('flags cost, latency and tool calls that grew beyond their deltas, per task and per suite', () => {
    const costly = compareRuns(side('A', { t: [5, 10] }, { cost: 0.001, latency: 100 }), side('B', { t: [5, 10] }, { cost: 0.0013, latency: 200 }))
    const task = costly.suites[0]!.tasks[0]!
    expect(task.metrics.filter((m) => m.flagged).map((m) => m.metric)).toEqual(['cost_per_attempt_usd', 'latency_p50_ms', 'latency_p90_ms'])
    expect(costly.findings).toEqual({ success: 0, tool_usage: 0, cost: 2, latency: 4, tool_calls: 0 })
    // +10% cost is inside the default +20%
    const cheap = compareRuns(side('A', { t: [5, 10] }, { cost: 0.001 }), side('B', { t: [5, 10] }, { cost: 0.0011 }))
    expect(cheap.regression).toBe(false)
  })
})

describe('metricChanges', () => {
  const m = (p50: number | null, calls: number | null, cost: number | null) => ({
    latency_ms: p50 === null ? null : { p50, p90: p50 },
    tool_calls_per_attempt: calls,
    cost: { per_attempt_usd: cost },
  })
  it('needs both the relative and the absolute delta, and ignores unavailable figures', () => {
    const changes = metricChanges(m(10, 1, null), m(30, 1.4, 0.5), DEFAULT_THRESHOLDS)
    expect(changes).toEqual([
      { metric: 'cost_per_attempt_usd', a: null, b: 0.5, relative: null, flagged: false },
      // +200% but only +20 ms (< 50 ms)
      { metric: 'latency_p50_ms', a: 10, b: 30, relative: 2, flagged: false },
      { metric: 'latency_p90_ms', a: 10, b: 30, relative: 2, flagged: false },
      // +40% but only +0.4 calls (< 0.5)
      { metric: 'tool_calls_per_attempt', a: 1, b: 1.4, relative: expect.closeTo(0.4, 12), flagged: false },
    ])
    expect(metricChanges(m(100, 2, 0), m(100, 2, 0.01), DEFAULT_THRESHOLDS)[0]).toEqual({
      metric: 'cost_per_attempt_usd',
      a: 0,
      b: 0.01,
      relative: null,
      flagged: true,
    })
  })
})

describe('toolUsageTests', () => {
  it("tests each tool's share of attempts and the share following the baseline's usual order", () => {
    const a = [{ sequence: ['kv_get', 'echo'], n: 40 }]
    const b = [
      { sequence: ['kv_get', 'echo'], n: 15 },
      { sequence: ['echo', 'kv_get'], n: 10 },
      { sequence: ['search'], n: 15 },
    ]
    const features = toolUsageTests(a, b)
    expect(features.map((f) => [f.kind, f.feature, f.a, f.b])).toEqual([
      ['uses_tool', 'echo', { k: 40, n: 40 }, { k: 25, n: 40 }],
      ['uses_tool', 'kv_get', { k: 40, n: 40 }, { k: 25, n: 40 }],
      ['uses_tool', 'search', { k: 0, n: 40 }, { k: 15, n: 40 }],
      ['usual_sequence', 'kv_get > echo', { k: 40, n: 40 }, { k: 15, n: 40 }],
    ])
    expect(features.every((f) => f.p < 0.001)).toBe(true)
  })

  it('counts attempts without tool calls and flags changed usage through BH in compareRuns', () => {
    const seqA: ToolSequenceCount[] = [{ task_id: 't', sequence: ['kv_get'], n: 40 }]
    const seqB: ToolSequenceCount[] = [{ task_id: 't', sequence: ['kv_get'], n: 10 }]
    const result = compareRuns(side('A', { t: [30, 40] }, { sequences: seqA }), side('B', { t: [30, 40] }, { sequences: seqB }))
    const task = result.suites[0]!.tasks[0]!
    // 30 attempts of B called nothing: kv_get's share fell from 40/40 to 10/40
    expect(task.tool_usage.map((f) => [f.kind, f.feature, f.b, f.flagged])).toEqual([
      ['uses_tool', 'kv_get', { k: 10, n: 40 }, true],
      ['usual_sequence', 'kv_get', { k: 10, n: 40 }, true],
    ])
    expect({ changed: task.tool_usage_changed, regressed: task.regressed, findings: result.findings.tool_usage }).toEqual({
      changed: true,
      regressed: false,
      findings: 1,
    })
  })
})
