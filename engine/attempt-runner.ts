/**
 * Runs one attempt: builds the payload the agent may see, invokes the adapter behind the tool
 * proxy under the attempt's deadline, captures the trace, grades it after the agent stopped and
 * decides the verdict. Agent failures — a crash included — come back as data in the
 * AttemptResult; only bugs of the harness itself throw.
 */
import {
  AgentTrace,
  AttemptResult,
  InvocationPayload,
  attemptUid,
  type AgentTraceInput,
  type BudgetLimit,
  type FaultProfile,
  type Grade,
  type InvariantResult,
  type Judgement,
  type JudgeSettings,
  type MetricValue,
  type Span,
  type Task,
  type ToolCall,
  type ToolSpec,
} from '../core/contracts/index.js'
import type { EnvironmentView } from '../core/env-diff.js'
import { envQueriesOf, outputText } from '../core/graders/index.js'
import { planJudging } from '../core/judging.js'
import { runDeterministicMetrics } from '../core/metrics/index.js'
import type { AdapterContext, AdapterOutput, AgentAdapter, LoadedSuite } from '../core/plugins.js'
import { costOf, type PriceTable } from '../core/pricing.js'
import { seedFromString } from '../core/random.js'
import { decideJudgement } from '../core/review.js'
import { decideVerdict } from '../core/verdict.js'
import { gradeTrace, withoutSelfReport } from './grade-trace.js'
import type { RateLimiter } from './judge/rate-limit.js'
import { resolveUpstream, startLlmGateway, type LlmGateway } from './llm/gateway.js'
import { startEnvironment } from './env/lifecycle.js'
import { environmentFixtures, type EnvironmentPool } from './env/pool.js'
import { attemptFaults, countInjectedFaults, metDisruptiveFault } from './faults.js'
import { createToolBox } from './tool-proxy.js'

export interface ExecuteAttemptOptions {
  suite: LoadedSuite
  task: Task
  adapter: AgentAdapter
  runId: string
  configId: string
  attempt: number
  runSeed: string
  adapterConfig: Record<string, unknown>
  workerId: string
  now?: () => number
  /** how long to wait for an aborted adapter to hand back what it has (default 250 ms) */
  graceMs?: number
  /** prices model calls made through the LLM gateway; its version is stamped on the result */
  priceTable?: PriceTable
  /** where the LLM gateway finds its upstream (OPENAI_BASE_URL, OPENAI_API_KEY); default process.env */
  env?: NodeJS.ProcessEnv
  /** where environment fixtures (workspace, sqlite, http) get their instances; default the worker's shared pool */
  envPool?: EnvironmentPool
  /**
   * The run's judge (RunPlan.judge): decides what is sent to the judge worker, and gives the tier-0
   * `judge` grader its default model and decoding. Its endpoint comes from `env`
   * (FORGE_JUDGE_BASE_URL / FORGE_JUDGE_API_KEY, else OPENAI_BASE_URL / OPENAI_API_KEY).
   */
  judge?: { settings?: JudgeSettings | undefined; limiter?: RateLimiter | undefined }
  /** the run's fault profile (RunPlan.faults): seeded faults in the tool proxy and the LLM gateway */
  faults?: FaultProfile | undefined
}

/** Grading beyond tier 0/1: the deterministic metrics, tier 2/3 as known now, and what the judge worker is to do. */
export interface AttemptGrading {
  /** the 17 deterministic metrics, plus judge metrics the gate skipped */
  metrics: MetricValue[]
  /** tier 2 / tier 3, revision 1 */
  judgement: Judgement
  /** the judge worker's part; undefined: no judge activity for this attempt */
  judge?: { golden_divergence: boolean; metrics: boolean }
  /** the environment view the graders read (for the stored trace) */
  env?: EnvironmentView
}

export interface AttemptExecution {
  result: AttemptResult
  /** the full trace (untruncated, with spans), for span publishing and debugging */
  trace: AgentTrace
  grading: AttemptGrading
}

/** Size limits that keep one published message small. */
export const LIMITS = {
  outputBytes: 16 * 1024,
  errorBytes: 4 * 1024,
  // args + result + error of one tool call stay under 4 KiB together
  toolArgsBytes: 1536,
  toolResultBytes: 1536,
  toolErrorBytes: 768,
} as const

const DEFAULT_GRACE_MS = 250
/** the one adapter that receives the task's golden trace */
export const ORACLE_ADAPTER = 'oracle'

