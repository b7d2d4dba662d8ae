/**
 * Planning a run: validate its configuration (app/run-config.ts) once, load and validate the suite,
 * load the price table and build the `RunPlan` RunWorkflow gets. Starts nothing, so `forge run
 * --dry-run` is planning plus a cost estimate.
 */
import { existsSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { resolve } from 'node:path'
import type { z } from 'zod'
import type { ForgeConfig } from '../config/index.js'
import { RunPlan, type FaultPlan, type JudgeSettings, type SequentialRule, type Task } from '../core/contracts/index.js'
import { ConfigError } from '../core/errors.js'
import { configIdOf, mintRunId } from '../core/identity.js'
import { estimateRunCost, heuristicUsage, type CostEstimate } from '../core/estimate.js'
import { isJudgeSpec } from '../core/graders/index.js'
import { judgeStamps } from '../core/judging.js'
import type { PriceTable } from '../core/pricing.js'
import { validateAdapterConfig } from '../engine/adapters/index.js'
import { buildInvocationPayload } from '../engine/invocation-payload.js'
import { loadPriceTable, priceTableCacheDir } from '../engine/llm/price-table.js'
import { secretRefsMissing } from '../engine/secrets.js'
import { loadSuitePlan, suitePlanCacheDir, type SuitePlan } from '../engine/suite-plan.js'
import { sandboxRequested } from '../engine/sandbox/config.js'
import { SandboxUnavailableError } from '../engine/sandbox/errors.js'
import { sandboxSupport } from '../engine/sandbox/host.js'
import { observedUsage } from '../store/repositories.js'
import { parseRunConfig, type RunConfig, type RunConfigInput } from './run-config.js'
import { resolveRunModels, type RunModels } from './local-model.js'
import { attemptBatchSize } from '../workflows/attempt-batches.js'
import { openReader } from './store-access.js'

/** A run ready to start: its validated configuration, suite, tasks, price table and plan. */

/** attempts per attempt activity in runs Forge plans (issue 15: Temporal round trips were most of the cost of a mock attempt) */
export const ATTEMPTS_PER_ACTIVITY = 10

/**
 * Attempts one activity runs at once on worker processes of `slots` attempt slots each
 * (RunPlan.attempt_lanes): a 1,000-attempt run of fast attempts is then 10 activities rather than
 * 100, and each activity cost Temporal and the worker ~10 ms of CPU (issue 15). The largest divisor of
 * `slots` up to 10: a worker reserves its slots a batch's lanes at a time (workers/lane-slots.ts), so
 * lanes that divide them leave none unused (32 slots: 8 lanes; a prime number of slots over 10: 1).
 *
 * Given the run's shape, more lanes (up to 50, RunPlan's own limit) where its batches fill them: a
 * batch reserves its lanes' slots however few attempts it holds, so a worker of 50 slots given batches
 * of 2 attempts in 50 lanes would run 2 attempts at once. Such lanes are also at most the run's
 * in-flight attempts over its worker processes, so each process can hold a batch. A 1,000-attempt run
 * at --concurrency 100 is then 2 activities of 500 rather than 10 of 100: ~0.06 ms less of Temporal's
 * CPU per attempt and about as much of the worker's (issue 15).
 */
export function attemptLanesFor(slots: number, run?: { maxInFlight: number; processes: number; shardAttempts: number }): number {
  if (run !== undefined) {
    for (let lanes = Math.min(MAX_FILLED_LANES, slots, Math.floor(run.maxInFlight / run.processes)); lanes > MAX_ATTEMPT_LANES; lanes--) {
      if (slots % lanes === 0 && attemptBatchSize({ attempts_per_activity: ATTEMPTS_PER_ACTIVITY, max_in_flight: run.maxInFlight }, run.shardAttempts, lanes) >= lanes) return lanes
    }
  }
  for (let lanes = Math.min(MAX_ATTEMPT_LANES, slots); lanes > 1; lanes--) if (slots % lanes === 0) return lanes
  return 1
}
const MAX_ATTEMPT_LANES = 10
const MAX_FILLED_LANES = 50

export interface PlannedRun {
  run: RunConfig
  suite: SuitePlan
  tasks: Task[]
  priceTable: PriceTable
  plan: RunPlan
  /** the `local` model the stack's model server must serve, if any */
  localModel: RunModels['local']
}

/**
 * Validates the configuration and the suite, loads the price table and builds the plan; starts
 * nothing. The suite and the price table come from FORGE_HOME's caches when their content was planned
 * before (engine/suite-plan.ts, engine/llm/price-table.ts); `planCache: 'read'` leaves the caches as
 * they are (a dry run writes nothing).
 */
export async function planRun(config: ForgeConfig, input: RunConfigInput, opts: { planCache?: 'read' | 'read-write' } = {}): Promise<PlannedRun> {
  const parsed = parseRunConfig(input)
  // `--model local` / `--judge-model local`: one GGUF file, recorded as local:<name>
  const models = resolveRunModels({ ...parsed.adapter_config }, parsed.judge)
  const run: RunConfig = { ...parsed, adapter_config: models.adapterConfig, ...(models.judge !== undefined ? { judge: models.judge as RunConfig['judge'] } : {}) }
  const adapterCheck = validateAdapterConfig(run.adapter, run.adapter_config)
  if (!adapterCheck.ok) throw new ConfigError(adapterCheck.message)
  await requireSandboxFor(run.adapter, run.adapter_config)
  // this run's workers inherit this environment: a secret they could not resolve fails now, not on every attempt
  const unresolved = secretRefsMissing(run.adapter_config, process.env)
  if (unresolved.length > 0) throw new ConfigError(`--adapter-config names secrets this machine does not have: ${unresolved.join('; ')}`)
  const suite = await loadSuitePlan(run.suite, { cacheDir: suitePlanCacheDir(config.home), readOnly: opts.planCache === 'read' })
  const tasks = selectTasks(suite.tasks, run.task_ids, suite.path)
  checkPlannedAttempts(tasks.length, run.attempts, suite.path)
  // absolute, so any worker finds it; a bad table is a PriceTableError (exit code 2) naming the file
  const priceTablePath = run.price_table === undefined ? undefined : resolve(run.price_table)
  const priceTable = await loadPriceTable(priceTablePath, { cacheDir: priceTableCacheDir(config.home), readOnly: opts.planCache === 'read' })
  const judge: JudgeSettings | undefined = run.judge && { ...run.judge, task_queue: run.judge.task_queue ?? config.judge.taskQueue }
  const judgeSpecs = tasks.flatMap((t) => t.outcome_graders).filter(isJudgeSpec)
  const stamps = judgeStamps({
    settings: judge,
    graderModels: judgeSpecs.map((spec) => spec['model']).filter((model): model is string => typeof model === 'string'),
    judgeGraders: judgeSpecs.length > 0,
    envModel: config.judge.model,
  })
  // parse applies the plan's own defaults (shard size, in-flight limits); its inputs are valid already
  const plan = RunPlan.parse({
    run_id: run.run_id ?? mintRunId(Date.now(), randomBytes(3).toString('hex')),
    config_id: configIdOf(run.adapter, run.adapter_config),
    suite_path: suite.path,
    suite: suite.name,
    task_ids: tasks.map((t) => t.id),
    attempts: run.attempts,
    adapter: run.adapter,
    adapter_config: run.adapter_config,
    seed: run.seed ?? randomBytes(4).toString('hex'),
    ...(run.max_in_flight !== undefined ? { max_in_flight: run.max_in_flight } : {}),
    attempts_per_activity: ATTEMPTS_PER_ACTIVITY,
    attempt_timeout_ms: attemptTimeoutMs(tasks, judge),
    ...(run.heartbeat_timeout_ms !== undefined ? { heartbeat_timeout_ms: run.heartbeat_timeout_ms } : {}),
    ...(priceTablePath !== undefined ? { price_table: priceTablePath } : {}),
    price_table_version: priceTable.version,
    price_table_date: priceTable.date,
    suite_hash: suite.contentHash,
    judge_model: stamps.judge_model,
    judge_prompt_version: stamps.judge_prompt_version,
    ...(run.sequential ? { sequential: run.sequential } : {}),
    ...(judge ? { judge } : {}),
    redact: run.redact,
    guard_answers: run.guard_answers,
    ...(run.faults ? { faults: run.faults } : {}),
  } satisfies z.input<typeof RunPlan>)
  return { run, suite, tasks, priceTable, plan, localModel: models.local }
}

/**
 * The most attempts one run plans (tasks × attempts): the store counts a run's attempts, and every
 * count, index and version it keeps, in UInt32 columns, which would wrap a larger value silently.
 * The contracts take such values as `z.uint32()`, so a message past it is rejected, never stored wrapped.
 */
export const MAX_PLANNED_ATTEMPTS = 0xffff_ffff

/** Refuses a plan of more attempts (tasks × attempts) than the store counts (MAX_PLANNED_ATTEMPTS), naming --attempts and the suite. */
export function checkPlannedAttempts(tasks: number, attempts: number, suitePath: string): void {
  const planned = tasks * attempts
  if (planned <= MAX_PLANNED_ATTEMPTS) return
  const count = (n: number) => n.toLocaleString('en-US')
  throw new ConfigError(
    `--attempts ${count(attempts)} × ${count(tasks)} tasks of ${suitePath} plans ${count(planned)} attempts; a run plans at most ${count(MAX_PLANNED_ATTEMPTS)} (the store counts them in UInt32): lower --attempts or choose tasks with --task`,
  )
}

/** The start-to-close limit of one attempt activity: the largest task budget, its judge graders' calls, and a minute of grace. */
function attemptTimeoutMs(tasks: Task[], judge: JudgeSettings | undefined): number {
  const judgeGraders = Math.max(...tasks.map((t) => t.outcome_graders.filter(isJudgeSpec).length))
  // a task's judge graders are asked inside its attempt: up to two calls each
  const judgeGraderMs = judgeGraders === 0 ? 0 : 2 * (judge?.timeout_ms ?? 120_000) * judgeGraders
  return Math.max(...tasks.map((t) => t.budget.max_duration_ms)) + judgeGraderMs + 60_000
}

/** Refuses a run whose agents are to be sandboxed on a machine that cannot make a sandbox (exit 2, saying why and about --no-sandbox). */
async function requireSandboxFor(adapter: string, adapterConfig: Record<string, unknown>): Promise<void> {
  if (!sandboxRequested(adapter, adapterConfig)) return
  const sandbox = await sandboxSupport()
  if (!sandbox.ok) throw new ConfigError(new SandboxUnavailableError(sandbox.reason).message)
}

function selectTasks(all: Task[], wanted: string[], suitePath: string): Task[] {
  if (wanted.length === 0) return all
  const unknown = wanted.filter((id) => !all.some((t) => t.id === id))
  if (unknown.length > 0) {
    throw new ConfigError(`--task names tasks the suite at ${suitePath} does not have: ${unknown.join(', ')} (it has: ${all.map((t) => t.id).join(', ')})`)
  }
  return all.filter((t) => wanted.includes(t.id))
}

export interface DryRunReport {
  dry_run: true
  suite: string
  suite_path: string
  suite_hash: string
  tasks: string[]
  attempts_per_task: number
  adapter: string
  config_id: string
  adapter_config: Record<string, unknown>
  seed: string
  sequential: SequentialRule | null
  /** the fault profile's stamps, or null without faults */
  faults: (Omit<FaultPlan, 'profile'> & { rules: number }) | null
  estimate: CostEstimate
}

/**
 * `forge run --dry-run`: plans the run and estimates its token cost, without starting a server or
 * calling a model. Earlier attempts of the same suite and model, when the store holds some, give
 * the estimate; else payload sizes do.
 */
export async function dryRun(config: ForgeConfig, input: RunConfigInput): Promise<DryRunReport> {
  const { suite, tasks, plan, priceTable } = await planRun(config, input, { planCache: 'read' })
  const model = typeof plan.adapter_config['model'] === 'string' ? plan.adapter_config['model'] : plan.adapter
  const observed = await readObservedUsage(config, suite.name, model)
  const estimate = estimateRunCost({
    model,
    table: priceTable,
    attemptsPerTask: plan.attempts,
    perTask: tasks.map((task) => heuristicUsage(buildInvocationPayload(task, suite))),
    ...(observed ? { observed } : {}),
  })
  return {
    dry_run: true,
    suite: suite.name,
    suite_path: suite.path,
    suite_hash: suite.contentHash,
    tasks: plan.task_ids,
    attempts_per_task: plan.attempts,
    adapter: plan.adapter,
    config_id: plan.config_id,
    adapter_config: plan.adapter_config,
    seed: plan.seed,
    sequential: plan.sequential ?? null,
    faults: plan.faults === undefined ? null : { profile_hash: plan.faults.profile_hash, mode: plan.faults.mode, rate: plan.faults.rate, sweep_id: plan.faults.sweep_id, rules: plan.faults.profile.rules.length },
    estimate,
  }
}

/** Earlier usage from the store when one is reachable without starting anything; otherwise none. */
async function readObservedUsage(config: ForgeConfig, suite: string, model: string): Promise<Awaited<ReturnType<typeof observedUsage>>> {
  if (!config.clickhouseUrl && !existsSync(config.storePath)) return undefined
  try {
    const reader = await openReader(config)
    try {
      return await observedUsage(reader, suite, model)
    } finally {
      await reader.close()
    }
  } catch {
    // an estimate is best-effort: a busy or absent store falls back to the heuristic
    return undefined
  }
}
