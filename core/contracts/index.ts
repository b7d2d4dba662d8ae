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

/** A relative path under the suite's fixtures directory (checked by suite validation). */
const fixturePath = z.string().min(1)
const recordId = z.union([z.string().min(1), z.number()])

/** Fixture conditions: failures layered on a fixture's starting state (see FixtureSpec). */
const MissingFiles = z.object({ type: z.literal('missing_records'), paths: z.array(z.string().min(1)).min(1) }).strict()
const DuplicateFiles = z
  .object({ type: z.literal('duplicate_records'), paths: z.array(z.string().min(1)).min(1), suffix: z.string().min(1).default(' (copy)') })
  .strict()
/** `where` is a SQL boolean expression over the table's columns; without it every row is affected */
const MissingRows = z.object({ type: z.literal('missing_records'), table: identifier, where: z.string().min(1).optional() }).strict()
const DuplicateRows = z.object({ type: z.literal('duplicate_records'), table: identifier, where: z.string().min(1).optional() }).strict()
const MissingRecords = z.object({ type: z.literal('missing_records'), collection: identifier, ids: z.array(recordId).min(1) }).strict()
const DuplicateRecords = z.object({ type: z.literal('duplicate_records'), collection: identifier, ids: z.array(recordId).min(1) }).strict()
/** the token the service hands out at seeding is already expired: calls get 401 until refreshed */
const ExpiredToken = z.object({ type: z.literal('expired_token') }).strict()
/** requests under `paths` (all when absent) fail with `status`; only the first `requests` of them when given */
const Outage = z
  .object({
    type: z.literal('outage'),
    paths: z.array(z.string().startsWith('/', 'a path starts with /')).min(1).optional(),
    status: z.number().int().min(400).max(599).default(503),
    requests: z.number().int().positive().optional(),
  })
  .strict()

export const WorkspaceCondition = z.discriminatedUnion('type', [MissingFiles, DuplicateFiles])
export type WorkspaceCondition = z.infer<typeof WorkspaceCondition>
export const SqliteCondition = z.discriminatedUnion('type', [MissingRows, DuplicateRows])
export type SqliteCondition = z.infer<typeof SqliteCondition>
export const HttpCondition = z.discriminatedUnion('type', [ExpiredToken, Outage, MissingRecords, DuplicateRecords])
export type HttpCondition = z.infer<typeof HttpCondition>

/** Read-only file contents a task's tools see through `ctx.fixtures` (the original fixture kind). */
export const FileFixture = z.object({ kind: z.literal('file').default('file'), path: fixturePath }).strict()
/** A per-attempt copy of a directory of files in a temp dir (no VCS metadata, nothing else of the suite). */
export const WorkspaceFixture = z
  .object({
    kind: z.literal('workspace'),
    name: identifier.default('workspace'),
    from: fixturePath,
    conditions: z.array(WorkspaceCondition).default([]),
    /** read back after seeding: these paths must exist, those must not */
    expect: z.object({ files: z.array(z.string().min(1)).optional(), absent: z.array(z.string().min(1)).optional() }).strict().optional(),
  })
  .strict()
/**
 * A per-attempt SQLite database seeded from SQL files, then CSV files (`table: file.csv`, header row
 * first), then `sql_after` files (overlays that need the loaded rows).
 */
export const SqliteFixture = z
  .object({
    kind: z.literal('sqlite'),
    name: identifier.default('db'),
    sql: z.union([fixturePath, z.array(fixturePath).min(1)]).optional(),
    csv: z.record(identifier, fixturePath).optional(),
    sql_after: z.union([fixturePath, z.array(fixturePath).min(1)]).optional(),
    conditions: z.array(SqliteCondition).default([]),
    /** read back after seeding: row counts by table */
    expect: z.object({ rows: z.record(identifier, z.number().int().nonnegative()) }).strict().optional(),
  })
  .strict()
  .refine((f) => f.sql !== undefined || f.csv !== undefined, { message: 'a sqlite fixture needs `sql` or `csv` to seed from', path: ['sql'] })
/**
 * A per-attempt HTTP service on 127.0.0.1 serving a directory: every `<name>.json` holding an
 * array is a collection of records with `id`s (GET list with field filters, GET one; POST, PATCH
 * and DELETE when `writable`), every other file is served as a document at its path.
 */
