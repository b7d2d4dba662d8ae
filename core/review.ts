/**
 * Tier 3 — human review is a flag, not a gate: it routes to a person the failed attempts the
 * pipeline cannot confidently localize (tier 0 failed and the task has no golden; or tier 2 was
 * low-confidence, found nothing, errored, or could not run). It never changes outcome or validity. Pure.
 */
import type { AgentTrace, Grade, InvariantResult, Judgement, ReviewPacket, Tier2Result, Task } from './contracts/index.js'
import type { AttemptKey } from './identity.js'
import type { Verdict } from './verdict.js'
import { outputText } from './graders/output.js'
import { clip, traceSteps } from './judge/render.js'

export const REVIEW_REASONS = {
  failed_without_golden: 'tier 0 failed and the task has no golden trace to localize against',
  golden_divergence_pending: 'tier 0 failed; golden divergence has not reported yet',
  golden_divergence_not_run: 'tier 0 failed; golden divergence did not run (no judge configured for the run)',
  golden_divergence_errored: 'tier 0 failed; golden divergence errored (no usable judge answer)',
  golden_divergence_not_localized: 'tier 0 failed; the judge found no wrong decision',
  golden_divergence_low_confidence: 'tier 0 failed; the judge localized the failure with low confidence',
} as const
export type ReviewReason = keyof typeof REVIEW_REASONS

/** Tier 0 failed: at least one outcome grade, and one of them did not pass (a harness error grades nothing). */
export function tier0Failed(grades: readonly Grade[]): boolean {
  return grades.length > 0 && grades.some((grade) => !grade.passed)
}

/** Why an attempt needs a person, from tier 0 and tier 2; [] when it does not. */
export function reviewReasons(input: { tier0Failed: boolean; hasGolden: boolean; tier2: Tier2Result }): ReviewReason[] {
  if (!input.tier0Failed) return []
  if (!input.hasGolden) return ['failed_without_golden']
  switch (input.tier2.status) {
    case 'pending':
      return ['golden_divergence_pending']
    case 'not_run':
      return ['golden_divergence_not_run']
    case 'errored':
      return ['golden_divergence_errored']
    case 'not_localized':
      return ['golden_divergence_not_localized']
    case 'localized':
      return input.tier2.low_confidence ? ['golden_divergence_low_confidence'] : []
    case 'not_applicable':
      return []
  }
}

export interface JudgementInput {
  ids: AttemptKey
  grading_version: number
  revision: number
  task: Task
  trace: AgentTrace
  verdict: Verdict
  grades: readonly Grade[]
  invariants: readonly InvariantResult[]
  /** the suite holds the task's golden trace (engine/grading-pipeline goldenTraceOf): tier 2 can localize a failure */
  hasGolden: boolean
  tier2: Tier2Result
  created_at: number
}

/** The attempt's tier-2/tier-3 record, with a review packet when it is flagged. */
export function decideJudgement(input: JudgementInput): Judgement {
  const failed = tier0Failed(input.grades)
  const reasons = reviewReasons({ tier0Failed: failed, hasGolden: input.hasGolden, tier2: input.tier2 })
  return {
    ...input.ids,
    grading_version: input.grading_version,
    revision: input.revision,
    tier0_failed: failed,
    tier2: input.tier2,
    needs_human_review: reasons.length > 0,
    review_reasons: reasons,
    review_packet: reasons.length > 0 ? reviewPacket(input, reasons) : null,
    created_at: input.created_at,
  }
}

const MAX_STEPS = 60

/** Everything a reviewer needs, small enough to store with the judgement. */
export function reviewPacket(input: JudgementInput, reasons: readonly ReviewReason[]): ReviewPacket {
  const steps = traceSteps(input.trace, { stepChars: 500 })
  const shown = steps.length <= MAX_STEPS ? steps : [...steps.slice(0, MAX_STEPS / 2), `… ${steps.length - MAX_STEPS} steps omitted …`, ...steps.slice(-MAX_STEPS / 2)]
  return {
    attempt_uid: input.ids.attempt_uid,
    run_id: input.ids.run_id,
    suite: input.ids.suite,
    task_id: input.ids.task_id,
    attempt: input.ids.attempt,
    reasons: reasons.map((reason) => `${reason}: ${REVIEW_REASONS[reason]}`),
    instruction: input.task.instruction,
    input: input.task.input,
    output: clip(outputText(input.trace.output), 4_000),
    outcome: input.verdict.outcome,
    validity: input.verdict.validity,
    failure_bucket: input.verdict.failure_bucket,
    grades: input.grades.map((grade) => ({ ...grade, detail: clip(grade.detail, 500) })),
    invariants: [...input.invariants],
    steps: shown,
    tier2: input.tier2,
    golden: input.task.golden ?? null,
    self_report: clip(input.trace.self_report ?? '', 1_000),
  }
}
