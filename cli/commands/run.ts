import { Flags } from '@oclif/core'
import { adapterNames } from '../../engine/adapters/index.js'
import { dryRun, type DryRunReport } from '../../app/plan-run.js'
import { runConfigFromFlags, type RunConfigInput } from '../../app/run-config.js'
import { ConfigError } from '../../core/errors.js'
import { SANDBOXED_ADAPTERS, unsandboxedNote } from '../../engine/sandbox/config.js'
import { runSuite, type RunEvent, type RunReport } from '../../app/run.js'
import { readSetting, resolveConfig, type ForgeConfig } from '../../config/index.js'
import { leaveWarmCli } from '../../stack/warm-cli.js'
import { tracesUrl } from '../../app/otlp-url.js'
import { ForgeCommand } from '../base.js'
import { logFlags, parseLogOptions, runOutput } from '../log-options.js'
import { usd } from '../format.js'
import { describeRunEvent, finishRunCommand } from '../run-view.js'
import { faultFlags, faultsOf, runSweep, type SweepResult } from '../fault-run.js'

export default class Run extends ForgeCommand {
  static override summary = 'Run a suite: every task × attempt on the worker fleet, then print its statistics.'
  static override description =
    'With no FORGE_TEMPORAL_ADDRESS / FORGE_NATS_URL / FORGE_CLICKHOUSE_URL set, Forge starts (or reuses) a local ' +
    'Temporal dev server, nats-server and ingester with state under .forge/, and stores results in embedded chDB.'
  static override examples = [
    '<%= config.bin %> run --suite smoke --adapter mock --attempts 5',
    '<%= config.bin %> run --suite ./suites/toy_math --attempts 20 --workers 2 --seed 42',
    '<%= config.bin %> run --suite smoke --task echo_greeting --task sum_two_numbers --json',
    '<%= config.bin %> run --suite toy_math --attempts 200 --dry-run',
    '<%= config.bin %> run --suite smoke --attempts 100 --stop-at-width 0.3 --price-table ./prices/default.yaml',
    '<%= config.bin %> run --suite smoke --attempts 3 --guard-answers',
    {
      description: "Against a fleet: start no worker here, the fleet's `forge worker` processes run the attempts (needs workers polling FORGE_TASK_QUEUE).",
      command: '<%= config.bin %> run --suite smoke --attempts 20 --workers 0',
    },
    {
      description: 'An agent given an API key by reference, resolved by the worker and never stored (needs OPENAI_API_KEY in the environment).',
      command: `<%= config.bin %> run --suite smoke --adapter subprocess --adapter-config '{"command":["node","examples/agents/echo-agent.mjs"],"env":{"OPENAI_API_KEY":{"from_env":"OPENAI_API_KEY"}}}'`,
    },
    '<%= config.bin %> run --suite smoke --attempts 10 --seed 7 --fault-profile examples/faults/flaky-tools.yaml',
    '<%= config.bin %> run --suite toy_math --attempts 10 --fault-rate 0.2 --fault-kinds 500,garbage --fault-mode burst --fault-window 3',
    '<%= config.bin %> run --suite toy_math --attempts 10 --seed 7 --fault-sweep 0,0.2,0.4 --fault-kinds 500,slow',
    {
      description: 'A model-backed agent (needs an OpenAI-compatible model server).',
      command: 'OPENAI_BASE_URL=http://127.0.0.1:8080/v1 <%= config.bin %> run --suite smoke --adapter react --model gpt-4o-mini',
    },
    {
      description: 'With LLM-judge metrics (needs an OpenAI-compatible judge model server).',
      command: '<%= config.bin %> run --suite smoke --attempts 20 --judge-model gpt-4o-mini --judge-metrics correctness,safety',
    },
    { description: 'A real small model served by the stack, no API key (needs minutes on 2 cores; test/integration/local-model.test.ts runs it).', command: '<%= config.bin %> run --suite toy_math --adapter react --model local --attempts 2' },
    '<%= config.bin %> run --suite smoke --attempts 3 --log-level calls --log-only tools,faults',
    '<%= config.bin %> run --suite smoke --attempts 5 --log-level steps --log-format jsonl',
    {
      description: "Each attempt's spans sent to an OpenTelemetry collector as it finishes (needs an OTLP/HTTP collector on port 4318).",
      command: '<%= config.bin %> run --suite smoke --attempts 5 --otlp-url http://127.0.0.1:4318',
    },
  ]
  static override flags = {
    ...logFlags,
    suite: Flags.string({ char: 's', summary: 'Suite name (bundled), directory, or npm package.', default: 'smoke' }),
    adapter: Flags.string({ char: 'a', summary: `Agent adapter: ${adapterNames().join(', ')} (forge adapters list shows each one's --adapter-config).`, default: 'mock' }),
    attempts: Flags.integer({ char: 'n', summary: 'Attempts per task, 1 to 1,000,000 (a run plans at most 4,294,967,295: tasks × attempts).', default: 5 }),
    seed: Flags.string({ summary: 'Run seed: the same seed reproduces the mock agent and fault decisions.' }),
    workers: Flags.integer({
      char: 'w',
      summary:
        'Workers for this run: locally at most max(4, CPUs) processes (FORGE_LOCAL_WORKER_PROCESSES), further workers become attempt slots in them; 0: none here, `forge worker` processes polling the task queue (a fleet) run it.',
      default: 1,
    }),
    concurrency: Flags.integer({ summary: 'Attempts each worker runs at once.', default: 50 }),
    task: Flags.string({ char: 't', summary: 'Only this task (repeatable).', multiple: true }),
    'run-id': Flags.string({ summary: 'Use this run id instead of a generated one.' }),
    'adapter-config': Flags.string({ summary: 'Adapter settings as JSON, e.g. \'{"skill":0.5}\'.' }),
    model: Flags.string({
      char: 'm',
      summary: 'Model for react, single_shot, langgraph and pydantic-ai (sets "model" in the adapter config); local, local:<name> or local:<file.gguf> runs it on the stack\'s model server.',
    }),
    'max-in-flight': Flags.integer({ summary: 'Attempt activities pending at once per shard (≤ 500).' }),
    'heartbeat-timeout': Flags.integer({ summary: 'Seconds without a heartbeat before an attempt is retried on another worker.' }),
    'dry-run': Flags.boolean({ summary: 'Validate the suite, resolve the configuration and estimate the token cost; start nothing, call no model.' }),
    'price-table': Flags.string({ summary: 'Price table YAML (default: prices/default.yaml); its version and date are stamped on the run.' }),
    'stop-at-width': Flags.string({ summary: "Sequential stopping: stop a task's attempts once its Wilson 95% interval is at most this wide (e.g. 0.2)." }),
    'round-size': Flags.integer({ summary: 'Sequential stopping: attempts per task between width checks (default 10).', min: 1, max: 500 }),
    'min-attempts': Flags.integer({ summary: 'Sequential stopping: attempts per task before it may stop (default 10).', min: 1 }),
    'judge-model': Flags.string({
      summary: 'Judge the run with this model (any OpenAI-compatible one: FORGE_JUDGE_BASE_URL / FORGE_JUDGE_API_KEY, else OPENAI_*): golden divergence and judge metrics.',
    }),
    'judge-metrics': Flags.string({ summary: 'Judge metrics to score: all (default), none, or a comma-separated list (e.g. correctness,safety).' }),
    'judge-gate': Flags.string({ summary: 'deterministic (default): judge metrics only for attempts whose gating deterministic metrics passed; none: every attempt.', options: ['deterministic', 'none'] }),
    'golden-divergence': Flags.boolean({ summary: 'Tier 2: localize failed attempts of tasks with a golden trace (default on with --judge-model).', allowNo: true, default: true }),
    'judge-max-tokens': Flags.integer({ summary: 'Completion tokens per judge call (default 512).', min: 1 }),
    'judge-temperature': Flags.string({ summary: 'Judge sampling temperature (default 0).' }),
    redact: Flags.boolean({
      summary: 'Redact secrets and PII from everything workers publish (default on); --no-redact stores them as produced and is stamped on the run.',
      allowNo: true,
      default: true,
    }),
    'guard-answers': Flags.boolean({ summary: "Answer guard: redact the task's expected answers from tool arguments before the tool runs, record and count each interception." }),
    resume: Flags.string({ summary: 'Re-attach to this run (what forge runs resume does): start workers if it still runs, wait for it, report it.' }),
    ...faultFlags,
    'otlp-url': Flags.string({
      summary: "Workers send each attempt's spans to this OTLP/HTTP collector as it finishes (default FORGE_OTLP_URL); failed exports are counted and reported at the end, never fail the run.",
    }),
    'no-sandbox': Flags.boolean({
      summary: 'Run subprocess, pydantic-ai and module agents without the sandbox (module agents in the worker process); every attempt is marked degraded.',
    }),
  }

