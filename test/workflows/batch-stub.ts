import type { AttemptBatchInput, AttemptSummary, RunActivities } from '../../workers/activity-types.js'

/** A stub batch activity: each item through the stub's runAttempt, `lanes` at a time (absent: one after another), summaries in item order. */
export async function runEachAttempt(activities: Pick<RunActivities, 'runAttempt'>, { base, items, lanes }: AttemptBatchInput): Promise<AttemptSummary[]> {
  const summaries: AttemptSummary[] = []
  let next = 0
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++
      summaries[index] = await activities.runAttempt({ ...base, ...items[index]! })
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(lanes ?? 1, items.length)) }, lane))
  return summaries
}
