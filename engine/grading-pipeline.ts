/**
 * The one grading pipeline of an attempt whose trace exists: tier 0/1 (engine/grade-trace.ts) →
 * verdict → deterministic metrics → judge planning, then the judgement (tier 2 as known, tier 3).
 * The attempt worker runs it right after the agent stopped, `forge regrade` on stored traces, and
 * the judge activity decides revision 2 of the judgement with it, so all three grade alike.
 */
import type { AgentTrace, Grade, InvariantResult, Judgement, JudgeSettings, MetricValue, Task, Tier2Result } from '../core/contracts/index.js'
import type { EnvironmentView } from '../core/env-diff.js'
import type { AttemptKey } from '../core/identity.js'
import { planJudging, type JudgingPlan } from '../core/judging.js'
import { runDeterministicMetrics } from '../core/metrics/index.js'
import type { LoadedSuite } from '../core/plugins.js'
import { decideJudgement } from '../core/review.js'
import { decideVerdict, type Verdict } from '../core/verdict.js'
import { gradeTrace, withoutSelfReport } from './grade-trace.js'
import type { RateLimiter } from './judge/rate-limit.js'
import { boundRegexpBacktracking } from './regexp-backtracking.js'

/** The golden trace a task names, as the suite holds it; undefined: nothing to localize a failure against. */
export function goldenTraceOf(suite: LoadedSuite, task: Task): AgentTrace | undefined {
  return task.golden === undefined ? undefined : suite.goldens.get(task.id)
}

export interface GradeAttemptInput {
  suite: LoadedSuite
  task: Task
  /** the captured trace, self-report included: graders never see it, reviewers do */
  trace: AgentTrace
  /** the environment view the graders read (end state, diff, queries) */
  env?: EnvironmentView | undefined
  /** the run's judge: plans the judge worker's part and gives `judge` graders their default model */
  judge?: { settings?: JudgeSettings | undefined; limiter?: RateLimiter | undefined } | undefined
  /** where a `judge` grader finds its endpoint and default model */
  processEnv: NodeJS.ProcessEnv
  /** the harness failed before anything could be graded (the adapter threw, the environment was not verified): tier 0/1 are skipped */
  harnessError?: string | undefined
  /** values the worker holds as secret: the secret_leak metric looks for them */
  secrets?: readonly string[] | undefined
}

export interface AttemptGrades {
  grades: Grade[]
  invariants: InvariantResult[]
  /** the harness could not run or grade the attempt; the verdict is then `harness_error` */
  harnessError?: string
  verdict: Verdict
  /** the deterministic metrics, computed on the trace without its self-report */
  deterministic: MetricValue[]
  /** tier 2 as known now, judge metrics the gate skipped, and the judge worker's part */
  judging: JudgingPlan
  /** the suite holds the task's golden trace (goldenTraceOf) */
  hasGolden: boolean
}

/** Tier 0/1, verdict, deterministic metrics and judge planning of one trace; no clock, no ids. */
export async function gradeAttempt(input: GradeAttemptInput): Promise<AttemptGrades> {
  // a suite's patterns run on the agent's text below: none may backtrack without bound
  boundRegexpBacktracking()
  const { suite, task, trace } = input
  const graded =
    input.harnessError === undefined
      ? await gradeTrace({ suite, task, trace, env: input.env, judge: input.judge, processEnv: input.processEnv })
      : { grades: [], invariants: [], harnessError: input.harnessError }
  const { grades, invariants, harnessError } = graded
  const validity = trace.isolation_degraded !== undefined ? { validity: 'degraded' as const } : {}
  const verdict = decideVerdict({ trace, grades, invariants, ...validity, ...(harnessError !== undefined ? { harnessError } : {}) })
  // deterministic metrics first; the judge worker gets only what they (and tier 0) allow
  const deterministic = runDeterministicMetrics({ trace: withoutSelfReport(trace), task, grades, invariants, ...(input.secrets !== undefined ? { secrets: input.secrets } : {}) })
  const hasGolden = goldenTraceOf(suite, task) !== undefined
  const judging = planJudging({ settings: input.judge?.settings, grades, deterministic, hasGolden, invalid: verdict.validity === 'invalid' })
  return { grades, invariants, ...(harnessError !== undefined ? { harnessError } : {}), verdict, deterministic, judging, hasGolden }
}

export interface JudgementOfInput {
  key: AttemptKey
  task: Task
  trace: AgentTrace
  /** what the attempt was graded to: by gradeAttempt, or as stored with its trace */
  graded: Pick<AttemptGrades, 'grades' | 'invariants' | 'verdict' | 'hasGolden'>
  tier2: Tier2Result
  gradingVersion: number
  /** 1 from the attempt worker or a regrade, 2 from the judge worker once tier 2 ran */
  revision: number
  createdAt: number
}

/** Tier 2 and tier 3 of a graded attempt: its judgement, with a review packet when it is flagged. */
export function judgementOf(input: JudgementOfInput): Judgement {
  const { graded } = input
  return decideJudgement({
    ids: input.key,
    grading_version: input.gradingVersion,
    revision: input.revision,
    task: input.task,
    trace: input.trace,
    verdict: graded.verdict,
    grades: graded.grades,
    invariants: graded.invariants,
    hasGolden: graded.hasGolden,
    tier2: input.tier2,
    created_at: input.createdAt,
  })
}
