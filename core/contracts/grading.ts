/**
 * Grading contracts: grades, invariant results, metric values, judge stamps, tier-2 divergence, the
 * tier-3 review packet, judgements, the judge worker's outcome, regrades and review resolutions.
 */
import { z } from 'zod'
import { AttemptKey } from './attempt-key.js'
import { AuditEntryMessage } from './audit.js'
import { FailureBucket, Outcome, Validity } from './outcome.js'

/**
 * How a judge call was made: the model, the prompt version and the decoding settings. Stamped on
 * every judge result (grades, metrics, golden divergence) so runs judged differently can be told apart.
 */
export const JudgeStamp = z.object({
  model: z.string(),
  prompt_version: z.string(),
  decoding: z.record(z.string(), z.unknown()).default({}),
})
export type JudgeStamp = z.infer<typeof JudgeStamp>

export const Grade = z.object({
  grader: z.string(),
  passed: z.boolean(),
  score: z.number().min(0).max(1),
  detail: z.string().default(''),
  /** a broken Never-rule this grader found (e.g. a state_diff `must_not_change`): the outcome becomes `violation` */
  violation: z.string().optional(),
  /** LLM-backed graders (`judge`): the model, prompt version and decoding settings of the call */
  judge: JudgeStamp.optional(),
})
export type Grade = z.infer<typeof Grade>

export const InvariantResult = z.object({
  name: z.string(),
  passed: z.boolean(),
  detail: z.string().default(''),
})
export type InvariantResult = z.infer<typeof InvariantResult>

/** One metric of one attempt (core/metrics): stored as a row of `metrics` with the metric's version. */
export const MetricValue = z.object({
  metric: z.string(),
  version: z.uint32().positive(),
  kind: z.enum(['deterministic', 'judge']),
  /** `not_applicable`: nothing to measure (e.g. no token budget); `skipped`: the judge was not asked (gate); `errored`: the judge gave no usable answer */
  status: z.enum(['scored', 'not_applicable', 'skipped', 'errored']),
  value: z.number().nullable(),
  /** null for informational metrics and for anything not scored */
  passed: z.boolean().nullable(),
  detail: z.string().default(''),
  /** judge metrics: how the judge was asked */
  judge: JudgeStamp.nullable().default(null),
})
export type MetricValue = z.infer<typeof MetricValue>

export const Tier2Status = z.enum(['not_applicable', 'pending', 'not_run', 'localized', 'not_localized', 'errored'])
export type Tier2Status = z.infer<typeof Tier2Status>

/**
 * Tier 2 — golden divergence of one attempt: only after a tier-0 failure of a task with a golden
 * trace. It localizes (the earliest wrong decision); it never changes the outcome.
 */
export const Tier2Result = z.object({
  status: Tier2Status,
  /** the step (1-based: tool calls in order, then the final answer) where the run went wrong */
  divergence_step: z.uint32().positive().nullable().default(null),
  decision: z.string().default(''),
  explanation: z.string().default(''),
  confidence: z.number().min(0).max(1).nullable().default(null),
  low_confidence: z.boolean().default(false),
  /** judge calls made (a malformed reply is retried once) */
  calls: z.uint32().default(0),
  error: z.string().default(''),
  judge: JudgeStamp.nullable().default(null),
})
export type Tier2Result = z.infer<typeof Tier2Result>

/** What a person needs to review an attempt without opening anything else (tier 3). */
export const ReviewPacket = z.object({
  attempt_uid: z.string(),
  run_id: z.string(),
  suite: z.string(),
  task_id: z.string(),
  attempt: z.uint32(),
  reasons: z.array(z.string()),
  instruction: z.string(),
  input: z.record(z.string(), z.unknown()),
  output: z.string(),
  outcome: Outcome,
  validity: Validity,
  failure_bucket: FailureBucket.nullable(),
  grades: z.array(Grade),
  invariants: z.array(InvariantResult),
  /** the run step by step: tool calls (name, arguments, result or error), then the answer */
  steps: z.array(z.string()),
  tier2: Tier2Result,
  /** the golden trace the task names, if any */
  golden: z.string().nullable(),
  /** the agent's own account: shown to the reviewer as a claim, never graded */
  self_report: z.string(),
})
export type ReviewPacket = z.infer<typeof ReviewPacket>

/**
 * Tier 2 and tier 3 of one attempt at one grading version. Revision 1 comes from the attempt
 * worker; revision 2 from the judge worker replaces it (tier 2 done, review decided again).
 */
export const Judgement = AttemptKey.extend({
  grading_version: z.uint32().positive().default(1),
  revision: z.uint32().positive(),
  tier0_failed: z.boolean(),
  tier2: Tier2Result,
  /** tier 3 is a flag, not a gate: it never changes outcome or validity */
  needs_human_review: z.boolean(),
  review_reasons: z.array(z.string()).default([]),
  review_packet: ReviewPacket.nullable().default(null),
  created_at: z.number(),
})
export type Judgement = z.infer<typeof Judgement>

/** What the judge worker publishes for one attempt: its judge metrics and the revised judgement. */
export const JudgeOutcome = AttemptKey.extend({
  grading_version: z.uint32().positive().default(1),
  metrics: z.array(MetricValue),
  judgement: Judgement.nullable(),
  /** the audit entry of these rows (core/audit.ts), stored in `audit_entries` */
  audit: AuditEntryMessage.optional(),
})
export type JudgeOutcome = z.infer<typeof JudgeOutcome>

/**
 * One stored attempt graded again by `forge regrade` with the current graders, as a new grading
 * version: a new row of `attempt_grades`; the original attempt row is never rewritten.
 */
export const AttemptRegrade = AttemptKey.extend({
  grading_version: z.uint32().min(2),
  outcome: Outcome,
  validity: Validity,
  failure_bucket: FailureBucket.nullable(),
  grades: z.array(Grade),
  invariants: z.array(InvariantResult),
  error: z.string(),
  metrics: z.array(MetricValue).default([]),
  judgement: Judgement.nullable().default(null),
  regraded_at: z.number(),
})
export type AttemptRegrade = z.infer<typeof AttemptRegrade>

/**
 * A person's resolution of a flagged attempt (`forge review resolve`). Appended, never replacing
 * anything: the original grade stays as it was; the newest resolution of an attempt is its current one.
 */
export const ReviewResolution = z.object({
  resolution_id: z.string().min(1),
  attempt_uid: z.string().min(1),
  run_id: z.string(),
  task_id: z.string(),
  grading_version: z.uint32().positive().default(1),
  verdict: z.enum(['pass', 'fail', 'partial', 'violation', 'invalid', 'inconclusive']),
  failure_bucket: FailureBucket.nullable().default(null),
  note: z.string().default(''),
  reviewer: z.string().default(''),
  resolved_at: z.number(),
})
export type ReviewResolution = z.infer<typeof ReviewResolution>
