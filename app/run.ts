/**
 * `forge run`: validate the suite, bring up what is not running, start worker processes, start
 * RunWorkflow, follow progress over NATS, wait until ClickHouse holds every published attempt,
 * and answer with the run's statistics computed from ClickHouse.
 */
import { Client, Connection, WorkflowFailedError } from '@temporalio/client'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { JudgeSettings, RunPlan, type JudgeSettingsInput, type SequentialRule, type Task } from '../core/contracts/index.js'
import { configIdOf, mintRunId } from '../core/identity.js'
import { isJudgeSpec } from '../core/graders/index.js'
import { judgeStamps } from '../core/judging.js'
import { selectJudgeMetrics } from '../core/metrics/index.js'
import { estimateRunCost, heuristicUsage, type CostEstimate } from '../core/estimate.js'
import type { PriceTable } from '../core/pricing.js'
import type { LoadedSuite } from '../core/plugins.js'
import { connectBus, subjects, type ProgressEvent } from '../store/bus.js'
import { countAttempts, getRun, observedUsage } from '../store/repositories.js'
import type { ForgeConfig } from '../stack/config.js'
import { ConfigError } from '../stack/errors.js'
import { stackUp } from '../stack/local-stack.js'
import { buildInvocationPayload } from '../engine/attempt-runner.js'
import { PriceTableError } from '../engine/llm/errors.js'
import { priceTableFor } from '../engine/llm/price-table.js'
import { loadSuite } from '../engine/suite-loader.js'
import { adapters, validateAdapterConfig } from '../engine/adapters/index.js'
import { judgeTaskQueue } from '../engine/judge/queue.js'
import { isolationOf, sandboxRequested } from '../engine/sandbox/config.js'
import { SandboxUnavailableError } from '../engine/sandbox/errors.js'
import { sandboxSupport } from '../engine/sandbox/host.js'
import type { RunWorkflow, RunWorkflowResult } from '../workflows/run.js'
import { openReader } from './store-access.js'
import { getRunStats, type RunStats } from './stats.js'
import { startWorkerPool } from './worker-pool.js'

export interface RunOptions {
  /** aborting it (Ctrl-C) cancels the run's workflow; the run is recorded as cancelled */
  signal?: AbortSignal
  suite: string
  adapter: string
  attempts: number
  seed?: string
  workers: number
  /** attempts each worker process runs at once */
  concurrency: number
  taskIds?: string[]
  runId?: string
  adapterConfig?: Record<string, unknown>
  maxInFlight?: number
  heartbeatTimeoutMs?: number
  /** how long to wait for ClickHouse to hold every published attempt */
  ingestTimeoutMs?: number
  /** a price table file (default: Forge's prices/default.yaml); its version and date are stamped on the run */
  priceTable?: string
  /** stamped on the run so `forge compare` can warn when two runs were judged differently */
  judgeModel?: string
  judgePromptVersion?: string
  /** opt-in sequential stopping: a task stops once its Wilson interval is at most `width` wide */
  sequential?: { width: number; roundSize?: number; minAttempts?: number }
  /**
   * The run's judge: tier-2 golden divergence and the LLM-judge metrics, run by judge workers on
   * their own task queue (FORGE_JUDGE_TASK_QUEUE, default forge-judge); also the default model of
   * the tasks' `judge` graders. Its model, prompt versions and decoding are stamped on the run.
   */
  judge?: JudgeSettingsInput
}

export type RunEvent =
  | { kind: 'stack'; message: string }
  | { kind: 'workers'; pids: number[] }
  | { kind: 'started'; run_id: string; tasks: number; attempts: number; total: number; workers: number; seed: string }
  | { kind: 'task-done'; task_id: string; k: number; n: number; done_tasks: number; total_tasks: number }
  | { kind: 'ingesting'; stored: number; expected: number }

export interface RunReport extends RunStats {
  run_id: string
  seed: string
  suite: string
  adapter: string
  /** how agent code was isolated (engine/sandbox/config.ts isolationOf); '' when the adapter runs none */
  isolation: string
  expected_attempts: number
  not_executed: number
  wall_ms: number
  attempts_per_second: number
  /** runs with a judge: judge activities that completed, and those that failed after every retry (their tier 2 stays pending) */
  judged?: number
  judge_not_executed?: number
}

