/**
 * The verdict of one attempt: outcome (the agent's), validity (the instrument's) and, for an
 * attempt that neither passed nor broke an invariant, exactly one failure bucket.
 */
import type { AgentTrace, FailureBucket, Grade, InvariantResult, Outcome, Validity } from './contracts/index.js'
import { DISRUPTIVE_FAULT_KINDS } from './faults.js'
import { outputText } from './graders/output.js'

export interface VerdictInput {
  trace: AgentTrace
  grades: Grade[]
  invariants: InvariantResult[]
  /** set when the harness itself failed (adapter crash, grader misconfigured, ...); '' counts as none */
  harnessError?: string
  validity?: Validity
}

export interface Verdict {
  outcome: Outcome
  validity: Validity
  failure_bucket: FailureBucket | null
}

type Call = AgentTrace['tool_calls'][number]
/** an injected fault that left the call's answer unusable (`slow` answers correctly) */
const disrupted = (fault: unknown): boolean => typeof fault === 'string' && DISRUPTIVE_FAULT_KINDS.has(fault)
/** a call that ran and answered: no error, no refusal, no disruptive injected fault */
const succeeded = (call: Call): boolean => call.error === undefined && call.refused === undefined && !disrupted(call.injected_fault)
const recoveredLater = (trace: AgentTrace, failed: Call): boolean =>
  trace.tool_calls.some((later) => later.name === failed.name && later.index > failed.index && succeeded(later))

/** A tool call that errored (not refused, not injected) and was never followed by a successful call of the same tool. */
function hasUnrecoveredToolError(trace: AgentTrace): boolean {
  return trace.tool_calls.some((failed) => failed.error !== undefined && failed.refused === undefined && failed.injected_fault === undefined && !recoveredLater(trace, failed))
}

/**
 * The attempt met an injected fault it never got past: a tool call hit by a disruptive fault with
 * no later successful call of that tool, or a model call hit by one with no later successful
 * model call. The fault profile made it fail, not (only) the agent: kept apart in its own bucket.
 */
function hasUnrecoveredInjectedFault(trace: AgentTrace): boolean {
  if (trace.tool_calls.some((call) => disrupted(call.injected_fault) && !recoveredLater(trace, call))) return true
  const models = trace.spans.filter((span) => span.category === 'model').sort((a, b) => a.start_ms - b.start_ms)
  return models.some(
    (hit, i) =>
      disrupted(hit.attributes['injected_fault']) &&
      !models.slice(i + 1).some((later) => later.attributes['status'] === 'ok' && !disrupted(later.attributes['injected_fault'])),
  )
}

/** The agent hit a budget limit: the harness stopped it or refused a call past a budget. */
function overranBudget(trace: AgentTrace): boolean {
  return trace.budget_exhausted !== undefined || trace.tool_calls.some((call) => call.refused === 'budget_exhausted')
}

/**
 * The one bucket of an attempt that failed or partly failed, first that applies.
 *
 * Deviation from the FAILURE_BUCKETS order: `refusal` is checked before `wrong_answer` and
 * `no_answer`, because a refusal's text ("I can't help with that") would otherwise always read
 * as a wrong answer and `refusal` could never be reached.
 */
function failureBucket(trace: AgentTrace): FailureBucket {
  const refusals = new Set(trace.tool_calls.map((call) => call.refused).filter((reason) => reason !== undefined))
  if (hasUnrecoveredInjectedFault(trace)) return 'injected_fault'
  if (hasUnrecoveredToolError(trace)) return 'tool_error'
  if (refusals.has('malformed_tool_call')) return 'malformed_tool_call'
  if (refusals.has('hallucinated_tool') || refusals.has('disallowed_tool')) return 'hallucinated_tool'
  if (trace.budget_exhausted !== undefined || refusals.has('budget_exhausted')) return 'budget_exhausted'
  if (trace.refused) return 'refusal'
  // every output is either empty or not, so `harness_error` is reached only through `harnessError`
  return outputText(trace.output).trim() === '' ? 'no_answer' : 'wrong_answer'
}

/**
 * Decides outcome, validity and failure bucket. A harness error makes the attempt invalid
 * (outcome fail, bucket harness_error); so does an attempt with no grades at all, since nothing
 * was measured. A broken invariant, or a grade that found a broken Never-rule (`violation`), makes
 * the outcome `violation` whatever the other grades say. An attempt that overran its budget (steps,
 * time or tokens) never passes: its graders all passing makes it `fail` / `budget_exhausted`.
 */
export function decideVerdict(input: VerdictInput): Verdict {
  if (input.harnessError !== undefined && input.harnessError !== '') {
    return { outcome: 'fail', validity: 'invalid', failure_bucket: 'harness_error' }
  }
  if (input.grades.length === 0) {
    // an empty grade list would otherwise pass vacuously
    return { outcome: 'fail', validity: 'invalid', failure_bucket: 'harness_error' }
  }
  const validity = input.validity ?? 'valid'
  // a Never-rule broken — by an invariant or a grade's `violation` (state_diff must_not_change)
  if (input.invariants.some((invariant) => !invariant.passed) || input.grades.some((grade) => grade.violation !== undefined)) {
    return { outcome: 'violation', validity, failure_bucket: null }
  }
  const passedCount = input.grades.filter((grade) => grade.passed).length
  // a budget the harness had to enforce (steps, time, tokens) was overrun: the run was terminated, so
  // the right answer does not make it a pass (seed: "terminates runs that exceed the budget")
  if (passedCount === input.grades.length && overranBudget(input.trace)) return { outcome: 'fail', validity, failure_bucket: 'budget_exhausted' }
  if (passedCount === input.grades.length) return { outcome: 'pass', validity, failure_bucket: null }
  return { outcome: passedCount > 0 ? 'partial' : 'fail', validity, failure_bucket: failureBucket(input.trace) }
}
