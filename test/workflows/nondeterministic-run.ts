/**
 * A deliberately incompatible RunWorkflow, used only to prove the replay test can fail: it starts
 * its first shard before recording the run, the kind of reordering that breaks running histories.
 */
import { executeChild, workflowInfo } from '@temporalio/workflow'
import type { RunTally, RunWorkflowInput } from '../../workflows/run.js'

export async function RunWorkflow(input: RunWorkflowInput): Promise<RunTally> {
  return await executeChild<(arg: unknown) => Promise<RunTally>>('ShardWorkflow', {
    workflowId: `${workflowInfo().workflowId}/shard-0`,
    args: [{ plan: input.plan, start: 0, end: input.plan.task_ids.length * input.plan.attempts }],
  })
}
