/**
 * Trace contracts: what the harness captured of one attempt (AgentTrace) — tool calls, the span
 * tree, token usage, state snapshots, errors and the agent's self-report.
 */
import { z } from 'zod'
import { BudgetLimit } from './task.js'

export const ToolCall = z.object({
  index: z.uint32(),
  name: z.string(),
  args: z.unknown(),
  result: z.unknown().optional(),
  error: z.string().optional(),
  /** why the harness refused the call, when it did: a tool not on the allowlist, a denylisted one, bad args, past budget. */
  refused: z.enum(['hallucinated_tool', 'disallowed_tool', 'malformed_tool_call', 'budget_exhausted']).optional(),
  injected_fault: z.string().optional(),
  /** the answer guard replaced expected answers in the arguments the tool received; where each came from (`outcome_graders[0].expected`) */
  intercepted: z.array(z.string()).optional(),
  retry_index: z.uint32(),
  started_ms: z.number().nonnegative(),
  duration_ms: z.number().nonnegative(),
})
export type ToolCall = z.infer<typeof ToolCall>

export const Span = z.object({
  span_id: z.string(),
  parent_span_id: z.string().nullable(),
  category: z.enum(['attempt', 'agent', 'tool', 'model', 'grading', 'fixture', 'harness']),
  name: z.string(),
  start_ms: z.number().nonnegative(),
  duration_ms: z.number().nonnegative(),
  attributes: z.record(z.string(), z.unknown()).default({}),
})
export type Span = z.infer<typeof Span>

export const TokenUsage = z.object({
  input_tokens: z.number().int().nonnegative().default(0),
  output_tokens: z.number().int().nonnegative().default(0),
})
export type TokenUsage = z.infer<typeof TokenUsage>

/** Everything one attempt of an agent did, as captured by the harness. */
export const AgentTrace = z.object({
  /** absent when the agent gave no answer (JSON drops an undefined key: a stored trace must still parse) */
  output: z.unknown().optional(),
  tool_calls: z.array(ToolCall).default([]),
  spans: z.array(Span).default([]),
  state_snapshots: z.array(z.object({ label: z.string(), at_ms: z.number(), state: z.unknown() })).default([]),
  errors: z.array(z.object({ kind: z.string(), message: z.string() })).default([]),
  usage: TokenUsage.default({ input_tokens: 0, output_tokens: 0 }),
  duration_ms: z.number().nonnegative(),
  /** the budget limit the harness stopped the agent at, if any */
  budget_exhausted: BudgetLimit.optional(),
  /** what the agent says it did: stored, never graded */
  self_report: z.string().optional(),
  /** the agent declined the task (e.g. "I can't help with that") */
  refused: z.boolean().default(false),
  /**
   * why isolation between attempts could not be guaranteed (e.g. an agent service without a reset
   * endpoint); set by the adapter, it makes the attempt's validity `degraded`
   */
  isolation_degraded: z.string().optional(),
  /** the answer guard checked this attempt's tool arguments (forge run --guard-answers) */
  answer_guard: z.boolean().optional(),
})
export type AgentTrace = z.infer<typeof AgentTrace>
export type AgentTraceInput = z.input<typeof AgentTrace>
