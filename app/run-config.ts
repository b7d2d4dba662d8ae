/**
 * A run's configuration: one zod-validated object, snake_case like the `RunPlan` it becomes
 * (app/plan-run.ts). `forge run`'s flags map onto it (`runConfigFromFlags`); tests and the bench
 * write it directly. It is validated once, when a run is planned, and every problem is reported at
 * once, naming the flag. The price table is its own field, never part of the adapter's settings.
 */
import { z } from 'zod'
import { FaultPlan, JudgeSettings, SequentialRule } from '../core/contracts/index.js'
import { ConfigError } from '../core/errors.js'
import { selectJudgeMetrics } from '../core/metrics/index.js'
import { secretsByValue } from '../core/secret-refs.js'
import { adapters } from '../engine/adapters/index.js'

const wholeNumber = (min: number, max: number) =>
  z.number(`must be a whole number from ${min} to ${max}`).int(`must be a whole number from ${min} to ${max}`).min(min, `must be a whole number from ${min} to ${max}`).max(max, `must be a whole number from ${min} to ${max}`)

const RunConfigObject = z
  .object({
    /** a bundled suite's name, a directory, or an npm package */
    suite: z.string().min(1, 'must name a suite'),
    adapter: z.string().refine((name) => adapters.has(name), { error: (issue) => `names an unknown adapter ${JSON.stringify(issue.input)} (known adapters: ${[...adapters.keys()].join(', ')})` }),
    /** the adapter's settings; part of the config id. Secrets only by reference (core/secret-refs.ts): the plan is kept in Temporal's history */
    adapter_config: z
      .record(z.string(), z.unknown(), 'must be a JSON object')
      .default({})
      .superRefine((config, ctx) => {
        const byValue = secretsByValue(config)
        if (byValue.length === 0) return
        ctx.addIssue({
          code: 'custom',
          input: config,
          message: `holds a secret by value at ${byValue.join(', ')}: pass it by reference, e.g. {"${byValue[0]!.split('.').at(-1)}": {"from_env": "NAME"}} or {"from_file": "/path"}, which the worker resolves (run plans and activity inputs are kept in Temporal's history)`,
        })
      }),
    /** attempts per task */
    attempts: wholeNumber(1, 1_000_000),
    /** the run seed: the same seed reproduces the mock agent and fault decisions; default: random */
    seed: z.string().min(1).optional(),
    /** worker processes this run starts; 0: none, `forge worker` processes elsewhere (a fleet) run it */
    workers: wholeNumber(0, 256),
    /** attempts each worker process runs at once */
    concurrency: wholeNumber(1, 1000),
    /** only these tasks; empty: every task of the suite */
    task_ids: z.array(z.string().min(1)).default([]),
    /** default: a new id */
    run_id: z.string().regex(/^[A-Za-z0-9_-]{1,100}$/, 'may contain only letters, digits, _ and - (at most 100)').optional(),
    max_in_flight: wholeNumber(1, 500).optional(),
    heartbeat_timeout_ms: z.number().int().positive().optional(),
    /** how long to wait for ClickHouse to hold every published attempt */
    ingest_timeout_ms: z.number().int().positive().default(120_000),
    /** a price table file (default: Forge's prices/default.yaml); its version and date are stamped on the run */
    price_table: z.string().min(1, 'must name a price table file').optional(),
    /** opt-in sequential stopping: a task stops once its Wilson interval is at most `width` wide */
    sequential: SequentialRule.optional(),
    /**
     * The run's judge: tier-2 golden divergence and the LLM-judge metrics, run by judge workers on
     * their own task queue (default: FORGE_JUDGE_TASK_QUEUE); also the default model of the tasks'
     * `judge` graders. Its model, prompt versions and decoding are stamped on the run.
     */
    judge: JudgeSettings.extend({ task_queue: z.string().min(1).optional() })
      .superRefine((judge, ctx) => {
        try {
          selectJudgeMetrics(judge.metrics)
        } catch (error) {
          ctx.addIssue({ code: 'custom', path: ['metrics'], message: (error as Error).message, input: judge.metrics })
        }
      })
      .optional(),
    /** false (--no-redact): secrets and PII are stored as the agent produced them; stamped on the run */
    redact: z.boolean().default(true),
    /** --guard-answers: the tool proxy redacts the task's expected answers from tool arguments; stamped on the run */
    guard_answers: z.boolean().default(false),
    /** the run's fault profile and its stamps (app/faults.ts: from --fault-profile or the --fault-* shorthand); absent: no faults */
    faults: FaultPlan.optional(),
  })
  .strict()