interface PreparedRun {
  suite: LoadedSuite
  tasks: Task[]
  plan: RunPlan
  priceTable: PriceTable
}

/** Validates options and the suite, loads the price table and builds the plan; starts nothing. */
async function prepareRun(opts: RunOptions): Promise<PreparedRun> {
  validateRunOptions(opts)
  const suite = await loadSuite(opts.suite)
  const tasks = selectTasks(suite.tasks, opts.taskIds, suite.path)
  const adapterConfig = { ...(opts.adapterConfig ?? {}) }
  // workers read the table from the adapter config (engine/llm/price-table.ts); absolute, so any worker finds it
  if (opts.priceTable !== undefined) adapterConfig['price_table'] = resolve(opts.priceTable)
  else if (typeof adapterConfig['price_table'] === 'string') adapterConfig['price_table'] = resolve(adapterConfig['price_table'])
  const adapterCheck = validateAdapterConfig(opts.adapter, adapterConfig)
  if (!adapterCheck.ok) throw new ConfigError(adapterCheck.message)
  await requireSandboxFor(opts.adapter, adapterConfig)
  let priceTable: PriceTable
  try {
    priceTable = await priceTableFor(adapterConfig)
  } catch (error) {
    if (error instanceof PriceTableError) throw new ConfigError(error.message, { cause: error })
    throw error
  }
  let judge: JudgeSettings | undefined
  if (opts.judge !== undefined) {
    const parsedJudge = JudgeSettings.safeParse({ task_queue: judgeTaskQueue(), ...opts.judge })
    if (!parsedJudge.success) {
      throw new ConfigError(`invalid judge settings: ${parsedJudge.error.issues.map((i) => `${i.path.map(String).join('.')}: ${i.message}`).join('; ')}`)
    }
    try {
      selectJudgeMetrics(parsedJudge.data.metrics)
    } catch (error) {
      throw new ConfigError(`--judge-metrics: ${(error as Error).message}`)
    }
    judge = parsedJudge.data
  }
  const judgeSpecs = tasks.flatMap((t) => t.outcome_graders).filter(isJudgeSpec)
  const stamps = judgeStamps({
    settings: judge,
    graderModels: judgeSpecs.map((spec) => spec['model']).filter((model): model is string => typeof model === 'string'),
    judgeGraders: judgeSpecs.length > 0,
    envModel: process.env['FORGE_JUDGE_MODEL'],
  })
  // a task's judge graders are asked inside its attempt: up to two calls each
  const judgeGraderMs = judgeSpecs.length === 0 ? 0 : 2 * (judge?.timeout_ms ?? 120_000) * Math.max(...tasks.map((t) => t.outcome_graders.filter(isJudgeSpec).length))
  const longestBudget = Math.max(...tasks.map((t) => t.budget.max_duration_ms)) + judgeGraderMs
  const sequential: SequentialRule | undefined = opts.sequential && {
    width: opts.sequential.width,
    round_size: opts.sequential.roundSize ?? 10,
    min_attempts: opts.sequential.minAttempts ?? 10,
  }
  const parsed = RunPlan.safeParse({
    run_id: opts.runId ?? mintRunId(Date.now(), randomBytes(3).toString('hex')),
    config_id: configIdOf(opts.adapter, adapterConfig),
    suite_path: suite.path,
    suite: suite.name,
    task_ids: tasks.map((t) => t.id),
    attempts: opts.attempts,
    adapter: opts.adapter,
    adapter_config: adapterConfig,
    seed: opts.seed ?? randomBytes(4).toString('hex'),
    ...(opts.maxInFlight ? { max_in_flight: opts.maxInFlight } : {}),
    attempt_timeout_ms: longestBudget + 60_000,
    ...(opts.heartbeatTimeoutMs ? { heartbeat_timeout_ms: opts.heartbeatTimeoutMs } : {}),
    price_table_version: priceTable.version,
    price_table_date: priceTable.date,
    suite_hash: suite.contentHash,
    judge_model: opts.judgeModel ?? stamps.judge_model,
    judge_prompt_version: opts.judgePromptVersion ?? stamps.judge_prompt_version,
    ...(sequential ? { sequential } : {}),
    ...(judge ? { judge } : {}),
  })
  if (!parsed.success) {
    throw new ConfigError(`invalid run settings: ${parsed.error.issues.map((i) => `${i.path.map(String).join('.')}: ${i.message}`).join('; ')}`)
  }
  return { suite, tasks, plan: parsed.data, priceTable }
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
  estimate: CostEstimate
}

