/**
 * RunWorkflow through the Temporal SDK (app/run-temporal.ts): a cluster Forge did not start (TLS, API
 * keys from FORGE_TEMPORAL_*), fleet runs, and `forge runs resume`. Imported only when used: loading
 * `@temporalio/client` costs a CLI ~0.5 s.
 */
import { Client, Connection, WorkflowExecutionAlreadyStartedError, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client'
import type { ForgeConfig } from '../config/index.js'
import { temporalConnectOptions } from '../stack/temporal-connection.js'
import { TemporalWorkflowEndedError } from '../stack/temporal-http.js'
import type { RunWorkflow } from '../workflows/run.js'
import { watchFleetWorkers } from './fleet-workers.js'
import { runIdTakenByTemporal } from './run-id.js'
import { runWorkflowId, type RunHandle, type RunTemporal } from './run-temporal.js'

export async function openSdkRunTemporal(config: ForgeConfig, address: string): Promise<RunTemporal> {
  // a fleet's Temporal may want TLS or an API key (FORGE_TEMPORAL_TLS*, FORGE_TEMPORAL_API_KEY), as its workers do
  const connection = await Connection.connect(temporalConnectOptions(address))
  const client = new Client({ connection, namespace: config.temporal.namespace })
  return {
    via: 'sdk',
    async start(plan) {
      const handle = await client.workflow
        .start<typeof RunWorkflow>('RunWorkflow', { taskQueue: config.temporal.taskQueue, workflowId: runWorkflowId(plan.run_id), args: [{ plan }], workflowIdReusePolicy: 'REJECT_DUPLICATE' })
        .catch((error: unknown) => {
          throw error instanceof WorkflowExecutionAlreadyStartedError ? runIdTakenByTemporal(plan.run_id, error) : error
        })
      return sdkRunHandle(handle)
    },
    watchFleet: (onNotice) => watchFleetWorkers(client, config, (event) => onNotice(event.message)),
    close: () => connection.close(),
  }
}

/** An SDK workflow handle as a RunHandle: a closed workflow's failure becomes TemporalWorkflowEndedError. */
export function sdkRunHandle(handle: WorkflowHandle<typeof RunWorkflow>): RunHandle {
  return {
    result: () =>
      handle.result().catch((error: unknown) => {
        if (!(error instanceof WorkflowFailedError)) throw error
        const messages: string[] = []
        for (let e: unknown = error.cause; e instanceof Error; e = e.cause) messages.push(e.message)
        throw new TemporalWorkflowEndedError(messages.at(-1) ?? error.message, 'failed', messages)
      }),
    cancel: async () => {
      await handle.cancel()
    },
    terminate: async (reason) => {
      await handle.terminate(reason)
    },
  }
}