export const HttpFixture = z
  .object({
    kind: z.literal('http'),
    name: identifier.default('api'),
    from: fixturePath,
    writable: z.boolean().default(false),
    conditions: z.array(HttpCondition).default([]),
    /** read back after seeding: record counts by collection */
    expect: z.object({ records: z.record(identifier, z.number().int().nonnegative()) }).strict().optional(),
  })
  .strict()

/** A task's fixture; `kind` defaults to `file`, so `{ path: kv.json }` stays a file fixture. */
export const FixtureSpec = z.discriminatedUnion('kind', [FileFixture, WorkspaceFixture, SqliteFixture, HttpFixture])
export type FixtureSpec = z.infer<typeof FixtureSpec>
export type FileFixture = z.infer<typeof FileFixture>
export type WorkspaceFixture = z.infer<typeof WorkspaceFixture>
export type SqliteFixture = z.infer<typeof SqliteFixture>
export type HttpFixture = z.infer<typeof HttpFixture>
/** The fixtures that get a per-attempt environment instance (every kind but `file`). */
export type EnvironmentFixture = WorkspaceFixture | SqliteFixture | HttpFixture

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

/**
 * How a judge call was made: the model, the prompt version and the decoding settings. Stamped on
 * every judge result (grades, metrics, golden divergence) so runs judged differently can be told apart.
 */
export const JudgeStamp = z.object({
  model: z.string(),
  prompt_version: z.string(),
  decoding: z.record(z.string(), z.unknown()).default({}),
})
export type JudgeStamp = z.infer<typeof JudgeStamp>

export const Grade = z.object({
  grader: z.string(),
  passed: z.boolean(),
  score: z.number().min(0).max(1),
  detail: z.string().default(''),
  /** a broken Never-rule this grader found (e.g. a state_diff `must_not_change`): the outcome becomes `violation` */
  violation: z.string().optional(),
  /** LLM-backed graders (`judge`): the model, prompt version and decoding settings of the call */
  judge: JudgeStamp.optional(),
})
export type Grade = z.infer<typeof Grade>

/**
 * What happened to an attempt's environment instance: `restored` (restore verified, the instance
 * goes back to the pool), `quarantined` (restore not verified: never reused, `detail` says why) or
 * `seed_unverified` (the seed could not be read back: the agent was never invoked).
 */
export const EnvironmentReport = z.object({
  instance: z.string(),
  status: z.enum(['restored', 'quarantined', 'seed_unverified']),
  /** the instance served an earlier attempt and was restored and verified since */
  reused: z.boolean(),
  detail: z.string().default(''),
})
export type EnvironmentReport = z.infer<typeof EnvironmentReport>

export const InvariantResult = z.object({
  name: z.string(),
  passed: z.boolean(),
  detail: z.string().default(''),
})
export type InvariantResult = z.infer<typeof InvariantResult>

/**
 * A run's judge (RunPlan.judge): tier-2 golden divergence and the LLM-judge metrics run on their
 * own task queue, rate-limited by the judge workers. Absent: nothing is sent to a judge worker.
 */
export const JudgeSettings = z
  .object({
    /** any model the OpenAI-compatible endpoint serves (FORGE_JUDGE_BASE_URL, else OPENAI_BASE_URL) */
    model: z.string().min(1),
    task_queue: z.string().min(1).default('forge-judge'),
    /** judge metrics to score (core/metrics); absent: all of them, []: none */
    metrics: z.array(z.string().min(1)).optional(),
    /** `deterministic`: judge metrics only for attempts whose gating deterministic metrics passed; `none`: every attempt */
    gate: z.enum(['deterministic', 'none']).default('deterministic'),
    /** tier 2: localize the earliest wrong decision of failed attempts of tasks with a golden trace */
    golden_divergence: z.boolean().default(true),
    temperature: z.number().min(0).max(2).default(0),
    top_p: z.number().gt(0).max(1).optional(),
    /** null sends no seed */
    seed: z.number().int().nullable().default(0),
    /** completion tokens per judge call */
    max_tokens: z.number().int().positive().default(512),
    /** how strict JSON is asked for: a JSON Schema, any JSON object, or only by the prompt */
    response_format: z.enum(['json_schema', 'json_object', 'none']).default('json_schema'),
    /** the trace shown to the judge is cut to about this many characters */
    max_prompt_chars: z.number().int().min(500).default(16_000),
    /** tier-2 localizations below this confidence flag the attempt for human review */
    min_confidence: z.number().min(0).max(1).default(0.5),
    timeout_ms: z.number().int().positive().default(120_000),
  })
  .strict()