/** The only thing the agent receives: instruction, input, allowlisted tool specs, denylist, budget. */
export function buildInvocationPayload(task: Task, suite: LoadedSuite): InvocationPayload {
  const tools: ToolSpec[] = task.tools.map((name) => {
    const tool = suite.tools.get(name)
    if (tool === undefined) throw new Error(`task "${task.id}" allows tool "${name}", which suite "${suite.name}" does not define`)
    return { name: tool.name, description: tool.description, input_schema: structuredClone(tool.input_schema) }
  })
  // cloned so an agent mutating its payload cannot reach the task
  return InvocationPayload.parse({
    instruction: task.instruction,
    input: structuredClone(task.input),
    tools,
    disallowed_tools: [...task.disallowed_tools],
    budget: { ...task.budget },
  })
}

/** Runs one attempt and returns its result; see runAttempt for the trace as well. */
export async function executeAttempt(opts: ExecuteAttemptOptions): Promise<AttemptResult> {
  return (await runAttempt(opts)).result
}

type Invocation =
  | { kind: 'returned'; output: AdapterOutput }
  | { kind: 'threw'; error: unknown }
  | { kind: 'timed_out'; output: AdapterOutput | undefined }
  /** the environment's seed could not be verified: the agent was never invoked */
  | { kind: 'skipped' }

