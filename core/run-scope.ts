/**
 * What a grant covers (store/grants.ts), as pure functions of what a worker is given: the run's part
 * of an attempt activity's input, the judge's part, and a plan without its grants. Workflow code
 * builds attempt inputs from `attemptScopeOfPlan`, so what a planner grants and what a worker checks
 * are one function's output.
 */
import type { FaultProfile, JudgeSettings, RunPlan } from './contracts/index.js'

/** The run's part of an attempt activity's input: everything but the task, the attempt, the re-run round and the grant. */
export interface AttemptScope {
  run_id: string
  config_id: string
  suite: string
  suite_path: string
  adapter: string
  adapter_config: Record<string, unknown>
  /** the run's price table file (RunPlan.price_table); absent: the default table */
  price_table?: string | undefined
  seed: string
  /** the run's judge (RunPlan.judge); set only when the run has one */
  judge?: JudgeSettings | undefined
  /** set only for runs started with --no-redact, so other inputs stay as they were */
  no_redact?: true | undefined
  /** set only for runs started with --guard-answers */
  guard_answers?: true | undefined
  /** the run's fault profile (RunPlan.faults); set only when the run injects faults */
  faults?: FaultProfile | undefined
}

/** An attempt input's (or batch base's) run scope: the fields a run's attempt grant covers. */
export function attemptScopeOf(input: AttemptScope): AttemptScope {
  const { run_id, config_id, suite, suite_path, adapter, adapter_config, price_table, seed, judge, no_redact, guard_answers, faults } = input
  return { run_id, config_id, suite, suite_path, adapter, adapter_config, price_table, seed, judge, no_redact, guard_answers, faults }
}

/** The run scope of a plan's attempts, as workflows/tally.ts attemptInputOf puts it in every input (absent fields undefined: JSON drops them). */
export function attemptScopeOfPlan(plan: RunPlan): AttemptScope {
  return {
    run_id: plan.run_id,
    config_id: plan.config_id,
    suite: plan.suite,
    suite_path: plan.suite_path,
    adapter: plan.adapter,
    adapter_config: plan.adapter_config,
    price_table: plan.price_table,
    seed: plan.seed,
    judge: plan.judge,
    no_redact: plan.redact === false ? true : undefined,
    guard_answers: plan.guard_answers === true ? true : undefined,
    faults: plan.faults?.profile,
  }
}

/** What a judge activity's grant covers. */
export interface JudgeScope {
  run_id: string
  config_id: string
  suite: string
  suite_path: string
  judge: JudgeSettings
}

export function judgeScopeOf(input: JudgeScope): JudgeScope {
  const { run_id, config_id, suite, suite_path, judge } = input
  return { run_id, config_id, suite, suite_path, judge }
}

/** A plan without its grants: what its plan grant covers. */
export function planScopeOf(plan: RunPlan): Omit<RunPlan, 'grants'> {
  const { grants: _grants, ...scope } = plan
  return scope
}