export type JudgeSettings = z.infer<typeof JudgeSettings>
export type JudgeSettingsInput = z.input<typeof JudgeSettings>

/** One metric of one attempt (core/metrics): stored as a row of `metrics` with the metric's version. */
export const MetricValue = z.object({
  metric: z.string(),
  version: z.number().int().positive(),
  kind: z.enum(['deterministic', 'judge']),
  /** `not_applicable`: nothing to measure (e.g. no token budget); `skipped`: the judge was not asked (gate); `errored`: the judge gave no usable answer */
  status: z.enum(['scored', 'not_applicable', 'skipped', 'errored']),
  value: z.number().nullable(),
  /** null for informational metrics and for anything not scored */
  passed: z.boolean().nullable(),
  detail: z.string().default(''),
  /** judge metrics: how the judge was asked */
  judge: JudgeStamp.nullable().default(null),
})
export type MetricValue = z.infer<typeof MetricValue>

export const Tier2Status = z.enum(['not_applicable', 'pending', 'not_run', 'localized', 'not_localized', 'errored'])
export type Tier2Status = z.infer<typeof Tier2Status>

/**
 * Tier 2 — golden divergence of one attempt: only after a tier-0 failure of a task with a golden
 * trace. It localizes (the earliest wrong decision); it never changes the outcome.
 */
export const Tier2Result = z.object({
  status: Tier2Status,
  /** the step (1-based: tool calls in order, then the final answer) where the run went wrong */
  divergence_step: z.number().int().positive().nullable().default(null),
  decision: z.string().default(''),
  explanation: z.string().default(''),
  confidence: z.number().min(0).max(1).nullable().default(null),
  low_confidence: z.boolean().default(false),
  /** judge calls made (a malformed reply is retried once) */
  calls: z.number().int().nonnegative().default(0),
  error: z.string().default(''),
  judge: JudgeStamp.nullable().default(null),
})
export type Tier2Result = z.infer<typeof Tier2Result>

/** The fields that locate one attempt; every per-attempt message and row starts with them. */
export const AttemptKey = z.object({
  attempt_uid: z.string(),
  run_id: z.string(),
  config_id: z.string(),
  suite: z.string(),
  task_id: z.string(),
  attempt: z.number().int().nonnegative(),
})

/** What a person needs to review an attempt without opening anything else (tier 3). */
export const ReviewPacket = z.object({
  attempt_uid: z.string(),
  run_id: z.string(),
  suite: z.string(),
  task_id: z.string(),
  attempt: z.number().int().nonnegative(),
  reasons: z.array(z.string()),
  instruction: z.string(),
  input: z.record(z.string(), z.unknown()),
  output: z.string(),
  outcome: Outcome,
  validity: Validity,
  failure_bucket: FailureBucket.nullable(),
  grades: z.array(Grade),
  invariants: z.array(InvariantResult),
  /** the run step by step: tool calls (name, arguments, result or error), then the answer */
  steps: z.array(z.string()),
  tier2: Tier2Result,
  /** the golden trace the task names, if any */
  golden: z.string().nullable(),
  /** the agent's own account: shown to the reviewer as a claim, never graded */
  self_report: z.string(),
})
export type ReviewPacket = z.infer<typeof ReviewPacket>

/**
 * Tier 2 and tier 3 of one attempt at one grading version. Revision 1 comes from the attempt
 * worker; revision 2 from the judge worker replaces it (tier 2 done, review decided again).
 */
export const Judgement = AttemptKey.extend({
  grading_version: z.number().int().positive().default(1),
  revision: z.number().int().positive(),
  tier0_failed: z.boolean(),
  tier2: Tier2Result,
  /** tier 3 is a flag, not a gate: it never changes outcome or validity */
  needs_human_review: z.boolean(),
  review_reasons: z.array(z.string()).default([]),
  review_packet: ReviewPacket.nullable().default(null),
  created_at: z.number(),
})
export type Judgement = z.infer<typeof Judgement>