  async run(): Promise<RunReport | DryRunReport | SweepResult> {
    const { flags } = await this.parse(Run)
    const config = withOtlpUrl(resolveConfig(), flags['otlp-url'])
    // --fault-*: the run's fault profile, or a sweep of runs at several fail rates (cli/fault-run.ts)
    const faults = await faultsOf(flags)
    const runConfig = withoutSandbox(
      { ...runConfigFromFlags(flags), ...(faults.plan !== undefined ? { faults: faults.plan } : {}) },
      flags['no-sandbox'],
      (message) => this.warn(message),
    )
    const quiet = this.jsonEnabled()
    if (faults.sweep !== undefined && !flags['dry-run']) return runSweep(this, config, runConfig, faults.sweep)
    if (flags['dry-run']) {
      const plan = await dryRun(config, runConfig)
      if (!quiet) printDryRun((line) => this.log(line), plan)
      return plan
    }
    // Ctrl-C cancels the run's workflow instead of leaving it queued with no workers
    const interrupt = new AbortController()
    const onInterrupt = () => {
      if (interrupt.signal.aborted) process.exit(130)
      this.logToStderr('cancelling the run… (Ctrl-C again to quit at once)')
      interrupt.abort()
    }
    process.on('SIGINT', onInterrupt)
    const output = runOutput(parseLogOptions(flags), { out: (line) => this.log(line), err: process.stderr, json: quiet, tty: process.stdout.isTTY === true && process.stderr.isTTY === true, columns: process.stderr.columns }, describeRunEvent)
    const report = await (flags.resume !== undefined
      ? // loaded for --resume only: what a run loads before its workflow starts is its start-up (issue 15)
        import('../../app/resume.js').then(({ resumeRun }) => resumeRun(config, { run_id: flags.resume!, workers: flags.workers, concurrency: flags.concurrency }, output.onEvent, interrupt.signal))
      : runSuite(config, runConfig, output.onEvent, interrupt.signal, output.observe)
    ).finally(() => {
      output.finish()
      process.off('SIGINT', onInterrupt)
    })
    leaveWarmCliAfter(config, flags.workers)
    return finishRunCommand(this.runCommandOutput(), report)
  }
}