/** A validated run configuration (`price_table` lifted out of the adapter config when it was put there). */
export const RunConfig = z.preprocess(liftPriceTable, RunConfigObject)
export type RunConfig = z.output<typeof RunConfigObject>
export type RunConfigInput = z.input<typeof RunConfigObject>

/**
 * README documents `"price_table"` in the adapter config: it is the run's price table, not an
 * adapter setting, so it moves to its own field (and stays out of the config id).
 */
function liftPriceTable(input: unknown): unknown {
  if (!isRecord(input) || !isRecord(input['adapter_config']) || !('price_table' in input['adapter_config'])) return input
  const { price_table: priceTable, ...adapterConfig } = input['adapter_config']
  return { ...input, adapter_config: adapterConfig, ...(input['price_table'] === undefined ? { price_table: priceTable } : {}) }
}

/** The flag (or field) a problem is about, for messages: `forge run`'s flags where one sets the field. */
const FLAGS: Record<string, string> = {
  suite: '--suite',
  adapter: '--adapter',
  adapter_config: '--adapter-config',
  attempts: '--attempts',
  seed: '--seed',
  workers: '--workers',
  concurrency: '--concurrency',
  task_ids: '--task',
  run_id: '--run-id',
  max_in_flight: '--max-in-flight',
  heartbeat_timeout_ms: '--heartbeat-timeout (ms)',
  price_table: '--price-table',
  'sequential.width': '--stop-at-width',
  'sequential.round_size': '--round-size',
  'sequential.min_attempts': '--min-attempts',
  'judge.model': '--judge-model',
  'judge.metrics': '--judge-metrics',
  'judge.gate': '--judge-gate',
  'judge.max_tokens': '--judge-max-tokens',
  'judge.temperature': '--judge-temperature',
  'judge.golden_divergence': '--golden-divergence',
  redact: '--no-redact',
  guard_answers: '--guard-answers',
  faults: '--fault-profile',
}

function labelOf(path: readonly PropertyKey[]): string {
  const key = path.map(String).join('.')
  return FLAGS[key] ?? FLAGS[path.map(String).filter((p) => !/^\d+$/.test(p)).join('.')] ?? (key || 'run configuration')
}

/** Validates a run configuration; every problem at once in one ConfigError, each naming its flag and value. */
export function parseRunConfig(input: unknown): RunConfig {
  const parsed = RunConfig.safeParse(input, { reportInput: true })
  if (parsed.success) return parsed.data
  const problems = parsed.error.issues.map((issue) => {
    // custom checks name the value themselves
    const got = issue.input === undefined || issue.code === 'unrecognized_keys' || issue.code === 'custom' ? '' : `, got ${JSON.stringify(issue.input)}`
    return `${labelOf(issue.path)} ${issue.message.replace(/^[A-Z]/, (c) => c.toLowerCase())}${got}`
  })
  throw new ConfigError(problems.length === 1 ? problems[0]! : `invalid run configuration:\n  ${problems.join('\n  ')}`)
}

