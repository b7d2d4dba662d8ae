/**
 * The attempt's business key: AttemptKey (the fields every per-attempt message and row starts with)
 * (its type, the uid `run_id/config_id/task_id/attempt` and every id derived from it: core/identity.ts).
 */
import { z } from 'zod'

/** The fields that locate one attempt; every per-attempt message and row starts with them. */
export const AttemptKey = z.object({
  attempt_uid: z.string(),
  run_id: z.string(),
  config_id: z.string(),
  suite: z.string(),
  task_id: z.string(),
  attempt: z.uint32(),
})
