/** Tier 3: who is flagged for human review, and what the packet holds. It never changes the verdict. */
import { describe, expect, it } from 'vitest'
import { AgentTrace, Task, type Grade } from '../../core/contracts/index.js'
import { tier2Status } from '../../core/judge/divergence.js'
import { decideJudgement, reviewReasons, tier0Failed } from '../../core/review.js'
import { suiteValidityRates, validityRates } from '../../core/validity.js'

const fail: Grade = { grader: 'exact', passed: false, score: 0, detail: 'expected "9", got "8"' }
const pass: Grade = { grader: 'exact', passed: true, score: 1, detail: '' }
const localized = (confidence: number, low: boolean) => ({ ...tier2Status('not_applicable'), status: 'localized' as const, divergence_step: 1, confidence, low_confidence: low })

describe('reviewReasons', () => {
  it('flags a failed attempt without a golden trace', () => {
    expect(reviewReasons({ tier0Failed: true, hasGolden: false, tier2: tier2Status('not_applicable') })).toEqual(['failed_without_golden'])
  })
  it('flags a failed attempt whose tier 2 is pending, did not run, errored, found nothing or is low-confidence', () => {
    const reasons = (tier2: ReturnType<typeof tier2Status>) => reviewReasons({ tier0Failed: true, hasGolden: true, tier2 })
    expect(reasons(tier2Status('pending'))).toEqual(['golden_divergence_pending'])
    expect(reasons(tier2Status('not_run'))).toEqual(['golden_divergence_not_run'])
    expect(reasons({ ...tier2Status('not_applicable'), status: 'errored', low_confidence: true })).toEqual(['golden_divergence_errored'])
    expect(reasons({ ...tier2Status('not_applicable'), status: 'not_localized', low_confidence: true })).toEqual(['golden_divergence_not_localized'])
    expect(reasons(localized(0.3, true))).toEqual(['golden_divergence_low_confidence'])
  })
  it('does not flag a confident localization, a passed attempt, or an attempt nothing graded', () => {
    expect(reviewReasons({ tier0Failed: true, hasGolden: true, tier2: localized(0.9, false) })).toEqual([])
    expect(reviewReasons({ tier0Failed: false, hasGolden: false, tier2: tier2Status('not_applicable') })).toEqual([])
    expect([tier0Failed([]), tier0Failed([pass]), tier0Failed([pass, fail])]).toEqual([false, false, true])
  })
})

describe('decideJudgement', () => {
  const task = Task.parse({ id: 'count_words', instruction: 'Count the words.', input: { text: 'a b c' }, graders: [{ type: 'exact', expected: '3' }] })
  const trace = AgentTrace.parse({
    output: '8',
    duration_ms: 5,
    self_report: 'I counted carefully and the answer is right',
    tool_calls: [{ index: 0, name: 'word_count', args: { text: 'a b c' }, result: 3, retry_index: 0, started_ms: 0, duration_ms: 1 }],
  })
  const input = {
    ids: { attempt_uid: 'r/c/count_words/0', run_id: 'r', config_id: 'c', suite: 's', task_id: 'count_words', attempt: 0 },
    grading_version: 1,
    revision: 1,
    task,
    trace,
    verdict: { outcome: 'fail' as const, validity: 'valid' as const, failure_bucket: 'wrong_answer' as const },
    grades: [fail],
    invariants: [],
    hasGolden: false,
    tier2: tier2Status('not_applicable'),
    created_at: 1_700_000_000_000,
  }

  it('stores a review packet with what a person needs, the self-report shown as a claim', () => {
    expect(decideJudgement(input)).toEqual({
      ...input.ids,
      grading_version: 1,
      revision: 1,
      tier0_failed: true,
      tier2: tier2Status('not_applicable'),
      needs_human_review: true,
      review_reasons: ['failed_without_golden'],
      review_packet: {
        attempt_uid: 'r/c/count_words/0',
        run_id: 'r',
        suite: 's',
        task_id: 'count_words',
        attempt: 0,
        reasons: ['failed_without_golden: tier 0 failed and the task has no golden trace to localize against'],
        instruction: 'Count the words.',
        input: { text: 'a b c' },
        output: '8',
        outcome: 'fail',
        validity: 'valid',
        failure_bucket: 'wrong_answer',
        grades: [fail],
        invariants: [],
        steps: ['called word_count({"text":"a b c"}) → returned 3', 'answered "8"'],
        tier2: tier2Status('not_applicable'),
        golden: null,
        self_report: 'I counted carefully and the answer is right',
      },
      created_at: 1_700_000_000_000,
    })
  })
  it('keeps no packet when nothing is flagged', () => {
    const judged = decideJudgement({ ...input, grades: [pass], verdict: { outcome: 'pass', validity: 'valid', failure_bucket: null } })
    expect([judged.needs_human_review, judged.review_reasons, judged.review_packet, judged.tier0_failed]).toEqual([false, [], null, false])
  })
})

describe('validity rates: outcome and validity, each with its denominator', () => {
  it('reports the pass rate over all attempts and over attempts whose evidence stands, per task and per suite', () => {
    const rates = validityRates([
      { task_id: 'a', outcome: 'pass', validity: 'valid', n: 6 },
      { task_id: 'a', outcome: 'pass', validity: 'degraded', n: 1 },
      { task_id: 'a', outcome: 'fail', validity: 'invalid', n: 3 },
      { task_id: 'b', outcome: 'fail', validity: 'valid', n: 2 },
      { task_id: 'b', outcome: 'violation', validity: 'invalid', n: 1 },
      { task_id: 'b', outcome: 'pass', validity: 'valid', n: 1 },
    ])
    expect(rates.get('a')).toMatchObject({ all: { k: 7, n: 10, rate: 0.7 }, valid: { k: 7, n: 7, rate: 1 }, invalid: 3 })
    expect(rates.get('b')).toMatchObject({ all: { k: 1, n: 4, rate: 0.25 }, valid: { k: 1, n: 3, rate: 1 / 3 }, invalid: 1 })
    const suite = suiteValidityRates([...rates.values()])
    expect(suite).toEqual({ all: { rate: (0.7 + 0.25) / 2, tasks: 2 }, valid: { rate: (1 + 1 / 3) / 2, tasks: 2 }, invalid: 4, n: 14, n_valid: 10 })
  })
  it('leaves a task with only invalid attempts out of the filtered mean (unavailable, not 0)', () => {
    const rates = validityRates([{ task_id: 'a', outcome: 'fail', validity: 'invalid', n: 2 }, { task_id: 'b', outcome: 'pass', validity: 'valid', n: 2 }])
    expect(rates.get('a')?.valid).toMatchObject({ k: 0, n: 0, rate: null })
    expect(suiteValidityRates([...rates.values()]).valid).toEqual({ rate: 1, tasks: 1 })
  })
})