/**
 * `forge run --dry-run`: validates the suite and options, resolves the configuration and estimates
 * the run's token cost, without starting a server or calling a model. Earlier attempts of the same
 * suite and model, when the store holds some, give the estimate; else payload sizes do.
 */
export async function dryRun(config: ForgeConfig, opts: RunOptions): Promise<DryRunReport> {
  const { suite, tasks, plan, priceTable } = await prepareRun(opts)
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

export async function runSuite(config: ForgeConfig, opts: RunOptions, onEvent: (event: RunEvent) => void = () => undefined): Promise<RunReport> {
  const { suite, tasks, plan } = await prepareRun(opts)
  const runId = plan.run_id
  const seed = plan.seed
  const total = tasks.length * opts.attempts

  const endpoints = await stackUp(config, (message) => onEvent({ kind: 'stack', message }))
  const nc = await connectBus(endpoints.natsUrl, 'forge-run')
  const pool = startWorkerPool({
    count: opts.workers,
    temporalAddress: endpoints.temporalAddress,
    natsUrl: endpoints.natsUrl,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    concurrency: opts.concurrency,
    logDir: join(config.home, 'logs'),
    runId,
  })
  const connection = await Connection.connect({ address: endpoints.temporalAddress })
  const started = Date.now()
  try {
    const progress = followProgress(nc, runId, tasks, opts.attempts, onEvent)
    await pool.ready
    onEvent({ kind: 'workers', pids: pool.workers.map((w) => w.pid ?? 0) })
    const client = new Client({ connection, namespace: config.temporal.namespace })
    const handle = await client.workflow.start<typeof RunWorkflow>('RunWorkflow', {
      taskQueue: config.temporal.taskQueue,
      workflowId: `forge-run-${runId}`,
      args: [{ plan }],
    })
    onEvent({ kind: 'started', run_id: runId, tasks: tasks.length, attempts: opts.attempts, total, workers: opts.workers, seed })
    let result: RunWorkflowResult
    const cancel = () => void handle.cancel().catch(() => undefined)
    if (opts.signal?.aborted) cancel()
    opts.signal?.addEventListener('abort', cancel, { once: true })
    try {
      result = await handle.result()
    } catch (error) {
      if (error instanceof WorkflowFailedError) {
        const cancelled = opts.signal?.aborted === true
        throw new RunFailedError(cancelled ? `run ${runId} was cancelled; what finished is stored (forge stats --run-id ${runId})` : `run ${runId} failed: ${rootMessage(error)}`, { cause: error })
      }
      throw error
    } finally {
      opts.signal?.removeEventListener('abort', cancel)
    }
    const published = Object.values(result.tally.outcomes).reduce((a, b) => a + b, 0)
    // a sequential run schedules fewer attempts than tasks × attempts when tasks stop early
    const scheduled = result.total
    const wallMs = Date.now() - started
    progress.stop()

    const reader = await openReader(config)
    try {
      await waitForIngest(
        async () => {
          const [stored, run] = await Promise.all([countAttempts(reader, runId), getRun(reader, runId)])
          // the run's final record travels the same stream; count it as stored once it landed
          return run?.status === 'running' || run === undefined ? Math.min(stored, published - 1) : stored
        },
        published,
        opts.ingestTimeoutMs ?? 120_000,
        onEvent,
      )
      const stats = await getRunStats(reader, runId)
      return {
        ...stats,
        run_id: runId,
        seed,
        suite: suite.name,
        adapter: opts.adapter,
        isolation: isolationOf(opts.adapter, plan.adapter_config),
        expected_attempts: scheduled,
        not_executed: result.tally.not_executed,
        wall_ms: wallMs,
        attempts_per_second: scheduled / Math.max(wallMs / 1000, 0.001),
        ...(plan.judge !== undefined ? { judged: result.tally.judged ?? 0, judge_not_executed: result.tally.judge_not_executed ?? 0 } : {}),
      }
    } finally {
      await reader.close()
    }
  } finally {
    await pool.stop()
    await connection.close()
    await nc.drain().catch(() => undefined)
  }
}

/** Thrown when the run workflow itself failed (a configuration error, or it was cancelled). */
export class RunFailedError extends Error {
  override name = 'RunFailedError'
}

function rootMessage(error: Error): string {
  let current: unknown = error
  while (current instanceof Error && current.cause instanceof Error) current = current.cause
  return current instanceof Error ? current.message : String(current)
}

/** Refuses a run whose agents are to be sandboxed on a machine that cannot make a sandbox (exit 2, saying why and about --no-sandbox). */
async function requireSandboxFor(adapter: string, adapterConfig: Record<string, unknown>): Promise<void> {
  if (!sandboxRequested(adapter, adapterConfig)) return
  const sandbox = await sandboxSupport()
  if (!sandbox.ok) throw new ConfigError(new SandboxUnavailableError(sandbox.reason).message)
}

function validateRunOptions(opts: RunOptions): void {
  const int = (name: string, value: number, min: number, max: number) => {
    if (!Number.isInteger(value) || value < min || value > max) throw new ConfigError(`--${name} must be a whole number from ${min} to ${max}, got ${value}`)
  }
  int('attempts', opts.attempts, 1, 1_000_000)
  int('workers', opts.workers, 1, 256)
  int('concurrency', opts.concurrency, 1, 1000)
  if (!adapters.has(opts.adapter)) {
    throw new ConfigError(`unknown adapter "${opts.adapter}"; known adapters: ${[...adapters.keys()].join(', ')}`)
  }
  if (opts.runId !== undefined && !/^[A-Za-z0-9_-]{1,100}$/.test(opts.runId)) {
    throw new ConfigError(`--run-id may contain only letters, digits, _ and - (got "${opts.runId}")`)
  }
}

function selectTasks(all: Task[], wanted: string[] | undefined, suitePath: string): Task[] {
  if (!wanted || wanted.length === 0) return all
  const unknown = wanted.filter((id) => !all.some((t) => t.id === id))
  if (unknown.length > 0) {
    throw new ConfigError(`--task names tasks the suite at ${suitePath} does not have: ${unknown.join(', ')} (it has: ${all.map((t) => t.id).join(', ')})`)
  }
  return all.filter((t) => wanted.includes(t.id))
}

/** Counts finished attempts per task from live progress events; duplicates (retries) count once. */
function followProgress(
  nc: Awaited<ReturnType<typeof connectBus>>,
  runId: string,
  tasks: Task[],
  attempts: number,
  onEvent: (event: RunEvent) => void,
): { stop(): void } {
  const seen = new Map<string, Map<number, boolean>>()
  let doneTasks = 0
  const sub = nc.subscribe(subjects.progress(runId), {
    callback: (error, msg) => {
      if (error) return
      const event = msg.json<ProgressEvent>()
      const task = seen.get(event.task_id) ?? new Map<number, boolean>()
      seen.set(event.task_id, task)
      if (task.has(event.attempt)) return
      task.set(event.attempt, event.outcome === 'pass')
      if (task.size === attempts) {
        doneTasks++
        const k = [...task.values()].filter(Boolean).length
        onEvent({ kind: 'task-done', task_id: event.task_id, k, n: attempts, done_tasks: doneTasks, total_tasks: tasks.length })
      }
    },
  })
  return { stop: () => sub.unsubscribe() }
}

async function waitForIngest(
  count: () => Promise<number>,
  expected: number,
  timeoutMs: number,
  onEvent: (event: RunEvent) => void,
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let stored = await count()
  let lastReport = 0
  while (stored < expected && Date.now() < deadline) {
    if (Date.now() - lastReport > 2_000) {
      onEvent({ kind: 'ingesting', stored, expected })
      lastReport = Date.now()
    }
    await sleep(100)
    stored = await count()
  }
  if (stored < expected) onEvent({ kind: 'ingesting', stored, expected })
}