/** The verdict and measurements of one attempt: what is published to NATS and stored as one row. */
export const AttemptResult = AttemptKey.extend({
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
  /** present when the task has environment fixtures (workspace, sqlite, http) */
  environment: EnvironmentReport.optional(),
  /** the deterministic metrics (core/metrics), stored as rows of `metrics`; set by the attempt activity */
  metrics: z.array(MetricValue).optional(),
  /** tier 2 / tier 3 as the attempt worker decided them, stored in `judgements`; set by the attempt activity */
  judgement: Judgement.optional(),
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
  /** the run's price table file (absolute); absent: Forge's prices/default.yaml */
  price_table: z.string().min(1).optional(),
  price_table_version: z.string().default(''),
  price_table_date: z.string().default(''),
  suite_hash: z.string().default(''),
  judge_model: z.string().default(''),
  judge_prompt_version: z.string().default(''),
  /** absent: every task runs all its attempts (the shard path) */
  sequential: SequentialRule.optional(),
  /** absent: no judge activity is scheduled (the workflow history stays as before judging existed) */
  judge: JudgeSettings.optional(),
})
export type RunPlan = z.infer<typeof RunPlan>

/** `run_id/config_id/task_id/attempt` — the business key: NATS msg id, ClickHouse key, seed source. */
export function attemptUid(runId: string, configId: string, taskId: string, attempt: number): string {
  return `${runId}/${configId}/${taskId}/${attempt}`
}

/**
 * The full trace of an attempt with what it was graded on, stored beside the attempt row (table
 * `traces`) and readable by the judge worker by attempt_uid: tier 2, the judge metrics, review
 * packets and `forge regrade` work from it without running any agent again.
 */
export const StoredTrace = AttemptKey.extend({
  outcome: Outcome,
  validity: Validity,
  failure_bucket: FailureBucket.nullable(),
  grades: z.array(Grade),
  invariants: z.array(InvariantResult),
  trace: AgentTrace,
  /** the environment view the graders read (core/env-diff EnvironmentView); null without environment fixtures */
  env: z.unknown().nullable().default(null),
  /** what was cut to keep the stored trace under the message limit (e.g. `tool_results`, `env`) */
  truncated: z.array(z.string()).default([]),
  stored_at: z.number(),
})
export type StoredTrace = z.infer<typeof StoredTrace>

/** What the judge worker publishes for one attempt: its judge metrics and the revised judgement. */
export const JudgeOutcome = AttemptKey.extend({
  grading_version: z.number().int().positive().default(1),
  metrics: z.array(MetricValue),
  judgement: Judgement.nullable(),
})
export type JudgeOutcome = z.infer<typeof JudgeOutcome>

/**
 * One stored attempt graded again by `forge regrade` with the current graders, as a new grading
 * version: a new row of `attempt_grades`; the original attempt row is never rewritten.
 */
export const AttemptRegrade = AttemptKey.extend({
  grading_version: z.number().int().min(2),
  outcome: Outcome,
  validity: Validity,
  failure_bucket: FailureBucket.nullable(),
  grades: z.array(Grade),
  invariants: z.array(InvariantResult),
  error: z.string(),
  metrics: z.array(MetricValue).default([]),
  judgement: Judgement.nullable().default(null),
  regraded_at: z.number(),
})
export type AttemptRegrade = z.infer<typeof AttemptRegrade>

/**
 * A person's resolution of a flagged attempt (`forge review resolve`). Appended, never replacing
 * anything: the original grade stays as it was; the newest resolution of an attempt is its current one.
 */
export const ReviewResolution = z.object({
  resolution_id: z.string().min(1),
  attempt_uid: z.string().min(1),
  run_id: z.string(),
  task_id: z.string(),
  grading_version: z.number().int().positive().default(1),
  verdict: z.enum(['pass', 'fail', 'partial', 'violation', 'invalid', 'inconclusive']),
  failure_bucket: FailureBucket.nullable().default(null),
  note: z.string().default(''),
  reviewer: z.string().default(''),
  resolved_at: z.number(),
})
export type ReviewResolution = z.infer<typeof ReviewResolution>
