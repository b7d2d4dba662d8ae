/**
 * Forge's contracts: every shape that crosses a process, a file or a wire boundary.
 * YAML and JSON come in, these schemas turn them into typed objects; nothing else parses them.
 */
import { z } from 'zod'

const identifier = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.\-]*$/, 'must start with a letter or digit and contain only letters, digits, _ . -')

export const Budget = z
  .object({
    max_tool_calls: z.number().int().positive().default(20),
    max_retries_per_tool: z.number().int().nonnegative().default(3),
    max_duration_ms: z.number().int().positive().default(60_000),
    max_tokens: z.number().int().positive().optional(),
  })
  .strict()
export type Budget = z.infer<typeof Budget>

/** A JSON Schema object describing a tool's arguments (kept as data, checked by the tool proxy). */
export const JsonSchemaObject = z.record(z.string(), z.unknown())

export const ToolSpec = z
  .object({
    name: identifier,
    description: z.string().default(''),
    input_schema: JsonSchemaObject.default({ type: 'object', properties: {} }),
  })
  .strict()
export type ToolSpec = z.infer<typeof ToolSpec>

/** A grader reference in a task file: `type` names a registered grader; the rest is its config. */
export const GraderSpec = z.object({ type: z.string().min(1) }).catchall(z.unknown())
export type GraderSpec = z.infer<typeof GraderSpec>

export const FixtureSpec = z
  .object({
    kind: z.string().min(1).default('file'),
    path: z.string().min(1),
  })
  .catchall(z.unknown())
export type FixtureSpec = z.infer<typeof FixtureSpec>

const TaskFields = z
  .object({
    id: identifier,
    instruction: z.string().min(1),
    input: z.record(z.string(), z.unknown()).default({}),
    tools: z.array(identifier).default([]),
    disallowed_tools: z.array(identifier).default([]),
    budget: Budget.default(Budget.parse({})),
    fixtures: z.array(FixtureSpec).default([]),
    outcome_graders: z.array(GraderSpec).min(1, 'a task needs at least one outcome grader').optional(),
    graders: z.array(GraderSpec).min(1, 'a task needs at least one outcome grader').optional(),
    invariants: z.array(identifier).default([]),
    golden: z.string().min(1).optional(),
    tags: z.array(z.string()).default([]),
    category: z.string().default('general'),
  })
  .strict()

/** One task, as written in one YAML file. `graders:` is accepted as an alias of `outcome_graders:`. */
export const Task = TaskFields.superRefine((task, ctx) => {
  if (task.outcome_graders && task.graders) {
    ctx.addIssue({ code: 'custom', path: ['graders'], message: 'give either outcome_graders or its alias graders, not both' })
  }
  if (!task.outcome_graders && !task.graders) {
    ctx.addIssue({ code: 'custom', path: ['outcome_graders'], message: 'a task needs outcome_graders (or graders)' })
  }
}).transform(({ graders, outcome_graders, ...rest }) => ({
  ...rest,
  outcome_graders: outcome_graders ?? graders ?? [],
}))
export type Task = z.output<typeof Task>
export type TaskFile = z.input<typeof Task>

/** `suite.yaml` at the root of a suite directory. */
export const SuiteManifest = z
  .object({
    name: identifier,
    description: z.string().default(''),
    version: z.string().default('0'),
    tasks: z.string().default('tasks'),
    tools: z.string().optional(),
    invariants: z.string().optional(),
    goldens: z.string().default('goldens'),
    fixtures: z.string().default('fixtures'),
  })
  .strict()
export type SuiteManifest = z.infer<typeof SuiteManifest>

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

