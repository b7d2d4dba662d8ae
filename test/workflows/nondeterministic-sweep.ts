/**
 * A deliberately incompatible SweepWorkflow, used only to prove the sweep replay test can fail: it
 * plans its first cell before recording the sweep as running, the kind of reordering that breaks
 * sweeps already in flight (a Schedule's nightly sweep is one when a worker is upgraded).
 */
import { proxyActivities } from '@temporalio/workflow'
import type { SweepActivities } from '../../workers/sweep-activity-types.js'
import type { SweepWorkflowInput } from '../../workflows/sweep.js'
import { sweepCells } from '../../core/sweep.js'

export async function SweepWorkflow(input: SweepWorkflowInput): Promise<void> {
  const { planSweepCell } = proxyActivities<SweepActivities>({ startToCloseTimeout: '1m' })
  const [first] = sweepCells(input.spec, input.sweep_id ?? 'sweep')
  if (first) await planSweepCell({ sweep_id: input.sweep_id ?? 'sweep', cell: first, spec: input.spec })
}
