/**
 * Every FORGE_* environment variable Forge reads: its name, a one-line description, its default and
 * a zod schema that validates the raw text. Nothing else in Forge reads a FORGE_* variable; it asks
 * this module (`readSetting`, `loadSettings`, or `resolveConfig` in ./index.ts). A value that is set
 * but empty or blank counts as unset. A bad value is a ConfigError naming the variable and the value.
 *
 * Variables Forge only *writes* for others are not settings: FORGE_TOOL_URL / FORGE_TOOL_TOKEN (an
 * agent's tool endpoint), FORGE_PYDANTIC_AI (the pydantic-ai bridge's input), FORGE_AGENT_SEED and
 * FORGE_SANDBOX_FORWARDS (the sandboxed module host's).
 */
import { z } from 'zod'
import { ConfigError } from '../core/errors.js'
import { HOME_FALLBACK, SWITCH_OFF, SWITCH_ON, WARM_CLI_FALLBACK } from './early.js'

/** One FORGE_* variable. */
export interface SettingDefinition<T> {
  variable: `FORGE_${string}`
  /** one line: what it sets */
  description: string
  /** the value when the variable is unset */
  fallback: T
  /** the default as `forge config` shows it */
  defaultText: string
  /** validates the variable's (trimmed, non-empty) text and turns it into the value */
  schema: z.ZodType<T, string>
  /** a secret: `forge config` never prints its value */
  secret?: boolean
}

function define<T>(definition: SettingDefinition<T>): SettingDefinition<T> {
  return definition
}

const text = z.string()
const optionalText = text as z.ZodType<string | undefined, string>
const wholeNumber = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, `must be a whole number from ${min} to ${max}`)
    .transform(Number)
    .pipe(z.number().min(min, `must be a whole number from ${min} to ${max}`).max(max, `must be a whole number from ${min} to ${max}`))
const switchValue = z
  .enum([...SWITCH_ON, ...SWITCH_OFF], 'must be 1 or 0 (or true/false, yes/no, on/off)')
  .transform((value) => (SWITCH_ON as readonly string[]).includes(value))