/** `forge run`'s flags, as oclif parses them. */
export interface RunFlags {
  suite: string
  adapter: string
  attempts: number
  seed: string | undefined
  workers: number
  concurrency: number
  task: string[] | undefined
  'run-id': string | undefined
  'adapter-config': string | undefined
  model: string | undefined
  'max-in-flight': number | undefined
  'heartbeat-timeout': number | undefined
  'price-table': string | undefined
  'stop-at-width': string | undefined
  'round-size': number | undefined
  'min-attempts': number | undefined
  'judge-model': string | undefined
  'judge-metrics': string | undefined
  'judge-gate': string | undefined
  'golden-divergence': boolean
  'judge-max-tokens': number | undefined
  'judge-temperature': string | undefined
  /** --no-redact sets it false */
  redact?: boolean
  'guard-answers'?: boolean
}

/**
 * The run configuration `forge run`'s flags ask for (validated when the run is planned). Only
 * what is about flags is checked here: JSON syntax, and flags that apply only with another.
 */
export function runConfigFromFlags(flags: RunFlags): RunConfigInput {
  const dependent = (flag: keyof RunFlags, on: keyof RunFlags) => {
    if (flags[flag] !== undefined && flags[on] === undefined) throw new ConfigError(`--${flag} applies only with --${on}`)
  }
  for (const flag of ['round-size', 'min-attempts'] as const) dependent(flag, 'stop-at-width')
  for (const flag of ['judge-metrics', 'judge-gate', 'judge-max-tokens', 'judge-temperature'] as const) dependent(flag, 'judge-model')
  const metrics = flags['judge-metrics']
  // --model sets "model" in the adapter config; anything but a JSON object is left for validation to name
  const json = flags['adapter-config'] === undefined ? undefined : jsonFlag('adapter-config', flags['adapter-config'])
  const adapterConfig = flags.model === undefined ? json : json === undefined || isRecord(json) ? { ...json, model: flags.model } : json
  const defined = <T extends Record<string, unknown>>(record: T): Partial<T> => Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as Partial<T>
  return {
    ...defined({
      suite: flags.suite,
      adapter: flags.adapter,
      attempts: flags.attempts,
      seed: flags.seed,
      workers: flags.workers,
      concurrency: flags.concurrency,
      task_ids: flags.task,
      run_id: flags['run-id'],
      max_in_flight: flags['max-in-flight'],
      heartbeat_timeout_ms: flags['heartbeat-timeout'] === undefined ? undefined : flags['heartbeat-timeout'] * 1000,
      price_table: flags['price-table'],
      redact: flags.redact,
      guard_answers: flags['guard-answers'],
    }),
    ...(adapterConfig !== undefined ? { adapter_config: adapterConfig } : {}),
    ...(flags['stop-at-width'] !== undefined
      ? { sequential: defined({ width: numberFlag(flags['stop-at-width']), round_size: flags['round-size'], min_attempts: flags['min-attempts'] }) }
      : {}),
    ...(flags['judge-model'] !== undefined
      ? {
          judge: defined({
            model: flags['judge-model'],
            golden_divergence: flags['golden-divergence'],
            metrics: metrics === undefined || metrics === 'all' ? undefined : metrics === 'none' ? [] : metrics.split(',').map((m) => m.trim()).filter((m) => m !== ''),
            gate: flags['judge-gate'] as 'deterministic' | 'none' | undefined,
            max_tokens: flags['judge-max-tokens'],
            temperature: flags['judge-temperature'] === undefined ? undefined : numberFlag(flags['judge-temperature']),
          }),
        }
      : {}),
  } as RunConfigInput
}

/** A number flag's value; text that is no number is kept, so validation names the flag and the text. */
function numberFlag(text: string): number | string {
  const value = Number(text)
  return text.trim() === '' || !Number.isFinite(value) ? text : value
}

function jsonFlag(flag: string, text: string): unknown {
  try {
    return JSON.parse(text) as unknown
  } catch (error) {
    throw new ConfigError(`--${flag} is not valid JSON: ${(error as Error).message}`)
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
