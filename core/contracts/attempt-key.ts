/**
 * The attempt's business key: AttemptKey (the fields every per-attempt message and row starts with)
 * and attemptUid, which builds `run_id/config_id/task_id/attempt` from them.
 */
import { z } from 'zod'

/** The fields that locate one attempt; every per-attempt message and row starts with them. */
export const AttemptKey = z.object({
  attempt_uid: z.string(),
  run_id: z.string(),
  config_id: z.string(),
  suite: z.string(),
  task_id: z.string(),
  attempt: z.number().int().nonnegative(),
})

/** `run_id/config_id/task_id/attempt` — the business key: NATS msg id, ClickHouse key, seed source. */
export function attemptUid(runId: string, configId: string, taskId: string, attempt: number): string {
  return `${runId}/${configId}/${taskId}/${attempt}`
}
