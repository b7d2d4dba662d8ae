/**
 * The agent's input contract: InvocationPayload, the only thing an agent ever receives
 * (instruction, input, allowed tool specs, denylist, budget) — never ground truth.
 */
import { z } from 'zod'
import { Budget, ToolSpec } from './task.js'

/**
 * The only thing an agent ever receives. Never expected answers, graders, thresholds, goldens
 * or other tasks: a test asserts the key set structurally.
 */
export const InvocationPayload = z
  .object({
    instruction: z.string(),
    input: z.record(z.string(), z.unknown()),
    tools: z.array(ToolSpec),
    disallowed_tools: z.array(z.string()),
    budget: Budget,
  })
  .strict()
export type InvocationPayload = z.infer<typeof InvocationPayload>