export const ToolCall = z.object({
  index: z.number().int().nonnegative(),
  name: z.string(),
  args: z.unknown(),
  result: z.unknown().optional(),
  error: z.string().optional(),
  /** why the harness refused the call, when it did: a tool not on the allowlist, a denylisted one, bad args, past budget. */
  refused: z.enum(['hallucinated_tool', 'disallowed_tool', 'malformed_tool_call', 'budget_exhausted']).optional(),
  injected_fault: z.string().optional(),
  retry_index: z.number().int().nonnegative(),
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

export const BudgetLimit = z.enum(['max_tool_calls', 'max_retries_per_tool', 'max_duration_ms', 'max_tokens'])
export type BudgetLimit = z.infer<typeof BudgetLimit>

/** Everything one attempt of an agent did, as captured by the harness. */
export const AgentTrace = z.object({
  output: z.unknown(),
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
})
export type AgentTrace = z.infer<typeof AgentTrace>
export type AgentTraceInput = z.input<typeof AgentTrace>

export const Outcome = z.enum(['pass', 'fail', 'partial', 'violation'])
export type Outcome = z.infer<typeof Outcome>
export const Validity = z.enum(['valid', 'degraded', 'invalid'])
export type Validity = z.infer<typeof Validity>

/** In priority order: a failed attempt gets the first that applies. */
export const FAILURE_BUCKETS = [
  'tool_error',
  'malformed_tool_call',
  'hallucinated_tool',
  'budget_exhausted',
  'wrong_answer',
  'no_answer',
  'refusal',
  'harness_error',
] as const
export const FailureBucket = z.enum(FAILURE_BUCKETS)
export type FailureBucket = z.infer<typeof FailureBucket>

export const Grade = z.object({
  grader: z.string(),
  passed: z.boolean(),
  score: z.number().min(0).max(1),
  detail: z.string().default(''),
})
export type Grade = z.infer<typeof Grade>

export const InvariantResult = z.object({
  name: z.string(),
  passed: z.boolean(),
  detail: z.string().default(''),
})
export type InvariantResult = z.infer<typeof InvariantResult>

/** The verdict and measurements of one attempt: what is published to NATS and stored as one row. */
export const AttemptResult = z.object({
  attempt_uid: z.string(),
  run_id: z.string(),
  config_id: z.string(),
  suite: z.string(),
  task_id: z.string(),
  attempt: z.number().int().nonnegative(),
  adapter: z.string(),
  outcome: Outcome,
  validity: Validity,
  failure_bucket: FailureBucket.nullable(),
  budget_limit: BudgetLimit.nullable(),
  grades: z.array(Grade),
  invariants: z.array(InvariantResult),
  instruction: z.string(),
  output: z.string(),
  self_report: z.string(),
  error: z.string(),
  cost_usd: z.number().nonnegative().nullable(),
  latency_ms: z.number().nonnegative(),
  tool_call_count: z.number().int().nonnegative(),
  input_tokens: z.number().int().nonnegative(),
  output_tokens: z.number().int().nonnegative(),
  model: z.string(),
  decoding: z.record(z.string(), z.unknown()),
  price_table_version: z.string(),
  seed: z.string(),
  worker_id: z.string(),
  started_at: z.number(),
  finished_at: z.number(),
  tool_calls: z.array(ToolCall),
})
export type AttemptResult = z.infer<typeof AttemptResult>

/** A run's metadata row; published at start and again (newer `updated_at`) when it ends. */
export const RunRecord = z.object({
  run_id: z.string(),
  suite: z.string(),
  suite_path: z.string(),
  adapter: z.string(),
  config_id: z.string(),
  attempts: z.number().int().positive(),
  task_count: z.number().int().nonnegative(),
  seed: z.string(),
  status: z.enum(['running', 'completed', 'failed', 'cancelled']),
  started_at: z.number(),
  finished_at: z.number().nullable(),
  updated_at: z.number(),
  price_table_version: z.string(),
  // stamps that tell whether two runs are comparable; defaults keep older messages valid
  price_table_date: z.string().default(''),
  /** content hash of the suite directory (LoadedSuite.contentHash) */
  suite_hash: z.string().default(''),
  judge_model: z.string().default(''),
  judge_prompt_version: z.string().default(''),
  /** the Wilson-width stopping rule of a sequential run; 0 = every task ran all its attempts */
  stop_width: z.number().nonnegative().default(0),
  /** tasks a sequential run stopped early because their interval was narrow enough */
  stopped_tasks: z.array(z.string()).default([]),
})
export type RunRecord = z.infer<typeof RunRecord>

/**
 * A baseline: a stored run tagged with a name, the commit and agent version it measured. Setting a
 * name again adds the next version; `forge compare --baseline <name>` reads the newest.
 */
export const BaselineRecord = z.object({
  name: identifier,
  version: z.number().int().positive(),
  run_id: z.string().min(1),
  suite: z.string(),
  commit_hash: z.string(),
  agent_version: z.string(),
  note: z.string().default(''),
  created_at: z.number(),
})
export type BaselineRecord = z.infer<typeof BaselineRecord>

/**
 * Opt-in sequential stopping: a task's attempts run in rounds and stop once its Wilson 95% interval
 * is at most `width` wide (after at least `min_attempts`), or at the plan's `attempts`.
 */
export const SequentialRule = z
  .object({
    width: z.number().gt(0).lt(1),
    round_size: z.number().int().positive().max(500).default(10),
    min_attempts: z.number().int().positive().default(10),
  })
  .strict()
export type SequentialRule = z.infer<typeof SequentialRule>

/** Input of RunWorkflow: small on purpose (ids, not tasks). */
export const RunPlan = z.object({
  run_id: z.string(),
  config_id: z.string(),
  suite_path: z.string(),
  suite: z.string(),
  task_ids: z.array(z.string()).min(1),
  attempts: z.number().int().positive(),
  adapter: z.string(),
  adapter_config: z.record(z.string(), z.unknown()).default({}),
  seed: z.string(),
  shard_size: z.number().int().positive().max(1000).default(1000),
  max_in_flight: z.number().int().positive().max(500).default(200),
  /** how many shard children run at once */
  max_shards_in_flight: z.number().int().positive().max(50).default(4),
  /** start-to-close limit of one attempt activity (the largest task budget plus grace) */
  attempt_timeout_ms: z.number().int().positive().default(10 * 60_000),
  /** a worker that stops heartbeating this long is presumed dead; its attempt is retried elsewhere */
  heartbeat_timeout_ms: z.number().int().positive().default(30_000),
  price_table_version: z.string().default(''),
  price_table_date: z.string().default(''),
  suite_hash: z.string().default(''),
  judge_model: z.string().default(''),
  judge_prompt_version: z.string().default(''),
  /** absent: every task runs all its attempts (the shard path) */
  sequential: SequentialRule.optional(),
})
export type RunPlan = z.infer<typeof RunPlan>

/** `run_id/config_id/task_id/attempt` — the business key: NATS msg id, ClickHouse key, seed source. */
export function attemptUid(runId: string, configId: string, taskId: string, attempt: number): string {
  return `${runId}/${configId}/${taskId}/${attempt}`
}
