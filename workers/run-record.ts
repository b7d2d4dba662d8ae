/**
 * A run's record as its workflow's bookkeeping publishes it: its status, its plan's stamps and, at
 * the end, what the completeness check found. `recordRunStatus` publishes it while a run starts and
 * when it fails or is cancelled; the completeness check that ends a run publishes the final one itself
 * (workers/reconcile.ts), one activity fewer at the end of every run.
 */
import { ApplicationFailure } from '@temporalio/common'
import type { JetStreamClient } from '@nats-io/jetstream'
import { attemptRefText } from '../core/completeness.js'
import type { RunPlan, RunRecordInput } from '../core/contracts/index.js'
import { canonicalJson } from '../core/faults.js'
import { planScopeOf } from '../core/run-scope.js'
import { isolationOf } from '../engine/sandbox/config.js'
import { publishRunRecord } from '../store/bus.js'
import { grantHolds, grantRefusal } from '../store/grants.js'
import type { RunStatusInput } from './activity-types.js'

/** Publishes the run's record with `input.status` at `at` (the plan's grant checked first); returns the run's start time. */
export async function publishRunStatus(js: JetStreamClient, key: string | undefined, input: RunStatusInput, at: number): Promise<number> {
  const { plan } = input
  if (!grantHolds(key, 'plan', planScopeOf(plan), plan.grants?.plan)) throw ApplicationFailure.nonRetryable(grantRefusal(`the record of run ${plan.run_id}`), 'GrantError')
  const record = runRecordOf(input, at)
  await publishRunRecord(js, record)
  return record.started_at
}

/** The record itself: the plan's stamps, the status at `at`, and the completeness check's counts when given. */
function runRecordOf({ plan, status, started_at, stopped_tasks, completeness }: RunStatusInput, at: number): RunRecordInput & { started_at: number } {
  return {
    run_id: plan.run_id,
    suite: plan.suite,
    suite_path: plan.suite_path,
    adapter: plan.adapter,
    config_id: plan.config_id,
    attempts: plan.attempts,
    task_count: plan.task_ids.length,
    seed: plan.seed,
    status,
    started_at: started_at ?? at,
    finished_at: status === 'running' ? null : at,
    updated_at: at,
    price_table_version: plan.price_table_version,
    // plans of runs started before these stamps existed lack them
    price_table_date: plan.price_table_date ?? '',
    suite_hash: plan.suite_hash ?? '',
    judge_model: plan.judge_model ?? '',
    judge_prompt_version: plan.judge_prompt_version ?? '',
    stop_width: plan.sequential?.width ?? 0,
    stopped_tasks: stopped_tasks ?? [],
    isolation: isolationOf(plan.adapter, plan.adapter_config),
    redacted: plan.redact,
    guard_answers: plan.guard_answers,
    // the completeness check's plan: a sequential run's tasks that stopped early planned only what they scheduled
    planned_attempts: completeness?.planned ?? plan.task_ids.length * plan.attempts,
    ...(completeness !== undefined
      ? {
          final_stored: completeness.stored,
          missing_count: completeness.missing_count,
          missing_sample: completeness.missing.slice(0, 50).map(attemptRefText),
          harness_errors: completeness.harness_errors,
        }
      : {}),
    ...faultStampsOf(plan),
  }
}

function faultStampsOf(plan: RunPlan): Partial<RunRecordInput> {
  const faults = plan.faults
  if (faults === undefined) return {}
  return {
    fault_profile_hash: faults.profile_hash,
    fault_mode: faults.mode,
    fault_rate: faults.rate,
    fault_sweep_id: faults.sweep_id ?? '',
    fault_profile: canonicalJson(faults.profile),
  }
}
