/**
 * One grading pipeline: an attempt graded by the worker right after the agent stopped and the same
 * attempt regraded from its stored trace come out alike — verdict, grades, metrics and judgement —
 * whether its task has no golden, a golden the suite holds, or names one the suite does not hold.
 */
import { describe, expect, it } from 'vitest'
import { AgentTrace, JudgeSettings } from '../../core/contracts/index.js'
import { attemptKeyOf } from '../../core/identity.js'
import type { AgentAdapter, LoadedSuite } from '../../core/plugins.js'
import { regradeOne } from '../../app/regrade.js'
import { runAttempt } from '../../engine/attempt-runner.js'
import { goldenTraceOf } from '../../engine/grading-pipeline.js'
import { storedTraceOf } from '../../engine/trace-store.js'
import { judgeStoredAttempt } from '../../workers/judge/activities.js'
import { fakeSuite, fakeTask } from '../unit/fake-suite.js'

/** answers without calling the upper tool: tier 0 fails (expected "ABC") */
const lowerCase: AgentAdapter = { name: 'lower', invoke: () => Promise.resolve({ output: 'abc', self_report: 'done, upper-cased' }) }
const golden = AgentTrace.parse({ output: 'ABC', duration_ms: 1, tool_calls: [{ index: 0, name: 'upper', args: { value: 'abc' }, result: 'ABC', retry_index: 0, started_ms: 0, duration_ms: 1 }] })

const suites: Record<string, { suite: LoadedSuite; tier2: string; reasons: string[] }> = {
  'no golden': { suite: fakeSuite(), tier2: 'not_applicable', reasons: ['failed_without_golden'] },
  'a golden the suite holds': { suite: fakeSuite({ tasks: [fakeTask({ golden: 'task_one' })], goldens: { task_one: golden } }), tier2: 'not_run', reasons: ['golden_divergence_not_run'] },
  // nothing to localize against: tier 2 does not apply, and the failure goes to a person
  'a golden the suite does not hold': { suite: fakeSuite({ tasks: [fakeTask({ golden: 'task_one' })] }), tier2: 'not_applicable', reasons: ['failed_without_golden'] },
}

async function workerAttempt(suite: LoadedSuite) {
  const task = suite.tasks[0]!
  return runAttempt({ suite, task, adapter: lowerCase, runId: 'run1', configId: 'c0', attempt: 0, runSeed: 's', adapterConfig: {}, workerId: 'w', env: {} })
}

describe('the worker and forge regrade grade alike', () => {
  for (const [name, { suite, tier2, reasons }] of Object.entries(suites)) {
    it(`a failed attempt of a task with ${name}`, async () => {
      const { result, trace, grading } = await workerAttempt(suite)
      expect(grading.judgement).toMatchObject({ tier0_failed: true, tier2: { status: tier2 }, needs_human_review: true, review_reasons: reasons })

      const regraded = await regradeOne(suite, storedTraceOf(result, trace, grading.env, 5), 2, 9, {})
      expect(regraded).toEqual({
        regrade: {
          ...attemptKeyOf(result),
          grading_version: 2,
          outcome: 'fail',
          validity: 'valid',
          failure_bucket: 'wrong_answer',
          grades: result.grades,
          invariants: result.invariants,
          error: '',
          metrics: grading.metrics,
          judgement: { ...grading.judgement, grading_version: 2, created_at: 9 },
          regraded_at: 9,
        },
      })
    })
  }

  it('the judge activity holds to the same golden rule when the suite lost the golden its task names', async () => {
    const { suite } = suites['a golden the suite does not hold']!
    const task = suite.tasks[0]!
    const { result, trace, grading } = await workerAttempt(suite)
    const settings = JudgeSettings.parse({ model: 'judge-model', metrics: [] })
    const judged = await judgeStoredAttempt({ task, golden: goldenTraceOf(suite, task), stored: storedTraceOf(result, trace, grading.env, 5), settings, goldenDivergence: true, judgeMetrics: false, env: {}, now: () => 7 })
    expect(judged.judgement).toEqual({
      ...grading.judgement,
      revision: 2,
      tier2: { ...grading.judgement.tier2, status: 'not_run', error: 'the suite no longer has a golden trace for task_one' },
      review_packet: { ...grading.judgement.review_packet, tier2: { ...grading.judgement.tier2, status: 'not_run', error: 'the suite no longer has a golden trace for task_one' } },
      created_at: 7,
    })
  })
})
