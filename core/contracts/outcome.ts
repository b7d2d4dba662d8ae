/**
 * The verdict vocabulary of an attempt: Outcome (the agent's), Validity (the instrument's) and the
 * failure buckets in priority order. Shared by results, regrades and reviews.
 */
import { z } from 'zod'

export const Outcome = z.enum(['pass', 'fail', 'partial', 'violation'])
export type Outcome = z.infer<typeof Outcome>
export const Validity = z.enum(['valid', 'degraded', 'invalid'])
export type Validity = z.infer<typeof Validity>

/**
 * In priority order: a failed attempt gets the first that applies. `injected_fault`: the attempt
 * met a fault the harness injected (fault profile) and never got past it — kept apart from the
 * agent's own mistakes.
 */
export const FAILURE_BUCKETS = [
  'injected_fault',
  'tool_error',
  'malformed_tool_call',
  'hallucinated_tool',
  'budget_exhausted',
  'wrong_answer',
  'no_answer',
  'refusal',
  'harness_error',
] as const
export const FailureBucket = z.enum(FAILURE_BUCKETS)
export type FailureBucket = z.infer<typeof FailureBucket>