const httpUrl = z.string().regex(/^https?:\/\//, 'must be an http(s) URL')

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

/** Every setting, by the name the code uses. */
/** The parts of `npm run bench` (bench/run-bench.ts), each runnable alone with FORGE_BENCH_ONLY. */
export const BENCH_PARTS = ['e2e', 'ingest', 'stats', 'report', 'ui', 'model', 'faults', 'sandbox', 'latency', 'scale', 'workers', 'hostile'] as const
export type BenchPart = (typeof BENCH_PARTS)[number]

export const SETTINGS = {
  home: define({
    variable: 'FORGE_HOME',
    description: 'Directory of the embedded stack: stack.json, logs, the chDB store (relative to the working directory)',
    fallback: HOME_FALLBACK,
    defaultText: HOME_FALLBACK,
    schema: text,
  }),
  storePath: define({
    variable: 'FORGE_STORE_PATH',
    description: 'Directory of the embedded chDB store (used when FORGE_CLICKHOUSE_URL is unset)',
    fallback: undefined,
    defaultText: '$FORGE_HOME/store',
    schema: optionalText,
  }),
  temporalAddress: define({
    variable: 'FORGE_TEMPORAL_ADDRESS',
    description: 'Temporal frontend (host:port) of a cluster; unset: the local dev server',
    fallback: undefined,
    defaultText: '(unset: local dev server)',
    schema: z.string().regex(/^[\w.-]+:\d+$/, 'must be host:port') as z.ZodType<string | undefined, string>,
  }),
  temporalNamespace: define({ variable: 'FORGE_TEMPORAL_NAMESPACE', description: 'Temporal namespace of runs and workers', fallback: 'default', defaultText: 'default', schema: text }),
  taskQueue: define({ variable: 'FORGE_TASK_QUEUE', description: 'Temporal task queue of runs and attempt activities', fallback: 'forge-attempts', defaultText: 'forge-attempts', schema: text }),
  natsUrl: define({
    variable: 'FORGE_NATS_URL',
    description: 'NATS server (nats://host:port) of a cluster; unset: the local nats-server',
    fallback: undefined,
    defaultText: '(unset: local nats-server)',
    schema: z.string().regex(/^(nats|tls|wss?):\/\/|^[\w.-]+:\d+$/, 'must look like nats://host:port') as z.ZodType<string | undefined, string>,
  }),
  natsUser: define({ variable: 'FORGE_NATS_USER', description: 'NATS user of this process (fleet); unset: the embedded stack\'s generated one for its role', fallback: undefined, defaultText: '(unset)', schema: optionalText }),
  natsPassword: define({ variable: 'FORGE_NATS_PASSWORD', description: 'Password of FORGE_NATS_USER', fallback: undefined, defaultText: '(unset)', schema: optionalText, secret: true }),
  natsTlsCa: define({ variable: 'FORGE_NATS_TLS_CA', description: 'CA certificate file that verifies the NATS server (fleet TLS)', fallback: undefined, defaultText: '(unset)', schema: optionalText }),
  natsTlsCert: define({ variable: 'FORGE_NATS_TLS_CERT', description: 'Client certificate file for NATS (fleet mutual TLS)', fallback: undefined, defaultText: '(unset)', schema: optionalText }),
  natsTlsKey: define({ variable: 'FORGE_NATS_TLS_KEY', description: 'Client key file for NATS (fleet mutual TLS)', fallback: undefined, defaultText: '(unset)', schema: optionalText }),
  resultsKey: define({
    variable: 'FORGE_RESULTS_KEY',
    description: 'Hex key that signs and checks result messages (fleet: the same on workers, ingester and CLI); unset: the embedded stack\'s generated one',
    fallback: undefined,
    defaultText: '(unset: FORGE_HOME/secrets/bus.json)',
    schema: z.string().regex(/^[0-9a-fA-F]{32,}$/, 'must be at least 32 hex digits') as z.ZodType<string | undefined, string>,
    secret: true,
  }),
  clickhouseUrl: define({
    variable: 'FORGE_CLICKHOUSE_URL',
    description: 'ClickHouse server (http(s)://host:port); unset: embedded chDB under FORGE_STORE_PATH',
    fallback: undefined,
    defaultText: '(unset: embedded chDB)',
    schema: httpUrl as z.ZodType<string | undefined, string>,
  }),
  temporalBin: define({
    variable: 'FORGE_TEMPORAL_BIN',
    description: 'The temporal CLI binary of the local dev server',
    fallback: undefined,
    defaultText: '(unset: PATH, then pip scripts)',
    schema: optionalText,
  }),
  natsBin: define({ variable: 'FORGE_NATS_BIN', description: 'The nats-server binary of the local stack', fallback: undefined, defaultText: '(unset: PATH, then pip scripts)', schema: optionalText }),
  workerId: define({
    variable: 'FORGE_WORKER_ID',
    description: "A worker process's identity in Temporal and on its attempts",
    fallback: undefined,
    defaultText: '<hostname>-<pid>',
    schema: optionalText,
  }),
  workerConcurrency: define({
    variable: 'FORGE_WORKER_CONCURRENCY',
    description: 'Attempts a worker process runs at once',
    fallback: 100,
    defaultText: '100',
    schema: wholeNumber(1, 10_000),
  }),
  workerAttemptLanes: define({
    variable: 'FORGE_WORKER_ATTEMPT_LANES',
    description: "Attempts one batch activity runs at once on a worker process: its activity polls reserve that many of its attempt slots (set by forge run for the workers it starts; at most FORGE_WORKER_CONCURRENCY, and a divisor of it leaves no slot unused)",
    fallback: 1,
    defaultText: '1',
    schema: wholeNumber(1, 100),
  }),
  localWorkerProcesses: define({
    variable: 'FORGE_LOCAL_WORKER_PROCESSES',
    description: 'At most this many worker processes for a local forge run; more --workers become attempt slots in them (0: the larger of 4 and the CPU count)',
    fallback: 0,
    defaultText: '0 (auto)',
    schema: wholeNumber(0, 256),
  }),
  warmWorkers: define({
    variable: 'FORGE_WARM_WORKERS',
    description: 'Worker processes a local forge run leaves loaded for the next run of this FORGE_HOME (0: none; capped by the run\'s own)',
    fallback: 1,
    defaultText: '1',
    schema: wholeNumber(0, 256),
  }),
  warmWorkerIdle: define({
    variable: 'FORGE_WARM_WORKER_IDLE',
    description: 'Seconds a warm worker waits for a run before it exits',
    fallback: 600,
    defaultText: '600',
    schema: wholeNumber(1, 86_400),
  }),
  warmWorkerRuns: define({
    variable: 'FORGE_WARM_WORKER_RUNS',
    description: 'Runs a warm worker serves, one after another, before it exits for a fresh one',
    fallback: 20,
    defaultText: '20',
    schema: wholeNumber(1, 10_000),
  }),
  warmWorkerWarmup: define({
    variable: 'FORGE_WARM_WORKER_WARMUP',
    description: "A warm worker waiting for a run warms its JIT up with mock attempts (nothing published or stored) until it has run this many in all, a run's counted, then its workflow worker with one warm-up workflow whose activities nothing runs (0: off)",
    fallback: 3000,
    defaultText: '3000',
    schema: wholeNumber(0, 1_000_000),
  }),
  warmCli: define({
    variable: 'FORGE_WARM_CLI',
    description: 'A local forge run that leaves warm workers also leaves a forge process loaded (oclif and the run command) that runs the next forge run of this FORGE_HOME and exits (0: off)',
    fallback: WARM_CLI_FALLBACK,
    defaultText: '1',
    schema: switchValue,
  }),
  ingesterWarmup: define({
    variable: 'FORGE_INGESTER_WARMUP',
    description: 'An ingester warms its JIT up as it starts: sample result messages through its ingest path (nothing stored, waiting while results come in) until it has handled this many, real ones counted (0: off)',
    fallback: 2000,
    defaultText: '2000',
    schema: wholeNumber(0, 1_000_000),
  }),
  exitWithParent: define({
    variable: 'FORGE_EXIT_WITH_PARENT',
    description: 'A worker process stops when its parent (forge run) is gone (1) or not (0)',
    fallback: false,
    defaultText: '0 (off)',
    schema: switchValue,
  }),
  workerRunId: define({
    variable: 'FORGE_WORKER_RUN_ID',
    description: 'The run a forge run worker serves: once its parent is gone it keeps serving until that run ends',
    fallback: undefined,
    defaultText: '(none)',
    schema: optionalText,
  }),
  judgeWorker: define({
    variable: 'FORGE_JUDGE_WORKER',
    description: 'A worker process also serves the judge task queue (1) or only attempts (0)',
    fallback: true,
    defaultText: '1 (on)',
    schema: switchValue,
  }),
  judgeRate: define({
    variable: 'FORGE_JUDGE_RATE',
    description: 'Judge calls per second across the judge queue, and per process for inline judge graders; 0: unlimited',
    fallback: 0,
    defaultText: '0 (unlimited)',
    schema: z
      .string()
      .transform(Number)
      .pipe(z.number('must be a number of calls per second (0: unlimited)').min(0, 'must be a number of calls per second (0: unlimited)')),
  }),
  judgeConcurrency: define({ variable: 'FORGE_JUDGE_CONCURRENCY', description: 'Judge activities a worker process runs at once', fallback: 4, defaultText: '4', schema: wholeNumber(1, 1000) }),
  judgeTaskQueue: define({ variable: 'FORGE_JUDGE_TASK_QUEUE', description: 'Temporal task queue of judge activities (same on forge run and the workers)', fallback: 'forge-judge', defaultText: 'forge-judge', schema: text }),
  judgeModel: define({
    variable: 'FORGE_JUDGE_MODEL',
    description: "The judge graders' model when neither the grader nor forge run --judge-model names one",
    fallback: undefined,
    defaultText: '(unset)',
    schema: optionalText,
  }),
  judgeBaseUrl: define({
    variable: 'FORGE_JUDGE_BASE_URL',
    description: "The judge's OpenAI-compatible endpoint (…/v1); unset: OPENAI_BASE_URL, else https://api.openai.com/v1",
    fallback: undefined,
    defaultText: '(unset: OPENAI_BASE_URL)',
    schema: httpUrl as z.ZodType<string | undefined, string>,
  }),
  judgeApiKey: define({
    variable: 'FORGE_JUDGE_API_KEY',
    description: "The judge endpoint's API key; unset: OPENAI_API_KEY",
    fallback: undefined,
    defaultText: '(unset: OPENAI_API_KEY)',
    schema: optionalText,
    secret: true,
  }),
  auditKey: define({
    variable: 'FORGE_AUDIT_KEY',
    description: "A key held outside the store: forge run signs each run's audit head with it (HMAC-SHA256), forge audit verify checks it",
    fallback: undefined,
    defaultText: '(unset: heads are not signed)',
    schema: optionalText,
    secret: true,
  }),
  logLevel: define({
    variable: 'FORGE_LOG_LEVEL',
    description: `Level of the JSON logs of workers and the ingester (${LOG_LEVELS.join(', ')})`,
    fallback: 'info' as LogLevel,
    defaultText: 'info',
    schema: z.enum(LOG_LEVELS, `must be one of ${LOG_LEVELS.join(', ')}`),
  }),
  agentVersion: define({
    variable: 'FORGE_AGENT_VERSION',
    description: "The agent version forge baseline set records; unset: the run's config id",
    fallback: undefined,
    defaultText: "(unset: the run's config id)",
    schema: optionalText,
  }),
  chromium: define({ variable: 'FORGE_CHROMIUM', description: 'The Chromium executable of the report bench and the browser tests', fallback: '/usr/bin/chromium', defaultText: '/usr/bin/chromium', schema: text }),
  unshareBin: define({ variable: 'FORGE_UNSHARE_BIN', description: 'The unshare binary the agent sandbox starts agents with', fallback: undefined, defaultText: '(unset: PATH)', schema: optionalText }),
  setprivBin: define({ variable: 'FORGE_SETPRIV_BIN', description: 'The setpriv binary the agent sandbox drops privileges with', fallback: undefined, defaultText: '(unset: PATH)', schema: optionalText }),
  workerRole: define<'all' | 'attempts' | 'judge'>({ variable: 'FORGE_WORKER_ROLE', description: 'forge worker: all (attempt and judge queues), attempts or judge', fallback: 'all', defaultText: 'all', schema: z.enum(['all', 'attempts', 'judge'], 'must be all, attempts or judge') as z.ZodType<'all' | 'attempts' | 'judge', string> }),
  healthPort: define({ variable: 'FORGE_HEALTH_PORT', description: 'Serve /healthz, /readyz and /metrics on this port (workers and the ingester)', fallback: undefined, defaultText: '(unset: no endpoint)', schema: wholeNumber(0, 65535) as z.ZodType<number | undefined, string> }),
  otlpUrl: define({
    variable: 'FORGE_OTLP_URL',
    description: "Workers export each attempt's spans to this OTLP/HTTP collector as it finishes (forge run --otlp-url), e.g. http://127.0.0.1:4318",
    fallback: undefined,
    defaultText: '(unset: no live export)',
    schema: httpUrl as z.ZodType<string | undefined, string>,
  }),
  healthHost: define({ variable: 'FORGE_HEALTH_HOST', description: 'The address the health endpoint listens on', fallback: '0.0.0.0', defaultText: '0.0.0.0', schema: text }),
  shutdownGraceMs: define({ variable: 'FORGE_SHUTDOWN_GRACE_MS', description: 'After SIGTERM, how long in-flight attempts may finish before they are cancelled and retried elsewhere', fallback: 5000, defaultText: '5000', schema: wholeNumber(0, 86_400_000) }),
  resultsKeep: define({
    variable: 'FORGE_RESULTS_KEEP',
    description: 'Seconds a result stays on the bus (the results stream) once the store holds it; the ingester then trims it (0: at once)',
    fallback: 600,
    defaultText: '600',
    schema: wholeNumber(0, 604_800),
  }),
  natsStreamReplicas: define({ variable: 'FORGE_NATS_STREAM_REPLICAS', description: "The results stream's replicas when the ingester creates it (3 on a 3-node cluster)", fallback: 1, defaultText: '1', schema: wholeNumber(1, 5) }),
  clickhouseCluster: define({ variable: 'FORGE_CLICKHOUSE_CLUSTER', description: 'Run migrations as cluster DDL (ON CLUSTER, Replicated engines) on this cluster of a ClickHouse server', fallback: undefined, defaultText: '(unset: single server)', schema: optionalText }),
  clickhouseKeeperPath: define({ variable: 'FORGE_CLICKHOUSE_KEEPER_PATH', description: 'Keeper path prefix of the Replicated tables (cluster mode)', fallback: undefined, defaultText: '(unset: /clickhouse/tables/{shard}/forge)', schema: optionalText }),
  temporalTls: define({ variable: 'FORGE_TEMPORAL_TLS', description: 'Connect to Temporal over TLS', fallback: undefined, defaultText: '(unset: off unless a TLS file is set)', schema: switchValue as z.ZodType<boolean | undefined, string> }),
  temporalTlsCaFile: define({ variable: 'FORGE_TEMPORAL_TLS_CA_FILE', description: "CA certificate (PEM) of the Temporal server", fallback: undefined, defaultText: '(unset)', schema: optionalText }),
  temporalTlsCertFile: define({ variable: 'FORGE_TEMPORAL_TLS_CERT_FILE', description: 'Client certificate (PEM) for mTLS to Temporal', fallback: undefined, defaultText: '(unset)', schema: optionalText }),
  temporalTlsKeyFile: define({ variable: 'FORGE_TEMPORAL_TLS_KEY_FILE', description: 'Client key (PEM) for mTLS to Temporal', fallback: undefined, defaultText: '(unset)', schema: optionalText }),
  temporalTlsServerName: define({ variable: 'FORGE_TEMPORAL_TLS_SERVER_NAME', description: 'TLS server name override of the Temporal server', fallback: undefined, defaultText: '(unset)', schema: optionalText }),
  temporalApiKey: define({ variable: 'FORGE_TEMPORAL_API_KEY', description: 'API key of a Temporal Cloud namespace', fallback: undefined, defaultText: '(unset)', schema: optionalText, secret: true }),
  commit: define({ variable: 'FORGE_COMMIT', description: 'Commit hash stamped on baselines a sweep promotes', fallback: '', defaultText: '(empty)', schema: text }),
  localModelUrl: define({ variable: 'FORGE_LOCAL_MODEL_URL', description: "The OpenAI-compatible endpoint (ending in /v1) that serves `local` models; unset: the stack's own model server", fallback: undefined, defaultText: '(unset: the stack starts one)', schema: httpUrl as z.ZodType<string | undefined, string> }),
  localModelKey: define({ variable: 'FORGE_LOCAL_MODEL_KEY', description: 'The API key of FORGE_LOCAL_MODEL_URL', fallback: undefined, defaultText: '(unset)', schema: optionalText, secret: true }),
  modelsDir: define({ variable: 'FORGE_MODELS_DIR', description: 'A directory of GGUF models looked in before .models/', fallback: undefined, defaultText: '(unset: .models/ only)', schema: optionalText }),
  modelParallel: define({ variable: 'FORGE_MODEL_PARALLEL', description: 'Sequences the local model server generates at once', fallback: 2, defaultText: '2', schema: wholeNumber(1, 64) }),
  modelContext: define({ variable: 'FORGE_MODEL_CONTEXT', description: 'Context size of the local model server, in tokens', fallback: undefined, defaultText: "(unset: the model's own)", schema: wholeNumber(256, 1_048_576) as z.ZodType<number | undefined, string> }),
  modelThreads: define({ variable: 'FORGE_MODEL_THREADS', description: 'CPU threads of the local model server', fallback: undefined, defaultText: '(unset: half the cores)', schema: wholeNumber(1, 1024) as z.ZodType<number | undefined, string> }),
  modelPath: define({ variable: 'FORGE_MODEL_PATH', description: 'The model server process: the GGUF file it serves', fallback: undefined, defaultText: '(unset)', schema: optionalText }),
  modelName: define({ variable: 'FORGE_MODEL_NAME', description: 'The model server process: the name it serves the model under', fallback: 'local', defaultText: 'local', schema: text }),
  modelPort: define({ variable: 'FORGE_MODEL_PORT', description: 'The model server process: its port (0: any free one)', fallback: undefined, defaultText: '(unset: any free port)', schema: wholeNumber(0, 65535) as z.ZodType<number | undefined, string> }),
  modelHost: define({ variable: 'FORGE_MODEL_HOST', description: 'The model server process: the address it listens on (a fleet: set FORGE_MODEL_SERVER_KEY too)', fallback: undefined, defaultText: '(unset: 127.0.0.1)', schema: optionalText }),
  modelServerKey: define({ variable: 'FORGE_MODEL_SERVER_KEY', description: 'The model server process: the API key it requires', fallback: undefined, defaultText: '(unset)', schema: optionalText, secret: true }),
  benchModel: define({ variable: 'FORGE_BENCH_MODEL', description: 'npm run bench: the local model of the model part', fallback: 'local', defaultText: 'local', schema: text }),
  python: define({ variable: 'FORGE_PYTHON', description: 'The Python interpreter of the pydantic-ai adapter', fallback: 'python3', defaultText: 'python3', schema: text }),
  benchAttempts: define({ variable: 'FORGE_BENCH_ATTEMPTS', description: 'npm run bench: attempts of the end-to-end part', fallback: 1000, defaultText: '1000', schema: wholeNumber(1, 10_000_000) }),
  benchScaleAttempts: define({ variable: 'FORGE_BENCH_SCALE_ATTEMPTS', description: 'npm run bench: attempts of the scale part (one smoke run)', fallback: 100_000, defaultText: '100000', schema: wholeNumber(5, 10_000_000) }),
  benchWorkers: define({ variable: 'FORGE_BENCH_WORKERS', description: 'npm run bench: worker processes', fallback: 1, defaultText: '1', schema: wholeNumber(1, 256) }),
  benchOnly: define({
    variable: 'FORGE_BENCH_ONLY',
    description: `npm run bench: run only this part (${BENCH_PARTS.join(', ')})`,
    fallback: undefined,
    defaultText: '(unset: every part)',
    schema: z.enum(BENCH_PARTS, `must be one of ${BENCH_PARTS.join(', ')}`) as z.ZodType<BenchPart | undefined, string>,
  }),
} as const

export type SettingName = keyof typeof SETTINGS
export type SettingValue<K extends SettingName> = (typeof SETTINGS)[K] extends SettingDefinition<infer T> ? T : never
/** Every setting's value: the variable's, else its default. */
export type ForgeSettings = { [K in SettingName]: SettingValue<K> }

/** A setting's value, or the problem with its variable. */
type Parsed<T> = { ok: true; value: T; fromEnv: boolean } | { ok: false; problem: string }

function parseSetting<K extends SettingName>(name: K, env: NodeJS.ProcessEnv): Parsed<SettingValue<K>> {
  const definition = SETTINGS[name] as unknown as SettingDefinition<SettingValue<K>>
  const raw = env[definition.variable]?.trim()
  if (raw === undefined || raw === '') return { ok: true, value: definition.fallback, fromEnv: false }
  const parsed = definition.schema.safeParse(raw)
  if (parsed.success) return { ok: true, value: parsed.data, fromEnv: true }
  const shown = definition.secret ? '(hidden)' : JSON.stringify(raw)
  return { ok: false, problem: `${definition.variable} ${parsed.error.issues[0]?.message ?? 'is invalid'}, got ${shown}` }
}

/** One setting from `env`; a bad value throws a ConfigError naming the variable and the value. */
export function readSetting<K extends SettingName>(name: K, env: NodeJS.ProcessEnv = process.env): SettingValue<K> {
  const parsed = parseSetting(name, env)
  if (!parsed.ok) throw new ConfigError(parsed.problem)
  return parsed.value
}

/** Every setting from `env`; bad values throw one ConfigError that names each of them. */
export function loadSettings(env: NodeJS.ProcessEnv = process.env): ForgeSettings {
  const values: Partial<Record<SettingName, unknown>> = {}
  const problems: string[] = []
  for (const name of Object.keys(SETTINGS) as SettingName[]) {
    const parsed = parseSetting(name, env)
    if (parsed.ok) values[name] = parsed.value
    else problems.push(parsed.problem)
  }
  if (problems.length === 1) throw new ConfigError(problems[0]!)
  if (problems.length > 1) throw new ConfigError(`${problems.length} invalid settings:\n  ${problems.join('\n  ')}`)
  return values as ForgeSettings
}

/** What `forge config` prints about one setting. */
export interface SettingReport {
  variable: string
  /** the value in effect (secrets: `(hidden)`); null when unset without a default */
  value: string | number | boolean | null
  source: 'env' | 'default'
  default: string
  description: string
  /** set when the variable's value is invalid */
  problem?: string
}

/**
 * Every setting with its value and where it came from, in definition order. `effective` gives the
 * value in effect where it is derived (e.g. FORGE_HOME resolved against the working directory).
 */
export function describeSettings(env: NodeJS.ProcessEnv, effective: Partial<Record<SettingName, unknown>> = {}): SettingReport[] {
  return (Object.keys(SETTINGS) as SettingName[]).map((name) => {
    const definition = SETTINGS[name] as SettingDefinition<unknown>
    const parsed = parseSetting(name, env)
    const base = { variable: definition.variable, default: definition.defaultText, description: definition.description }
    if (!parsed.ok) return { ...base, value: definition.secret ? '(hidden)' : (env[definition.variable] ?? null), source: 'env' as const, problem: parsed.problem }
    const value = name in effective ? effective[name] : parsed.value
    const shown = value === undefined ? null : definition.secret ? '(hidden)' : (value as string | number | boolean)
    return { ...base, value: shown, source: parsed.fromEnv ? ('env' as const) : ('default' as const) }
  })
}

/** The environment variables that give a child process these settings (the inverse of reading them). */
export function settingsEnv(values: Partial<{ [K in SettingName]: SettingValue<K> }>): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(values) as [SettingName, unknown][]) {
    if (value === undefined) continue
    env[SETTINGS[name].variable] = typeof value === 'boolean' ? (value ? '1' : '0') : String(value)
  }
  return env
}
