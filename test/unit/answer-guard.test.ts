import { describe, expect, it } from 'vitest'
import { expectedAnswersOf, guardToolArgs } from '../../core/answer-guard.js'
import { AgentTrace } from '../../core/contracts/index.js'
import { fakeTask } from './fake-suite.js'

describe('expectedAnswersOf', () => {
  it("collects graders' expected values and the golden output, leaving out what the task gives the agent and very short answers", () => {
    const task = fakeTask({
      instruction: 'Look up order ORD-7 and report its total.',
      input: { order: 'ORD-7' },
      outcome_graders: [
        { type: 'exact', expected: 'Total 1234.50' },
        { type: 'contains', expected: ['refund approved', 'ORD-7', 'ok'] },
        { type: 'numeric', expected: 1234.5 },
      ],
    })
    const golden = AgentTrace.parse({ output: 'Total 1234.50', duration_ms: 1 })
    expect(expectedAnswersOf(task, golden)).toEqual([
      { source: 'outcome_graders[0].expected', text: 'Total 1234.50' },
      { source: 'outcome_graders[1].expected[0]', text: 'refund approved' },
      { source: 'outcome_graders[2].expected', text: '1234.5' },
    ])
  })
})

describe('guardToolArgs', () => {
  const answers = [
    { source: 'outcome_graders[0].expected', text: 'Total 1234.50' },
    { source: 'outcome_graders[2].expected', text: '1234.5' },
  ]

  it('replaces every expected answer in strings and numbers, anywhere, case-insensitively, and names the sources', () => {
    expect(guardToolArgs({ to: 'x@example.com', body: ['fyi: TOTAL 1234.50 (approx 1234.5)'], amount: 1234.5, n: 3 }, answers)).toEqual({
      args: { to: 'x@example.com', body: ['fyi: [REDACTED:answer] (approx [REDACTED:answer])'], amount: '[REDACTED:answer]', n: 3 },
      intercepted: ['outcome_graders[0].expected', 'outcome_graders[2].expected'],
    })
  })

  it('passes clean arguments through unchanged', () => {
    const args = { query: 'orders of customer 7' }
    expect(guardToolArgs(args, answers)).toEqual({ args, intercepted: [] })
    expect(guardToolArgs(args, [])).toEqual({ args, intercepted: [] })
  })
})
