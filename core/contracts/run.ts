/**
 * Run contracts: RunPlan (the input of RunWorkflow), its JudgeSettings and SequentialRule, and
 * RunRecord (a run's metadata row).
 */
import { z } from 'zod'
import { FaultPlan } from './faults.js'


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
  attempts: z.uint32().positive(),
  adapter: z.string(),
  adapter_config: z.record(z.string(), z.unknown()).default({}),
  seed: z.string(),
  shard_size: z.number().int().positive().max(1000).default(1000),
  max_in_flight: z.number().int().positive().max(500).default(200),
  /**
   * attempts one attempt activity runs, one after another (issue 15): fewer Temporal round trips per
   * attempt. The shard lowers it so its window of max_in_flight activities still fills; absent: 1.
   */
  attempts_per_activity: z.number().int().positive().max(100).optional(),
  /**
   * attempts one attempt activity runs at once (issue 15): a shard then keeps max_in_flight / lanes
   * activities in flight, each of lanes × attempts_per_activity attempts, so a run of fast attempts
   * costs Temporal a tenth of the activities. Set for runs whose workers Forge starts itself (it
   * knows their attempt slots; a worker never runs more attempts at once than its slots); absent: 1.
   */
  attempt_lanes: z.number().int().positive().max(50).optional(),
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
  /** false (`forge run --no-redact`): workers store secrets and PII as the agent produced them */
  redact: z.boolean().default(true),
  /** `forge run --guard-answers`: the tool proxy redacts the task's expected answers from tool arguments */
  guard_answers: z.boolean().default(false),
  /** absent: no fault is injected (attempt inputs stay as before fault injection existed) */
  faults: FaultPlan.optional(),
  /**
   * who planned it (store/grants.ts): HMACs under the results key over the plan, its attempts' run
   * scope and its judge's; a worker holding the key refuses activities without a valid one
   */
  grants: z.object({ plan: z.string(), attempts: z.string(), judge: z.string().optional() }).strict().optional(),
})
export type RunPlan = z.infer<typeof RunPlan>

/** A run's metadata row; published at start and again (newer `updated_at`) when it ends. */
export const RunRecord = z.object({
  run_id: z.string(),
  suite: z.string(),
  suite_path: z.string(),
  adapter: z.string(),
  config_id: z.string(),
  attempts: z.uint32().positive(),
  task_count: z.uint32(),
  seed: z.string(),
  /**
   * `completed`: every planned attempt stored once; `degraded`: completed, but harness errors over 2%;
   * `incomplete`: attempts missing after reconciliation (`missing_count`, `missing_sample`)
   */
  status: z.enum(['running', 'completed', 'degraded', 'incomplete', 'failed', 'cancelled']),
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
  /** how agent code was isolated: sandbox, unsandboxed (--no-sandbox), in-process (module, sandbox: false); '' when the adapter runs none */
  isolation: z.string().optional(),
  /** false: the run was started with --no-redact (secrets and PII stored as produced) */
  redacted: z.boolean().default(true),
  /** the run was started with --guard-answers */
  guard_answers: z.boolean().default(false),
  /** the head of the run's audit hash chain (core/audit.ts); '' until the run is sealed */
  audit_head: z.string().default(''),
  /** HMAC-SHA256 of the head under FORGE_AUDIT_KEY; '' without a key */
  audit_signature: z.string().default(''),
  // issue 12, set when the run ended: what its completeness check found (0 / [] before, or for older runs)
  /** attempts the run planned (tasks × attempts) */
  planned_attempts: z.uint32().default(0),
  /** planned attempts the store held at the end */
  final_stored: z.uint32().default(0),
  missing_count: z.uint32().default(0),
  /** the first missing attempts as `task#attempt` */
  missing_sample: z.array(z.string()).default([]),
  harness_errors: z.uint32().default(0),
  // fault stamps (issue 13); absent or '' = the run injected no faults
  /** the fault profile the run injected (FaultPlan.profile_hash); compare warns when two runs differ */
  fault_profile_hash: z.string().optional(),
  /** `uniform`, `burst` or `mixed` */
  fault_mode: z.string().optional(),
  /** the nominal fail rate (the highest rule rate) */
  fault_rate: z.number().min(0).max(1).optional(),
  /** the runs of one `--fault-sweep` share it: the points of one recovery curve */
  fault_sweep_id: z.string().optional(),
  /** the profile as canonical JSON, for reports */
  fault_profile: z.string().optional(),
})
export type RunRecord = z.infer<typeof RunRecord>
/** A run record as written: the stamps with defaults may be left out. */
export type RunRecordInput = z.input<typeof RunRecord>