/**
 * A local run that leaves warm workers leaves a warm CLI too (stack/warm-cli.ts): the next `forge run`
 * of this FORGE_HOME finds oclif and this command loaded. Best effort: without one it starts cold.
 */
function leaveWarmCliAfter(config: ForgeConfig, workers: number): void {
  if (!readSetting('warmCli') || readSetting('warmWorkers') === 0 || workers === 0 || config.temporal.address !== undefined) return
  try {
    leaveWarmCli(config.home)
  } catch {
    // the next run starts as it always did
  }
}

/** --otlp-url overrides FORGE_OTLP_URL; a value that is no http(s) URL is a ConfigError naming the flag. */
function withOtlpUrl(config: ForgeConfig, flag: string | undefined): ForgeConfig {
  if (flag === undefined) return config
  tracesUrl(flag, '--otlp-url')
  return { ...config, otlpUrl: flag }
}

/** --no-sandbox: `"sandbox": false` in the adapter config (so in the config id), said out loud; refused for adapters that run no agent code. */
function withoutSandbox(run: RunConfigInput, noSandbox: boolean, warn: (message: string) => void): RunConfigInput {
  if (!noSandbox) return run
  if (!SANDBOXED_ADAPTERS.includes(run.adapter)) {
    throw new ConfigError(`--no-sandbox applies only to adapters that run agent code (${SANDBOXED_ADAPTERS.join(', ')}), not "${run.adapter}"`)
  }
  warn(`--no-sandbox: ${unsandboxedNote(run.adapter)}; every attempt of this run is marked degraded`)
  return { ...run, adapter_config: { ...(run.adapter_config ?? {}), sandbox: false } }
}

function printDryRun(log: (line: string) => void, plan: DryRunReport): void {
  const e = plan.estimate
  log(`dry run: nothing was started and no model was called`)
  log(`suite ${plan.suite} (${plan.suite_path}), content ${plan.suite_hash.slice(0, 12)}: ${plan.tasks.length} tasks × ${plan.attempts_per_task} attempts = ${e.attempts}`)
  log(`adapter ${plan.adapter}, config ${plan.config_id} ${JSON.stringify(plan.adapter_config)}, seed ${plan.seed}`)
  if (plan.sequential) {
    log(`sequential stopping: a task stops once its Wilson 95% interval is ≤ ${plan.sequential.width} wide (checked every ${plan.sequential.round_size} attempts, after ${plan.sequential.min_attempts})`)
  }
  if (plan.faults) log(`fault profile ${plan.faults.profile_hash.slice(0, 12)}: ${plan.faults.rules} rule(s), ${plan.faults.mode}, rate ${plan.faults.rate}`)
  const basis = e.source === 'observed' ? `mean usage of ${e.observed_attempts} earlier attempts of this suite and model` : 'a rough heuristic from payload sizes (no earlier attempts of this suite and model)'
  log(`estimated tokens: ${e.input_tokens.toLocaleString('en-US')} in, ${e.output_tokens.toLocaleString('en-US')} out (${basis})`)
  log(
    `estimated cost: ${e.cost_usd === null ? `unavailable: model "${e.model}" has no price in the table` : `${usd(e.cost_usd)} for model ${e.model}`} ` +
      `(price table ${e.price_table.version}, ${e.price_table.date})`,
  )
}
