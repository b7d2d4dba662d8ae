/**
 * Scores of a generated adversarial suite per mutation family ("fails gracefully when a tool is
 * missing: 12/20"): a task's family comes from the suite's adversarial.json when the run's suite
 * directory is still there, else from the generated id (`<parent>.<family>.<variant>`).
 */
import { familyFigures, familyOfTaskId, type FamilyFigures, type MutationFamily } from '../core/adversarial.js'
import type { RunRecord } from '../core/contracts/index.js'
import { rateOf } from '../core/stats.js'
import { readProvenance } from './provenance.js'

export async function familyStats(run: RunRecord | undefined, tasks: readonly { task_id: string; k: number; n: number }[]): Promise<FamilyFigures[] | undefined> {
  const provenance = run === undefined ? undefined : await readProvenance(run.suite_path)
  const familyOf = (taskId: string): MutationFamily | undefined => provenance?.tasks[taskId]?.family ?? familyOfTaskId(taskId)
  if (provenance === undefined && !tasks.some((t) => familyOf(t.task_id) !== undefined)) return undefined
  const figures = familyFigures(tasks, familyOf, rateOf)
  return figures.length > 0 ? figures : undefined
}
