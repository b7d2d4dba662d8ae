/** A stub of the batch activity for workflow tests: each item through the stub's own runAttempt, in order. */
import type { AttemptBatchInput, AttemptSummary, RunActivities } from '../../workers/activity-types.js'

export async function runEachAttempt(activities: Pick<RunActivities, 'runAttempt'>, { base, items }: AttemptBatchInput): Promise<AttemptSummary[]> {
  const summaries: AttemptSummary[] = []
  for (const item of items) summaries.push(await activities.runAttempt({ ...base, ...item }))
  return summaries
}