/** Runs one attempt; returns the result to publish and the full trace it was graded on. */
export async function runAttempt(opts: ExecuteAttemptOptions): Promise<AttemptExecution> {
  const { suite, task, adapter } = opts
  const now = opts.now ?? Date.now
  const uid = attemptUid(opts.runId, opts.configId, task.id, opts.attempt)
  // the run id is left out on purpose: the same run seed must reproduce an attempt in a new run
  const seed = seedFromString(`${opts.runSeed}:${opts.configId}/${task.id}/${opts.attempt}`)
  const budget = task.budget
  const startedAt = now()
  const since = (t: number): number => Math.max(0, t - startedAt)

  const payload = buildInvocationPayload(task, suite)
  // seeded and read back before any agent exists: a world nobody verified never meets an agent
  const hasEnvironment = environmentFixtures(task).length > 0
  const envStarted = hasEnvironment ? now() : startedAt
  const environment = await startEnvironment(opts.envPool !== undefined ? { suite, task, pool: opts.envPool } : { suite, task })
  const envSession = environment.status === 'ready' ? environment.session : undefined
  const envSeeded = hasEnvironment ? now() : envStarted
  const controller = new AbortController()
  const faults = opts.faults === undefined ? undefined : attemptFaults(opts.faults, { runSeed: opts.runSeed, configId: opts.configId, taskId: task.id, attempt: opts.attempt })
  const tools = createToolBox({
    task,
    suite,
    attemptUid: uid,
    budget,
    startedAt,
    now,
    ...(envSession !== undefined ? { env: envSession.handles } : {}),
    ...(faults !== undefined ? { faults, signal: controller.signal } : {}),
  })
  // started on the adapter's first ctx.llm(), closed when the agent stopped
  let gateway: Promise<LlmGateway> | undefined
  let agentStopped = false
  const startGateway = async (): Promise<LlmGateway> =>
    startLlmGateway({
      upstream: resolveUpstream(opts.adapterConfig, opts.env ?? process.env),
      maxTokens: budget.max_tokens,
      priceTable: opts.priceTable,
      startedAt,
      now,
      onBudgetExhausted: (limit) => tools.exhaust(limit),
      faults,
    })
  const ctx: AdapterContext = {
    attemptUid: uid,
    taskId: task.id,
    seed,
    tools,
    signal: controller.signal,
    config: opts.adapterConfig,
    budget,
    // an adapter still running past its deadline must not open a gateway nobody closes
    llm: () => (agentStopped ? Promise.reject(new Error('the attempt has ended: no model calls after it')) : (gateway ??= startGateway())),
  }
  // ground truth goes to the oracle only: it replays the golden to prove the task solvable
  const golden = adapter.name === ORACLE_ADAPTER ? suite.goldens.get(task.id) : undefined
  if (golden !== undefined) ctx.golden = structuredClone(golden)

  const agentStarted = now()
  const invocation: Invocation =
    environment.status === 'seed_unverified'
      ? { kind: 'skipped' }
      : await invokeWithDeadline(
          () => adapter.invoke(payload, ctx),
          budget.max_duration_ms,
          opts.graceMs ?? adapter.stopGraceMs ?? DEFAULT_GRACE_MS,
          () => {
            tools.exhaust('max_duration_ms')
            controller.abort(new Error(`attempt deadline of ${budget.max_duration_ms} ms reached`))
          },
        )
  const agentFinished = now()
  agentStopped = true
  const llm = gateway === undefined ? undefined : await gateway.catch(() => undefined)
  await llm?.close()
  const llmSummary = llm?.summary()

  let harnessError: string | undefined
  // an adapter that gives up by throwing once an injected fault hit it failed under the fault: the agent's failure, not the harness's
  const threwUnderFault = invocation.kind === 'threw' && faults !== undefined && metDisruptiveFault(tools.calls, llm?.spans ?? [])
  if (invocation.kind === 'threw' && !threwUnderFault) harnessError = `adapter "${adapter.name}" threw: ${errorMessage(invocation.error)}`
  if (environment.status === 'seed_unverified') harnessError = `environment not verified, agent not invoked: ${environment.report.detail}`
  const output = invocation.kind === 'threw' || invocation.kind === 'skipped' ? undefined : invocation.output

  // the end state is read once the agent stopped (its tool box is closed by then), before the restore
  let envView: EnvironmentView | undefined
  if (envSession !== undefined) {
    try {
      envView = await envSession.capture(envQueriesOf(task.outcome_graders))
    } catch (error) {
      harnessError ??= `the environment's end state could not be captured: ${errorMessage(error)}`
    }
  }

  let budgetLimit: BudgetLimit | undefined = tools.exhaustedBy
  // usage the gateway measured beats what an adapter says about itself
  const usage = llmSummary?.usage ?? output?.usage
  const totalTokens = (usage?.input_tokens ?? 0) + (usage?.output_tokens ?? 0)
  if (budgetLimit === undefined && budget.max_tokens !== undefined && totalTokens > budget.max_tokens) budgetLimit = 'max_tokens'

  const spans: NonNullable<AgentTraceInput['spans']> = [
    span('attempt', null, 'attempt', uid, 0, since(agentFinished), { task_id: task.id, adapter: adapter.name }),
    span('agent', 'attempt', 'agent', adapter.name, since(agentStarted), agentFinished - agentStarted, { result: invocation.kind }),
    ...tools.calls.map((call) =>
      span(`tool-${call.index}`, 'agent', 'tool', call.name, call.started_ms, call.duration_ms, {
        status: call.refused ?? (call.error !== undefined ? 'error' : 'ok'),
        ...(call.injected_fault !== undefined ? { injected_fault: call.injected_fault } : {}),
      }),
    ),
    ...(llm?.spans ?? []),
    ...(output?.spans ?? []).map((s) => ({ ...s, parent_span_id: s.parent_span_id ?? 'agent' })),
  ]
  const traceInput: AgentTraceInput = {
    output: output?.output,
    tool_calls: tools.calls,
    spans,
    // the environment diff rides along so invariants (pure functions of the trace) can read state changes
    state_snapshots: [...(output?.state_snapshots ?? []), ...(envView !== undefined ? [{ label: 'env_diff', at_ms: since(agentFinished), state: envView.diff }] : [])],
    errors: [...(output?.errors ?? []), ...(threwUnderFault && invocation.kind === 'threw' ? [{ kind: 'agent_error', message: `adapter "${adapter.name}" threw after an injected fault: ${errorMessage(invocation.error)}` }] : [])],
    usage: { input_tokens: usage?.input_tokens ?? 0, output_tokens: usage?.output_tokens ?? 0 },
    duration_ms: Math.max(0, agentFinished - agentStarted),
    refused: output?.refused ?? false,
  }
  if (budgetLimit !== undefined) traceInput.budget_exhausted = budgetLimit
  if (output?.self_report !== undefined) traceInput.self_report = output.self_report
  if (output?.isolation_degraded !== undefined) traceInput.isolation_degraded = output.isolation_degraded

  let trace: AgentTrace
  const parsedTrace = AgentTrace.safeParse(traceInput)
  if (parsedTrace.success) {
    trace = parsedTrace.data
  } else {
    // bad agent output is data about the adapter: keep what the harness itself captured
    const problems = parsedTrace.error.issues.map((i) => `${i.path.map(String).join('.') || '(output)'}: ${i.message}`)
    harnessError ??= `adapter "${adapter.name}" returned an invalid trace: ${problems.join('; ')}`
    trace = AgentTrace.parse({
      output: undefined,
      tool_calls: tools.calls,
      spans: spans.slice(0, 2 + tools.calls.length),
      duration_ms: traceInput.duration_ms,
      ...(budgetLimit !== undefined ? { budget_exhausted: budgetLimit } : {}),
    })
  }

  // grading happens only now, after the agent stopped, on the captured trace
  const gradingStarted = now()
  let grades: Grade[] = []
  let invariants: InvariantResult[] = []
  // the agent's self-report is kept beside the trace and shown to reviewers, never graded
  const gradedTrace = withoutSelfReport(trace)
  if (harnessError === undefined) {
    const graded = await gradeTrace({
      suite,
      task,
      trace,
      env: envView,
      judge: opts.judge,
      processEnv: opts.env ?? process.env,
    })
    grades = graded.grades
    invariants = graded.invariants
    harnessError = graded.harnessError
  }
  const gradingFinished = now()
  trace.spans.push(span('grading', 'attempt', 'grading', 'grade', since(gradingStarted), gradingFinished - gradingStarted, {}))

  const envReport = environment.status === 'seed_unverified' ? environment.report : await envSession?.restore()
  const finishedAt = envSession !== undefined ? now() : gradingFinished
  if (environment.status !== 'none') {
    trace.spans.push(span('env-seed', 'attempt', 'fixture', 'seed+verify', since(envStarted), envSeeded - envStarted, { status: environment.status }))
    if (envSession !== undefined) {
      trace.spans.push(span('env-restore', 'attempt', 'fixture', 'restore+verify', since(gradingFinished), finishedAt - gradingFinished, { status: envReport?.status ?? '' }))
    }
  }

  const validity = trace.isolation_degraded !== undefined ? { validity: 'degraded' as const } : {}
  const verdict = decideVerdict(harnessError === undefined ? { trace, grades, invariants, ...validity } : { trace, grades, invariants, harnessError, ...validity })
  const configDecoding = opts.adapterConfig['decoding']
  const decoding = {
    ...(typeof configDecoding === 'object' && configDecoding !== null && !Array.isArray(configDecoding) ? configDecoding : {}),
    // what actually went to the model wins over what was configured
    ...(llmSummary?.decoding ?? {}),
  }
  const model =
    llmSummary !== undefined && llmSummary.models.length > 0
      ? llmSummary.models.join(',')
      : typeof opts.adapterConfig['model'] === 'string'
        ? opts.adapterConfig['model']
        : adapter.name

  const result = AttemptResult.parse({
    attempt_uid: uid,
    run_id: opts.runId,
    config_id: opts.configId,
    suite: suite.name,
    task_id: task.id,
    attempt: opts.attempt,
    adapter: adapter.name,
    outcome: verdict.outcome,
    validity: verdict.validity,
    failure_bucket: verdict.failure_bucket,
    budget_limit: budgetLimit ?? null,
    grades,
    invariants,
    instruction: task.instruction,
    output: truncateText(outputText(trace.output), LIMITS.outputBytes),
    self_report: truncateText(trace.self_report ?? '', LIMITS.errorBytes),
    error: truncateText(
      [harnessError ?? trace.errors.map((e) => `${e.kind}: ${e.message}`).join('; '), envReport?.status === 'quarantined' ? `environment ${envReport.detail}` : '']
        .filter((text) => text !== '')
        .join('; '),
      LIMITS.errorBytes,
    ),
    // the gateway's figure when it forwarded the model calls; else the usage the adapter reported,
    // priced from the table (an unpriced model or no table: unavailable, never zero)
    cost_usd: llmSummary !== undefined ? llmSummary.cost_usd : opts.priceTable ? costOf(opts.priceTable, model, trace.usage) : null,
    latency_ms: Math.max(0, agentFinished - agentStarted),
    tool_call_count: trace.tool_calls.length,
    input_tokens: trace.usage.input_tokens,
    output_tokens: trace.usage.output_tokens,
    model,
    decoding,
    price_table_version: opts.priceTable?.version ?? '',
    seed: String(seed),
    worker_id: opts.workerId,
    started_at: startedAt,
    finished_at: finishedAt,
    tool_calls: trace.tool_calls.map(compactToolCall),
    ...(faults !== undefined ? countInjectedFaults(trace) : {}),
    ...(envReport !== undefined ? { environment: envReport } : {}),
  })
  // deterministic metrics first; the judge worker gets only what they (and tier 0) allow
  const deterministic = runDeterministicMetrics({ trace: gradedTrace, task, grades, invariants })
  const judging = planJudging({
    settings: opts.judge?.settings,
    grades,
    deterministic,
    hasGolden: task.golden !== undefined && suite.goldens.has(task.id),
    invalid: verdict.validity === 'invalid',
  })
  const judgement = decideJudgement({
    ids: { attempt_uid: uid, run_id: opts.runId, config_id: opts.configId, suite: suite.name, task_id: task.id, attempt: opts.attempt },
    grading_version: 1,
    revision: 1,
    task,
    trace,
    verdict,
    grades,
    invariants,
    tier2: judging.tier2,
    created_at: finishedAt,
  })
  const grading: AttemptGrading = {
    metrics: [...deterministic, ...judging.skipped],
    judgement,
    ...(judging.request !== undefined ? { judge: judging.request } : {}),
    ...(envView !== undefined ? { env: envView } : {}),
  }
  return { result, trace, grading }
}

