/**
 * Baseline contracts: BaselineRecord, a stored run tagged with a name and the commit and agent
 * version it measured, versioned per name.
 */
import { z } from 'zod'
import { identifier } from './identifier.js'

/**
 * A baseline: a stored run tagged with a name, the commit and agent version it measured. Setting a
 * name again adds the next version; `forge compare --baseline <name>` reads the newest.
 */
export const BaselineRecord = z.object({
  name: identifier,
  version: z.uint32().positive(),
  run_id: z.string().min(1),
  suite: z.string(),
  commit_hash: z.string(),
  agent_version: z.string(),
  note: z.string().default(''),
  created_at: z.number(),
})
export type BaselineRecord = z.infer<typeof BaselineRecord>
