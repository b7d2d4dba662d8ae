/**
 * Grants: what a worker is asked to do, signed by whoever planned it. Temporal does not say who
 * started a workflow or scheduled an activity: the embedded dev server listens on 127.0.0.1 with no
 * credentials (any local user reaches it), and in a fleet any pod that reaches the frontend can start
 * `RunWorkflow`, or poll Forge's task queue and schedule `runAttempt` itself. Its input names the
 * suite whose `tools.mjs` the worker imports, the agent command it starts and the results it signs —
 * so without a check, whoever reaches Temporal runs code as the worker and gets "completed" runs
 * stored (measured: a plain Temporal client's RunWorkflow with a suite of its own ran that suite's
 * code in a `forge worker` and stored a signed, passing attempt).
 *
 * A grant is an HMAC under a key derived from the results key (store/bus-auth.ts), which only
 * Forge's components hold, over the canonical JSON of what it allows: the CLI grants the plans it
 * starts (app/run.ts) and the sweeps it starts or schedules; a worker planning a sweep's cell grants
 * that cell's plan only after the sweep's own grant checked out. Every activity that runs agent or
 * suite code, or publishes results, checks its grant before it reads anything of its input. Like
 * the bus's signatures, grants are checked only by a worker that holds the results key.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import type { RunPlan } from '../core/contracts/index.js'
import type { SweepSpec } from '../core/contracts/sweep.js'
import { canonicalJson } from '../core/faults.js'
import { derivedKey } from './bus-auth.js'
import { attemptScopeOfPlan, judgeScopeOf, planScopeOf } from '../core/run-scope.js'

/** What a grant allows: a run's record (`plan`), its attempts, its judging, or a sweep. */
export type GrantKind = 'plan' | 'attempts' | 'judge' | 'sweep'

/** The grant of `value` for `kind` under the results key: hex HMAC-SHA256 of its canonical JSON. */
export function grantOf(resultsKey: string, kind: GrantKind, value: unknown): string {
  return createHmac('sha256', derivedKey(resultsKey, `forge-grant-v1/${kind}`)).update(canonicalJson(value)).digest('hex')
}

/** Whether `grant` is the grant of `value` (constant time); always true for a process without the results key. */
export function grantHolds(resultsKey: string | undefined, kind: GrantKind, value: unknown, grant: string | undefined): boolean {
  if (resultsKey === undefined) return true
  if (grant === undefined || !/^[0-9a-f]{64}$/.test(grant)) return false
  return timingSafeEqual(Buffer.from(grantOf(resultsKey, kind, value), 'hex'), Buffer.from(grant, 'hex'))
}

/** Why a worker refused an activity: it names what was not granted and who may grant it. */
export function grantRefusal(what: string): string {
  return (
    `refused ${what}: it carries no valid grant, so no Forge component holding the results key planned it ` +
    '(a workflow started, or an activity scheduled, by someone else through Temporal). ' +
    'Start runs with forge run / forge sweep; a fleet CLI needs the fleet\'s FORGE_RESULTS_KEY; a schedule made before grants: forge schedule create --update'
  )
}

/** The grants a planned run carries (RunPlan.grants). */
export interface RunGrants {
  /** the whole plan but its grants: what recordRunStatus publishes */
  plan: string
  /** the run's part of every attempt input (attemptScopeOf) */
  attempts: string
  /** the judge's part (judgeScopeOf); absent for a run without a judge */
  judge?: string
}

/** `plan` with its grants under `resultsKey` (the same plan when the process has no key: nothing checks them then). */
export function grantPlan(plan: RunPlan, resultsKey: string | undefined): RunPlan {
  if (resultsKey === undefined) return plan
  const scope = planScopeOf(plan)
  const grants: RunGrants = {
    plan: grantOf(resultsKey, 'plan', scope),
    attempts: grantOf(resultsKey, 'attempts', attemptScopeOfPlan(plan)),
    ...(plan.judge !== undefined ? { judge: grantOf(resultsKey, 'judge', judgeScopeOf({ ...plan, judge: plan.judge })) } : {}),
  }
  return { ...scope, grants }
}

/** The grant of a sweep's spec (SweepWorkflowInput.grant), or undefined without a key. */
export function grantSweep(spec: SweepSpec, resultsKey: string | undefined): string | undefined {
  return resultsKey === undefined ? undefined : grantOf(resultsKey, 'sweep', spec)
}
