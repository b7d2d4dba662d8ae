/**
 * Fault-injection contracts: a fault profile as written in `faults.yaml` (FaultProfile, its
 * FaultRules) and what a run carries of it (FaultPlan). The decisions themselves are pure functions
 * in core/faults.ts; the worker applies them between the tool proxy and the suite's tools and in
 * the LLM gateway.
 */
import { z } from 'zod'

const FAULT_KIND_NAMES = ['timeout', '500', 'garbage', 'rate_limit', 'slow'] as const

/**
 * What an injected fault does, classified by the recovery it tests:
 * - `timeout`: the call hangs until the profile's per-call timeout, then fails as a timeout;
 * - `500`: a server error at once;
 * - `garbage`: a malformed answer (truncated JSON, wrong types, binary noise, an HTML error page;
 *   for the model: a malformed completion);
 * - `rate_limit`: 429 Too Many Requests with a retry-after;
 * - `slow`: latency added, the answer still correct.
 */
export const FaultKind = z.preprocess(
  // YAML reads `kinds: [500]` as a number
  (value) => (typeof value === 'number' ? String(value) : value),
  z.enum(FAULT_KIND_NAMES),
)
export type FaultKind = z.output<typeof FaultKind>

/** `tools`: calls from the tool proxy to the suite's tools; `model`: completions through the LLM gateway. */
export const FaultTarget = z.enum(['tools', 'model'])
export type FaultTarget = z.infer<typeof FaultTarget>

/** `uniform`: each call fails with probability `rate`; `burst`: contiguous windows of `window` calls fail. */
export const FaultMode = z.enum(['uniform', 'burst'])
export type FaultMode = z.infer<typeof FaultMode>

const rate = z.number().min(0).max(1)
const weight = z.number().positive()

/** One rule of a profile: which calls it may hit (target, tools, tasks), how often and with what. */
export const FaultRule = z
  .object({
    /** a label shown in errors and reports (default `rule <n>`) */
    name: z.string().min(1).optional(),
    target: FaultTarget.default('tools'),
    mode: FaultMode.default('uniform'),
    /**
     * The long-run fraction of the calls in scope that fail. Uniform: each call with this
     * probability. Burst: windows start so that this fraction of calls falls inside one.
     */
    rate,
    /** burst: how many consecutive calls of a tool one outage lasts */
    window: z.number().int().min(1).max(1000).optional(),
    /** the kinds a hit call gets: a list (equal weights) or kind → weight (default: every kind equally) */
    kinds: z.union([z.array(FaultKind).min(1), z.record(z.string(), weight)]).optional(),
    /** scope: only these tools (target `tools`); absent = every tool */
    tools: z.array(z.string().min(1)).min(1).optional(),
    /** scope: only these task ids (`*` matches any run of characters); absent = every task */
    tasks: z.array(z.string().min(1)).min(1).optional(),
  })
  .strict()
  .superRefine((rule, ctx) => {
    if (rule.mode === 'uniform' && rule.window !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['window'], message: 'window applies only to mode: burst' })
    }
    if (rule.target === 'model' && rule.tools !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['tools'], message: 'tools scopes target: tools only (a model rule hits every completion)' })
    }
    if (rule.kinds !== undefined && !Array.isArray(rule.kinds)) {
      for (const key of Object.keys(rule.kinds)) {
        if (!FaultKind.safeParse(key).success) {
          ctx.addIssue({ code: 'custom', path: ['kinds', key], message: `unknown fault kind "${key}" (kinds: ${FAULT_KIND_NAMES.join(', ')})` })
        }
      }
    }
  })
export type FaultRule = z.output<typeof FaultRule>
export type FaultRuleInput = z.input<typeof FaultRule>

/** A fault profile (`faults.yaml`): rules tried in order, the first that hits a call decides its fault. */
export const FaultProfile = z
  .object({
    /** an editor hint (`forge faults schema`); ignored */
    $schema: z.string().optional(),
    name: z.string().min(1).default('faults'),
    description: z.string().default(''),
    /** the per-call timeout a `timeout` fault waits out before it fails the call */
    timeout_ms: z.number().int().positive().max(600_000).default(2_000),
    /** the latency a `slow` fault adds */
    slow_ms: z.number().int().nonnegative().max(600_000).default(500),
    /** the retry-after a `rate_limit` fault announces */
    retry_after_ms: z.number().int().nonnegative().max(600_000).default(1_000),
    rules: z.array(FaultRule).min(1, 'a fault profile needs at least one rule'),
    /** fail rates of a recovery curve (`forge run --fault-profile … ` runs one run per rate) */
    sweep: z.array(rate).min(1).optional(),
  })
  .strict()
export type FaultProfile = z.output<typeof FaultProfile>
export type FaultProfileInput = z.input<typeof FaultProfile>

/**
 * What a run carries of its fault profile (RunPlan.faults): the parsed profile the workers apply,
 * and the stamps recorded on the run so `compare` can tell when two runs met different faults.
 */
export const FaultPlan = z.object({
  profile: FaultProfile,
  /** sha256 of the profile's canonical JSON (sweep rate applied) */
  profile_hash: z.string().min(1),
  /** `uniform`, `burst` or `mixed` (rules of both modes) */
  mode: z.string().min(1),
  /** the nominal fail rate: the highest rule rate */
  rate: rate,
  /** set on every run of one `--fault-sweep` */
  sweep_id: z.string().default(''),
})
export type FaultPlan = z.infer<typeof FaultPlan>