/**
 * Invokes the adapter; at the deadline calls `onDeadline` (abort + exhaust the tool box) and
 * waits at most `graceMs` more for whatever the adapter hands back.
 */
async function invokeWithDeadline(
  invoke: () => Promise<AdapterOutput>,
  deadlineMs: number,
  graceMs: number,
  onDeadline: () => void,
): Promise<Invocation> {
  const settled: Promise<Invocation> = (async () => invoke())().then(
    (output): Invocation => ({ kind: 'returned', output }),
    (error: unknown): Invocation => ({ kind: 'threw', error }),
  )
  const first = await raceTimer(settled, deadlineMs)
  if (first !== 'timer') return first
  onDeadline()
  const second = await raceTimer(settled, graceMs)
  // whatever it throws once aborted is the abort itself, not a harness error
  return { kind: 'timed_out', output: second !== 'timer' && second.kind === 'returned' ? second.output : undefined }
}

async function raceTimer<T>(promise: Promise<T>, ms: number): Promise<T | 'timer'> {
  let timer: NodeJS.Timeout | undefined
  const elapsed = new Promise<'timer'>((resolve) => {
    timer = setTimeout(() => resolve('timer'), ms)
  })
  try {
    return await Promise.race([promise, elapsed])
  } finally {
    clearTimeout(timer)
  }
}

