import type { ActivityOptions } from '@temporalio/workflow'
import type { RunPlan } from '../core/contracts/index.js'

/** Errors that no retry can fix: they fail the activity at once. */
export const NON_RETRYABLE_ERROR_TYPES = ['SuiteLoadError', 'UnknownAdapterError', 'UnknownTaskError', 'ConfigError']

/** Attempt activities: capped retries with backoff for infrastructure errors only; agent failures are data. */
export function attemptActivityOptions(plan: RunPlan): ActivityOptions {
  return {
    startToCloseTimeout: plan.attempt_timeout_ms,
    heartbeatTimeout: plan.heartbeat_timeout_ms,
    retry: {
      initialInterval: '1s',
      backoffCoefficient: 2,
      maximumInterval: '30s',
      maximumAttempts: 5,
      nonRetryableErrorTypes: NON_RETRYABLE_ERROR_TYPES,
    },
  }
}

export const bookkeepingActivityOptions: ActivityOptions = {
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 10 },
}

/**
 * The completeness check: one try waits up to a minute for the ingester; a store that is behind or
 * down is retried with backoff (the supervisor restarts what died) for about a quarter of an hour. It
 * heartbeats every few seconds while it runs (workers/heartbeat.ts), so a worker that dies during the
 * check that ends a run costs the run ~10 s, not 30.
 */
export const reconcileActivityOptions: ActivityOptions = {
  startToCloseTimeout: '5m',
  heartbeatTimeout: '10s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '15s', maximumAttempts: 12 },
}
