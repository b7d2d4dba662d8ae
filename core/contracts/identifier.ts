/**
 * The shared field schemas of the contracts: the identifier rule for names a person writes
 * (task ids, tool names, fixture names, baseline names). Internal: not re-exported by the index.
 */
import { z } from 'zod'

export const identifier = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.\-]*$/, 'must start with a letter or digit and contain only letters, digits, _ . -')
