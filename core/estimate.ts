/**
 * Token and cost estimates for `forge run --dry-run`, before any model is called. Observed usage
 * of earlier attempts beats the payload heuristic whenever there is some. Pure.
 */
import type { InvocationPayload } from './contracts/index.js'
import { costOf, type PriceTable } from './pricing.js'

export interface TokenUsageEstimate {
  input_tokens: number
  output_tokens: number
}

/** Output tokens assumed per model turn by the heuristic. */
export const OUTPUT_TOKENS_PER_TURN = 150

/**
 * A rough per-attempt usage from the payload alone: ~4 characters per token; one model turn per
 * allowlisted tool plus the answer (capped by the tool-call budget), each turn re-sending the
 * payload and the conversation so far (tool results assumed as long as the call's output).
 */
export function heuristicUsage(payload: InvocationPayload): TokenUsageEstimate {
  const promptTokens = Math.ceil(JSON.stringify(payload).length / 4)
  const turns = Math.min(payload.tools.length, payload.budget.max_tool_calls) + 1
  let input = 0
  for (let turn = 0; turn < turns; turn++) input += promptTokens + turn * 2 * OUTPUT_TOKENS_PER_TURN
  return { input_tokens: input, output_tokens: turns * OUTPUT_TOKENS_PER_TURN }
}

export interface CostEstimate {
  model: string
  attempts: number
  input_tokens: number
  output_tokens: number
  /** USD; null when the model has no price in the table (unavailable, never zero) */
  cost_usd: number | null
  /** `observed`: mean usage of earlier attempts of this suite and model; `heuristic`: from payload sizes */
  source: 'observed' | 'heuristic'
  /** how many earlier attempts the observed mean is over */
  observed_attempts: number
  price_table: { version: string; date: string }
}

/** The estimated usage and cost of `attempts` attempts of each task, priced from `table`. */
export function estimateRunCost(opts: {
  model: string
  table: PriceTable
  attemptsPerTask: number
  /** per-attempt usage of each task from the heuristic */
  perTask: readonly TokenUsageEstimate[]
  /** mean per-attempt usage of earlier attempts, when there were any */
  observed?: { attempts: number; input_tokens: number; output_tokens: number }
}): CostEstimate {
  const taskCount = opts.perTask.length
  const attempts = taskCount * opts.attemptsPerTask
  let input: number
  let output: number
  if (opts.observed && opts.observed.attempts > 0) {
    input = Math.round(opts.observed.input_tokens * attempts)
    output = Math.round(opts.observed.output_tokens * attempts)
  } else {
    input = opts.perTask.reduce((total, t) => total + t.input_tokens, 0) * opts.attemptsPerTask
    output = opts.perTask.reduce((total, t) => total + t.output_tokens, 0) * opts.attemptsPerTask
  }
  return {
    model: opts.model,
    attempts,
    input_tokens: input,
    output_tokens: output,
    cost_usd: costOf(opts.table, opts.model, { input_tokens: input, output_tokens: output }),
    source: opts.observed && opts.observed.attempts > 0 ? 'observed' : 'heuristic',
    observed_attempts: opts.observed?.attempts ?? 0,
    price_table: { version: opts.table.version, date: opts.table.date },
  }
}
