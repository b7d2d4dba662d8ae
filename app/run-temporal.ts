/**
 * A run's RunWorkflow as `forge run` starts and follows it (issue 15): through the embedded dev
 * server's HTTP API when the run is on the local stack with workers Forge starts
 * (stack/temporal-http.ts: no gRPC SDK in the CLI, ~0.7 s of CPU less per run), otherwise through the
 * Temporal SDK (app/run-temporal-sdk.ts, loaded only then): a cluster Forge did not start (TLS, API
 * keys), and fleet runs, whose poller watch needs the SDK's task-queue calls.
 */
import type { ForgeConfig } from '../config/index.js'
import type { RunPlan } from '../core/contracts/index.js'
import { currentTemporalHttpUrl } from '../stack/local-stack.js'
import { GRPC_ALREADY_EXISTS, temporalHttpClient, TemporalHttpError } from '../stack/temporal-http.js'
import type { RunWorkflowResult } from '../workflows/run.js'
import type { PollerWatch } from './fleet-workers.js'
import { runIdTakenByTemporal } from './run-id.js'

export { TemporalWorkflowEndedError } from '../stack/temporal-http.js'

/** One run's workflow once started. */
export interface RunHandle {
  /** waits for the workflow's result; TemporalWorkflowEndedError when it failed, was cancelled, terminated or timed out */
  result(): Promise<RunWorkflowResult>
  cancel(): Promise<void>
  terminate(reason: string): Promise<void>
}

export interface RunTemporal {
  /** how this run talks to Temporal: 'http' (the dev server's HTTP API) or 'sdk' */
  readonly via: 'http' | 'sdk'
  /** starts the run's RunWorkflow (workflow id `forge-run-<run id>`); RunIdInUseError when Temporal knows that id */
  start(plan: RunPlan): Promise<RunHandle>
  /** a fleet run's notices while no worker polls its task queue (SDK only; undefined over HTTP) */
  watchFleet?(onNotice: (message: string) => void): PollerWatch
  close(): Promise<void>
}

export const runWorkflowId = (runId: string): string => `forge-run-${runId}`

/** Temporal for one run: over HTTP at `httpUrl` when given, else through the SDK at `address`. */
export async function openRunTemporal(config: ForgeConfig, where: { address: string; httpUrl?: string | undefined }): Promise<RunTemporal> {
  if (where.httpUrl === undefined) {
    const { openSdkRunTemporal } = await import('./run-temporal-sdk.js')
    return openSdkRunTemporal(config, where.address)
  }
  return httpRunTemporal(config, where.httpUrl)
}

function httpRunTemporal(config: ForgeConfig, httpUrl: string): RunTemporal {
  // the stack's state says where its dev server listens now: a restart may have moved its HTTP port
  const http = temporalHttpClient(() => currentTemporalHttpUrl(config) ?? httpUrl, config.temporal.namespace)
  return {
    via: 'http',
    async start(plan) {
      const workflowId = runWorkflowId(plan.run_id)
      try {
        await http.startWorkflow({ workflowId, workflowType: 'RunWorkflow', taskQueue: config.temporal.taskQueue, args: [{ plan }], reusePolicy: 'REJECT_DUPLICATE' })
      } catch (error) {
        throw error instanceof TemporalHttpError && error.code === GRPC_ALREADY_EXISTS ? runIdTakenByTemporal(plan.run_id, error) : error
      }
      return {
        result: async () => (await http.result(workflowId)) as RunWorkflowResult,
        cancel: () => http.cancel(workflowId),
        terminate: (reason) => http.terminate(workflowId, reason),
      }
    },
    async close() {
      http.close()
    },
  }
}
