/** Runs whose workflow is still running in Temporal: what `forge stack down` must not pull the stack from. */
import { Client, Connection } from '@temporalio/client'
import type { ForgeConfig } from '../config/index.js'
import { currentEndpoints } from '../stack/local-stack.js'

/** Run ids of every open RunWorkflow; [] when Temporal is not running. */
export async function activeRunIds(config: ForgeConfig): Promise<string[]> {
  const address = currentEndpoints(config).temporalAddress
  if (address === undefined) return []
  const connection = await Connection.connect({ address, connectTimeout: 5_000 })
  try {
    const client = new Client({ connection, namespace: config.temporal.namespace })
    const ids: string[] = []
    for await (const execution of client.workflow.list({ query: "WorkflowType = 'RunWorkflow' AND ExecutionStatus = 'Running'" })) {
      ids.push(execution.workflowId.replace(/^forge-run-/, ''))
    }
    return ids.sort()
  } finally {
    await connection.close()
  }
}