function span(
  spanId: string,
  parent: string | null,
  category: Span['category'],
  name: string,
  startMs: number,
  durationMs: number,
  attributes: Record<string, unknown>,
): Span {
  return { span_id: spanId, parent_span_id: parent, category, name, start_ms: Math.max(0, startMs), duration_ms: Math.max(0, durationMs), attributes }
}

/** A tool call as published: args, result and error cut so one call stays under 4 KiB. */
export function compactToolCall(call: ToolCall): ToolCall {
  const compact: ToolCall = { ...call, args: truncateValue(call.args, LIMITS.toolArgsBytes) }
  if (call.result !== undefined) compact.result = truncateValue(call.result, LIMITS.toolResultBytes)
  if (call.error !== undefined) compact.error = truncateText(call.error, LIMITS.toolErrorBytes)
  return compact
}

/** `text` cut to at most `maxBytes` UTF-8 bytes, marked when cut. */
export function truncateText(text: string, maxBytes: number): string {
  const bytes = Buffer.byteLength(text, 'utf8')
  if (bytes <= maxBytes) return text
  const marker = `…[truncated ${bytes} bytes]`
  const keep = Math.max(0, maxBytes - Buffer.byteLength(marker, 'utf8'))
  // cutting mid-character leaves a replacement char at the end: drop it
  const head = Buffer.from(text, 'utf8').subarray(0, keep).toString('utf8').replace(/\uFFFD+$/, '')
  return `${head}${marker}`
}

/** A JSON value kept as it is when small, else replaced by its truncated JSON text. */
export function truncateValue(value: unknown, maxBytes: number): unknown {
  if (value === undefined) return undefined
  let json: string | undefined
  try {
    json = JSON.stringify(value)
  } catch {
    json = undefined
  }
  if (json === undefined) return truncateText(String(value), maxBytes)
  return Buffer.byteLength(json, 'utf8') <= maxBytes ? value : truncateText(json, maxBytes)
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
