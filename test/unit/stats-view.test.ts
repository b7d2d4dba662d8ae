import { describe, expect, it } from 'vitest'
import type { RunStats } from '../../app/stats.js'
import { printRunStats } from '../../cli/stats-view.js'
import { aggregateAttempts, suiteFigures, type AttemptMeasurement } from '../../core/report.js'
import { suiteValidityRates, validityRates } from '../../core/validity.js'

const attempt = (task_id: string, outcome: string): AttemptMeasurement => ({
  suite: 'smoke',
  task_id,
  outcome,
  latency_ms: 10,
  tool_call_count: 1,
  input_tokens: 100,
  output_tokens: 10,
  cost_usd: 0,
})

/** A run of task `few` (3 attempts, 2 pass) and task `many` (6 attempts, 3 pass), figured for `ks`. */
function runStats(ks: number[]): RunStats {
  const attempts = [
    ...['pass', 'pass', 'fail'].map((o) => attempt('few', o)),
    ...['pass', 'fail', 'pass', 'fail', 'pass', 'fail'].map((o) => attempt('many', o)),
  ]
  const aggregates = aggregateAttempts(attempts)
  const [suite] = suiteFigures(aggregates.tasks, aggregates.suites, ks)
  const counts = [
    { task_id: 'few', outcome: 'pass', validity: 'valid', n: 2 },
    { task_id: 'few', outcome: 'fail', validity: 'valid', n: 1 },
    { task_id: 'many', outcome: 'pass', validity: 'valid', n: 3 },
    { task_id: 'many', outcome: 'fail', validity: 'valid', n: 3 },
  ]
  const rates = validityRates(counts)
  const { tasks, ...suiteOnly } = suite!
  return {
    run: undefined,
    run_id: 'r1',
    notice: null,
    attempts: 9,
    tasks: tasks.map((t) => ({ ...t, outcomes: {}, failure_buckets: {}, stopped_early: false, validity_rates: rates.get(t.task_id)! })),
    suites: [{ ...suiteOnly, validity_rates: suiteValidityRates([...rates.values()]) }],
    suite_rate: suite!.success.rate,
    outcomes: { pass: 5, fail: 4 },
    failure_buckets: {},
    validity: { valid: 9 },
    stamps: { price_table_version: '', price_table_date: '', suite_hash: '', judge_model: '', judge_prompt_version: '' },
    ks,
  }
}

function print(stats: RunStats, options?: Parameters<typeof printRunStats>[2]): string[] {
  const lines: string[] = []
  printRunStats((line) => lines.push(...line.split('\n')), stats, options)
  return lines
}

describe('printRunStats', () => {
  it('shows every requested k, k = 1 included, and says n/a (k > n) where a task has too few attempts', () => {
    const lines = print(runStats([1, 5]), { ks: [1, 5] })
    const header = lines.find((l) => l.startsWith('task ') && l.includes('k/n'))
    expect(header?.split(/\s{2,}/)).toEqual([
      'task',
      'k/n',
      'success',
      'wilson 95%',
      'valid k/n',
      'valid rate',
      'pass@1',
      'pass^1',
      'pass@5',
      'pass^5',
      'consistency',
      'failure buckets',
    ])
    const few = lines.find((l) => l.startsWith('few '))!.split(/\s{2,}/)
    const many = lines.find((l) => l.startsWith('many '))!.split(/\s{2,}/)
    expect(few.slice(6, 10)).toEqual(['66.7%', '66.7%', 'n/a (k > n)', 'n/a (k > n)'])
    expect(many.slice(6, 10)).toEqual(['50.0%', '50.0%', '100.0%', '0.0%'])
    expect(lines).toContain(
      'pass@1 58.3%, pass^1 58.3%; pass@5 100.0%, pass^5 0.0% (over the 1 of 2 tasks with k ≤ n); consistency 0.37 (chance two attempts of a task agree)',
    )
  })

  it('says n/a (k > n) for the suite when no task has k attempts', () => {
    const lines = print(runStats([10]), { ks: [10] })
    expect(lines.find((l) => l.startsWith('pass@10'))).toBe('pass@10 n/a (k > n); consistency 0.37 (chance two attempts of a task agree)')
  })

  it('says first, before anything else, when the statistics cover less than the whole run (issue 12)', () => {
    const notice = 'INCOMPLETE: stored 145/200; missing: echo#3, echo#7 (and 53 more)'
    expect(print({ ...runStats([1]), notice })[0]).toBe(notice)
    expect(print(runStats([1]))[0]).toBe('run r1')
  })

  it('leaves pass@1 out of the default report: it is the success rate', () => {
    const header = print(runStats([1, 3, 5])).find((l) => l.startsWith('task ') && l.includes('k/n'))
    expect(header).toMatch(/valid rate\s+pass@3\s+pass\^3\s+pass@5\s+pass\^5\s+consistency/)
  })
})
