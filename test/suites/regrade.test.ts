/** Regrading one stored attempt with the current graders: no agent runs; what cannot be regraded is said, not guessed. */
import { describe, expect, it } from 'vitest'
import { AgentTrace, StoredTrace } from '../../core/contracts/index.js'
import type { EnvironmentView } from '../../core/env-diff.js'
import { regradeOne } from '../../app/regrade.js'
import { fakeSuite, fakeTask } from '../unit/fake-suite.js'

const trace = AgentTrace.parse({
  output: 'ABC!',
  duration_ms: 3,
  self_report: 'perfect',
  tool_calls: [{ index: 0, name: 'upper', args: { value: 'abc' }, result: 'ABC', retry_index: 0, started_ms: 0, duration_ms: 1 }],
})
const stored = (fields: Partial<StoredTrace> = {}): StoredTrace =>
  StoredTrace.parse({
    attempt_uid: 'run1/c0/task_one/0',
    run_id: 'run1',
    config_id: 'c0',
    suite: 'fake',
    task_id: 'task_one',
    attempt: 0,
    outcome: 'pass',
    validity: 'valid',
    failure_bucket: null,
    grades: [{ grader: 'contains', passed: true, score: 1, detail: '' }],
    invariants: [],
    trace,
    stored_at: 1,
    ...fields,
  })

describe('regradeOne', () => {
  it('grades the stored trace with the suite as it is now, into the given version, with metrics and a judgement', async () => {
    // the task's grader got stricter since the run: exact instead of contains
    const suite = fakeSuite({ tasks: [fakeTask({ outcome_graders: [{ type: 'exact', expected: 'ABC' }] })] })
    const graded = await regradeOne(suite, stored(), 2, 99, {})
    expect('regrade' in graded).toBe(true)
    if (!('regrade' in graded)) return
    expect(graded.regrade).toMatchObject({
      attempt_uid: 'run1/c0/task_one/0',
      grading_version: 2,
      outcome: 'fail',
      validity: 'valid',
      failure_bucket: 'wrong_answer',
      grades: [{ grader: 'exact', passed: false, score: 0 }],
      error: '',
      regraded_at: 99,
      judgement: { grading_version: 2, tier0_failed: true, needs_human_review: true, review_reasons: ['failed_without_golden'] },
    })
    expect(graded.regrade.metrics).toHaveLength(18)
  })

  it('carries a previous tier-2 localization over while the attempt still fails', async () => {
    const suite = fakeSuite({ tasks: [fakeTask({ golden: 'task_one' })], goldens: { task_one: trace } })
    const previous = { status: 'localized' as const, divergence_step: 1, decision: 'd', explanation: 'e', confidence: 0.9, low_confidence: false, calls: 1, error: '', judge: null }
    const graded = await regradeOne(suite, stored(), 3, 1, {}, previous)
    expect('regrade' in graded && graded.regrade.judgement).toMatchObject({ tier2: previous, needs_human_review: false })
    const without = await regradeOne(suite, stored(), 3, 1, {})
    expect('regrade' in without && without.regrade.judgement).toMatchObject({ tier2: { status: 'not_run' }, needs_human_review: true, review_reasons: ['golden_divergence_not_run'] })
  })

  it('says why an attempt cannot be regraded: a removed task, an original harness error, a missing environment view or query', async () => {
    expect(await regradeOne(fakeSuite({ tasks: [fakeTask({ id: 'other' })] }), stored(), 2, 1, {})).toEqual({ reason: 'suite fake no longer has task "task_one"' })
    expect(await regradeOne(fakeSuite(), stored({ outcome: 'fail', validity: 'invalid', failure_bucket: 'harness_error', grades: [] }), 2, 1, {})).toEqual({
      reason: 'the original attempt was a harness error: the agent left nothing graded to grade again',
    })
    const fileTask = fakeTask({ outcome_graders: [{ type: 'file', path: 'out.txt', exists: true }], fixtures: [{ kind: 'workspace', from: 'ws' }] })
    expect(await regradeOne(fakeSuite({ tasks: [fileTask] }), stored({ truncated: ['env'] }), 2, 1, {})).toEqual({
      reason: "the task's graders read its environment, but the stored trace has no environment view (cut to fit the message limit)",
    })
    const sqlTask = fakeTask({ outcome_graders: [{ type: 'sql', query: 'SELECT count(*) AS n FROM t', count: 1 }], fixtures: [{ kind: 'sqlite', sql: 'seed.sql' }] })
    const env: EnvironmentView = { start: {}, end: {}, diff: [], queries: {} }
    const missing = await regradeOne(fakeSuite({ tasks: [sqlTask] }), stored({ env }), 2, 1, {})
    expect(missing).toEqual({ reason: expect.stringMatching(/^the graders ask 1 query\(ies\) that were not run against the end state, which is gone: db: SELECT count/) })
  })
})
