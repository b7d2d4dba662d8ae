/**
 * Tier 0 and tier 1 of one captured trace: the outcome graders (deterministic first, then the
 * LLM-backed ones only if every deterministic one passed) and the task's invariants. The first step
 * of the grading pipeline (engine/grading-pipeline.ts), which the attempt runner and `forge
 * regrade` both run. The agent's self-report is removed before anything grades the trace.
 */
import type { AgentTrace, Grade, InvariantResult, JudgeSettings, Task } from '../core/contracts/index.js'
import type { EnvironmentView } from '../core/env-diff.js'
import { gradeAll } from '../core/graders/index.js'
import type { GradeContext, LoadedSuite } from '../core/plugins.js'
import type { RateLimiter } from './judge/rate-limit.js'
import { judgeGraderVerdicts } from './judge/tier0.js'

/** The trace graders and judges see: everything the harness captured, without the agent's own account. */
export function withoutSelfReport(trace: AgentTrace): AgentTrace {
  const { self_report: _selfReport, ...rest } = trace
  return rest
}

export interface GradeTraceInput {
  suite: LoadedSuite
  task: Task
  trace: AgentTrace
  env?: EnvironmentView | undefined
  judge?: { settings?: JudgeSettings | undefined; limiter?: RateLimiter | undefined } | undefined
  /** where a judge grader finds its endpoint and default model */
  processEnv: NodeJS.ProcessEnv
}

export interface TraceGrades {
  grades: Grade[]
  invariants: InvariantResult[]
  /** the harness could not grade (a grader misconfigured, an invariant missing or throwing, no judge answer) */
  harnessError?: string
}

export async function gradeTrace(input: GradeTraceInput): Promise<TraceGrades> {
  const { suite, task } = input
  const trace = withoutSelfReport(input.trace)
  let grades: Grade[] = []
  let harnessError: string | undefined
  const gradeCtx: GradeContext = { task, fixtures: suite.fixtures.get(task.id) ?? {}, ...(input.env !== undefined ? { env: input.env } : {}) }
  try {
    grades = gradeAll(task.outcome_graders, trace, gradeCtx)
    // LLM-backed graders last, and only when every deterministic grader passed
    const judged = await judgeGraderVerdicts(task.outcome_graders, grades, trace, gradeCtx, {
      settings: input.judge?.settings,
      env: input.processEnv,
      limiter: input.judge?.limiter,
    })
    if (judged !== undefined) {
      grades = gradeAll(task.outcome_graders, trace, { ...gradeCtx, judgements: judged.judgements })
      if (judged.error !== undefined) harnessError = `the judge could not grade: ${judged.error}`
    }
  } catch (error) {
    harnessError = `grading failed: ${errorMessage(error)}`
  }
  const invariants = task.invariants.map((name): InvariantResult => {
    const invariant = suite.invariants.get(name)
    if (invariant === undefined) {
      harnessError ??= `invariant "${name}" is not defined by suite "${suite.name}"`
      return { name, passed: false, detail: 'not defined' }
    }
    try {
      const checked = invariant(trace)
      return { name, passed: checked.passed === true, detail: typeof checked.detail === 'string' ? checked.detail : '' }
    } catch (error) {
      harnessError ??= `invariant "${name}" threw: ${errorMessage(error)}`
      return { name, passed: false, detail: `threw: ${errorMessage(error)}` }
    }
  })
  return harnessError === undefined ? { grades, invariants } : { grades, invariants, harnessError }
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
