/**
 * Result contracts: the verdict and measurements of one attempt (AttemptResult, with its
 * EnvironmentReport) and the full trace stored beside it (StoredTrace).
 */
import { z } from 'zod'
import { AttemptKey } from './attempt-key.js'
import { AuditEntryMessage } from './audit.js'
import { Grade, InvariantResult, Judgement, MetricValue } from './grading.js'
import { FailureBucket, Outcome, Validity } from './outcome.js'
import { BudgetLimit } from './task.js'
import { AgentTrace, ToolCall } from './trace.js'

/**
 * What happened to an attempt's environment instance: `restored` (restore verified, the instance
 * goes back to the pool), `quarantined` (restore not verified: never reused, `detail` says why) or
 * `seed_unverified` (the seed could not be read back: the agent was never invoked).
 */
export const EnvironmentReport = z.object({
  instance: z.string(),
  status: z.enum(['restored', 'quarantined', 'seed_unverified']),
  /** the instance served an earlier attempt and was restored and verified since */
  reused: z.boolean(),
  detail: z.string().default(''),
})
export type EnvironmentReport = z.infer<typeof EnvironmentReport>

/** The verdict and measurements of one attempt: what is published to NATS and stored as one row. */
export const AttemptResult = AttemptKey.extend({
  adapter: z.string(),
  outcome: Outcome,
  validity: Validity,
  failure_bucket: FailureBucket.nullable(),
  budget_limit: BudgetLimit.nullable(),
  grades: z.array(Grade),
  invariants: z.array(InvariantResult),
  instruction: z.string(),
  output: z.string(),
  self_report: z.string(),
  error: z.string(),
  cost_usd: z.number().nonnegative().nullable(),
  latency_ms: z.number().nonnegative(),
  tool_call_count: z.uint32(),
  input_tokens: z.number().int().nonnegative(),
  output_tokens: z.number().int().nonnegative(),
  model: z.string(),
  decoding: z.record(z.string(), z.unknown()),
  price_table_version: z.string(),
  seed: z.string(),
  worker_id: z.string(),
  started_at: z.number(),
  finished_at: z.number(),
  tool_calls: z.array(ToolCall),
  /** injected faults the attempt met (tool calls and model calls); absent = none (runs without a fault profile) */
  injected_faults: z.uint32().optional(),
  /** the kind of each of those faults (timeout, 500, garbage, rate_limit, slow), one entry per fault */
  injected_fault_kinds: z.array(z.string()).optional(),
  /** present when the task has environment fixtures (workspace, sqlite, http) */
  environment: EnvironmentReport.optional(),
  /** the deterministic metrics (core/metrics), stored as rows of `metrics`; set by the attempt activity */
  metrics: z.array(MetricValue).optional(),
  /** tier 2 / tier 3 as the attempt worker decided them, stored in `judgements`; set by the attempt activity */
  judgement: Judgement.optional(),
  /** the audit entry of this result (core/audit.ts), stored in `audit_entries`; set by the attempt activity */
  audit: AuditEntryMessage.optional(),
})
export type AttemptResult = z.infer<typeof AttemptResult>

/**
 * The full trace of an attempt with what it was graded on, stored beside the attempt row (table
 * `traces`) and readable by the judge worker by attempt_uid: tier 2, the judge metrics, review
 * packets and `forge regrade` work from it without running any agent again.
 */
export const StoredTrace = AttemptKey.extend({
  outcome: Outcome,
  validity: Validity,
  failure_bucket: FailureBucket.nullable(),
  grades: z.array(Grade),
  invariants: z.array(InvariantResult),
  trace: AgentTrace,
  /** the environment view the graders read (core/env-diff EnvironmentView); null without environment fixtures */
  env: z.unknown().nullable().default(null),
  /** what was cut to keep the stored trace under the message limit (e.g. `tool_results`, `env`) */
  truncated: z.array(z.string()).default([]),
  stored_at: z.number(),
})
export type StoredTrace = z.infer<typeof StoredTrace>

/**
 * An attempt's one message (subject `forge.results.attempt.<key>`): its result with its stored trace
 * inside, so an attempt costs one publish, one stored message and one delivery. A pair too big for one
 * message travels as the two messages it replaces (`forge.results.attempt` and `forge.results.trace.<key>`).
 */
export const AttemptMessage = AttemptResult.extend({ stored_trace: StoredTrace })
export type AttemptMessage = z.infer<typeof AttemptMessage>
