/**
 * Runs one attempt: builds the payload the agent may see, invokes the adapter behind the tool
 * proxy under the attempt's deadline, captures the trace, grades it after the agent stopped
 * (engine/grading-pipeline.ts) and decides the verdict. Agent failures — a crash included — come
 * back as data in the AttemptResult; only bugs of the harness itself throw.
 */
import {
  AgentTrace,
  AttemptResult,
  InvocationPayload,
  type AgentTraceInput,
  type BudgetLimit,
  type EnvironmentReport,
  type FaultProfile,
  type Judgement,
  type JudgeSettings,
  type MetricValue,
  type Span,
  type Task,
  type ToolCall,
  type ToolSpec,
} from '../core/contracts/index.js'
import type { EnvironmentView } from '../core/env-diff.js'
import { expectedAnswersOf } from '../core/answer-guard.js'
import { RESULT_INSTRUCTION_BYTES } from '../core/message-size.js'
import { envQueriesOf, outputText } from '../core/graders/index.js'
import { attemptKeyFor, attemptSeedOf, type AttemptKey } from '../core/identity.js'
import type { AdapterContext, AdapterOutput, AgentAdapter, LoadedSuite } from '../core/plugins.js'
import { costOf, type PriceTable } from '../core/pricing.js'
import { gradeAttempt, goldenTraceOf, judgementOf, type AttemptGrades } from './grading-pipeline.js'
import { buildInvocationPayload } from './invocation-payload.js'
import type { RateLimiter } from './judge/rate-limit.js'
import { MAX_REFUSED_MODEL_CALLS, resolveUpstream, startLlmGateway, type LlmGateway, type LlmGatewaySummary } from './llm/gateway.js'
import { startEnvironment, type EnvironmentSession, type EnvironmentStart } from './env/lifecycle.js'
import { environmentFixtures, type EnvironmentPool } from './env/pool.js'
import { attemptRedactor, redactError, redactExecution } from './redact-attempt.js'
import { resolveSecretRefs } from './secrets.js'
import { attemptFaults, countInjectedFaults, metDisruptiveFault } from './faults.js'
import { processTaint, taintedProcessNote } from './process-taint.js'
import { createToolBox, type RecordingToolBox } from './tool-proxy.js'

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
  /** aborting it stops the agent (its run was cancelled); the caller then discards the attempt */
  signal?: AbortSignal
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
  /**
   * Redact secrets and PII from everything the attempt hands back — result, trace, grading, thrown
   * errors (engine/redact-attempt.ts); default true, `forge run --no-redact` turns it off.
   */
  redact?: boolean
  /** the answer guard (forge run --guard-answers): the task's expected answers are replaced in tool arguments before a tool runs */
  guardAnswers?: boolean
  /** the run's fault profile (RunPlan.faults): seeded faults in the tool proxy and the LLM gateway */
  faults?: FaultProfile | undefined
}

/** Grading beyond tier 0/1: the deterministic metrics, tier 2/3 as known now, and what the judge worker is to do. */
export interface AttemptGrading {
  /** the 18 deterministic metrics, plus judge metrics the gate skipped */
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

/** The attempt's clock: `now`, the attempt's start, and times relative to it (span offsets). */
interface AttemptClock {
  now: () => number
  startedAt: number
  since(t: number): number
}

/** The task's environment fixtures, seeded and verified (status `none` without fixtures). */
interface SeededEnvironment {
  start: EnvironmentStart
  session: EnvironmentSession | undefined
  startedAt: number
  seededAt: number
}

/** What the agent did, from the harness's side; the LLM gateway (if any) is closed by now. */
interface AgentRun {
  invocation: Invocation
  tools: RecordingToolBox
  startedAt: number
  finishedAt: number
  /** what the LLM gateway measured, when the adapter asked for one */
  llm: { summary: LlmGatewaySummary; spans: Span[] } | undefined
}

/** The trace as captured once the agent stopped, with the environment view the graders read. */
interface CapturedTrace {
  trace: AgentTrace
  /** the harness failed before grading: the adapter threw, the environment was not verified or not captured, the trace was invalid */
  harnessError: string | undefined
  envView: EnvironmentView | undefined
  budgetLimit: BudgetLimit | undefined
}

/** The environment put back after grading: its report, and when the attempt finished. */
interface RestoredEnvironment {
  report: EnvironmentReport | undefined
  finishedAt: number
}

/**
 * Runs one attempt; returns the result to publish and the full trace it was graded on, redacted
 * (unless `redact: false`). Secrets the adapter config names by reference are resolved here, on the
 * worker; graders and metrics see the raw trace, everything handed back is redacted with one
 * redactor that knows those secrets and the worker's own.
 */
export async function runAttempt(opts: ExecuteAttemptOptions): Promise<AttemptExecution> {
  const processEnv = opts.env ?? process.env
  const resolved = resolveSecretRefs(opts.adapterConfig, processEnv)
  const keyEnv = typeof opts.adapterConfig['api_key_env'] === 'string' ? opts.adapterConfig['api_key_env'] : 'OPENAI_API_KEY'
  const upstreamKey = processEnv[keyEnv]
  const redactor = attemptRedactor({
    task: opts.task,
    golden: goldenTraceOf(opts.suite, opts.task),
    processEnv,
    secrets: [...resolved.secrets, ...(upstreamKey !== undefined ? [upstreamKey] : [])],
  })
  try {
    const execution = await runAttemptUnredacted({ ...opts, adapterConfig: resolved.config }, redactor.knownSecrets)
    return opts.redact === false ? execution : redactExecution(execution, redactor)
  } catch (error) {
    throw opts.redact === false ? error : redactError(error, redactor)
  }
}

/**
 * Steps of one attempt: seed the environment → run the agent → capture the trace → grade
 * (engine/grading-pipeline.ts) → restore the environment → the result and the judgement.
 */
async function runAttemptUnredacted(opts: ExecuteAttemptOptions, secrets: readonly string[]): Promise<AttemptExecution> {
  const { suite, task } = opts
  const key = attemptKeyFor({ run_id: opts.runId, config_id: opts.configId, suite: suite.name, task_id: task.id, attempt: opts.attempt })
  const seed = attemptSeedOf(key, opts.runSeed)
  const now = opts.now ?? Date.now
  const startedAt = now()
  const clock: AttemptClock = { now, startedAt, since: (t) => Math.max(0, t - startedAt) }

  const payload = buildInvocationPayload(task, suite)
  const environment = await seedEnvironment(opts, clock)
  const agent = await runAgent(opts, { key, seed, payload, environment, clock })
  const captured = await captureTrace(opts, { key, environment, agent, clock })

  // grading happens only now, after the agent stopped, on the captured trace
  const gradingStarted = now()
  const graded = await gradeAttempt({
    suite,
    task,
    trace: captured.trace,
    env: captured.envView,
    judge: opts.judge,
    processEnv: opts.env ?? process.env,
    harnessError: captured.harnessError,
    secrets,
  })
  const gradingFinished = now()
  captured.trace.spans.push(span('grading', 'attempt', 'grading', 'grade', clock.since(gradingStarted), gradingFinished - gradingStarted, {}))

  const restored = await restoreEnvironment(environment, captured.trace, gradingFinished, clock)
  const result = attemptResultOf(opts, { key, seed, agent, captured, graded, restored, startedAt })
  const grading: AttemptGrading = {
    metrics: [...graded.deterministic, ...graded.judging.skipped],
    judgement: judgementOf({ key, task, trace: captured.trace, graded, tier2: graded.judging.tier2, gradingVersion: 1, revision: 1, createdAt: restored.finishedAt }),
    ...(graded.judging.request !== undefined ? { judge: graded.judging.request } : {}),
    ...(captured.envView !== undefined ? { env: captured.envView } : {}),
  }
  return { result, trace: captured.trace, grading }
}

/** Seeds the task's environment and reads it back before any agent exists: a world nobody verified never meets an agent. */
async function seedEnvironment(opts: ExecuteAttemptOptions, clock: AttemptClock): Promise<SeededEnvironment> {
  const { suite, task } = opts
  const hasEnvironment = environmentFixtures(task).length > 0
  const envStarted = hasEnvironment ? clock.now() : clock.startedAt
  const start = await startEnvironment(opts.envPool !== undefined ? { suite, task, pool: opts.envPool } : { suite, task })
  const envSeeded = hasEnvironment ? clock.now() : envStarted
  return { start, session: start.status === 'ready' ? start.session : undefined, startedAt: envStarted, seededAt: envSeeded }
}

/** Invokes the adapter behind the tool proxy (and the LLM gateway it asks for) under the attempt's deadline. */
async function runAgent(
  opts: ExecuteAttemptOptions,
  input: { key: AttemptKey; seed: number; payload: InvocationPayload; environment: SeededEnvironment; clock: AttemptClock },
): Promise<AgentRun> {
  const { suite, task, adapter } = opts
  const { key, environment, clock } = input
  const budget = task.budget
  const session = environment.session
  const guardAnswers = opts.guardAnswers === true ? { guardAnswers: expectedAnswersOf(task, goldenTraceOf(suite, task)) } : {}
  const controller = new AbortController()
  // the attempt was cancelled from outside (its run was cancelled): stop the agent as at a deadline
  const cancelled = (): void => controller.abort(opts.signal?.reason ?? new Error('the attempt was cancelled'))
  if (opts.signal?.aborted === true) cancelled()
  opts.signal?.addEventListener('abort', cancelled, { once: true })
  const faults = opts.faults === undefined ? undefined : attemptFaults(opts.faults, { runSeed: opts.runSeed, configId: key.config_id, taskId: task.id, attempt: key.attempt })
  const tools = createToolBox({
    task,
    suite,
    attemptUid: key.attempt_uid,
    budget,
    startedAt: clock.startedAt,
    now: clock.now,
    ...(session !== undefined ? { env: session.handles } : {}),
    ...(faults !== undefined ? { faults, signal: controller.signal } : {}),
    ...guardAnswers,
  })
  // started on the adapter's first ctx.llm(), closed when the agent stopped
  let gateway: Promise<LlmGateway> | undefined
  let agentStopped = false
  const startGateway = async (): Promise<LlmGateway> =>
    startLlmGateway({
      upstream: resolveUpstream(opts.adapterConfig, opts.env ?? process.env),
      maxTokens: budget.max_tokens,
      priceTable: opts.priceTable,
      startedAt: clock.startedAt,
      now: clock.now,
      onBudgetExhausted: (limit) => tools.exhaust(limit),
      faults,
    })
  const ctx: AdapterContext = {
    attemptUid: key.attempt_uid,
    taskId: task.id,
    seed: input.seed,
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

  const agentStarted = clock.now()
  const invocation: Invocation =
    environment.start.status === 'seed_unverified'
      ? { kind: 'skipped' }
      : await invokeWithDeadline(
          () => adapter.invoke(input.payload, ctx),
          budget.max_duration_ms,
          opts.graceMs ?? adapter.stopGraceMs ?? DEFAULT_GRACE_MS,
          () => {
            tools.exhaust('max_duration_ms')
            controller.abort(new Error(`attempt deadline of ${budget.max_duration_ms} ms reached`))
          },
        )
  const agentFinished = clock.now()
  agentStopped = true
  opts.signal?.removeEventListener('abort', cancelled)
  const llm = gateway === undefined ? undefined : await gateway.catch(() => undefined)
  await llm?.close()
  return { invocation, tools, startedAt: agentStarted, finishedAt: agentFinished, llm: llm === undefined ? undefined : { summary: llm.summary(), spans: llm.spans } }
}

/** The trace of a stopped agent: what the harness recorded (tool calls, spans, usage, end state) and what the adapter handed back. */
async function captureTrace(
  opts: ExecuteAttemptOptions,
  input: { key: AttemptKey; environment: SeededEnvironment; agent: AgentRun; clock: AttemptClock },
): Promise<CapturedTrace> {
  const { task, adapter } = opts
  const { environment, agent, clock } = input
  const { invocation, tools } = agent
  const budget = task.budget

  let harnessError: string | undefined
  // an adapter that gives up by throwing once an injected fault hit it failed under the fault: the agent's failure, not the harness's
  const threwUnderFault = invocation.kind === 'threw' && opts.faults !== undefined && metDisruptiveFault(tools.calls, agent.llm?.spans ?? [])
  if (invocation.kind === 'threw' && !threwUnderFault) harnessError = `adapter "${adapter.name}" threw: ${errorMessage(invocation.error)}`
  if (environment.start.status === 'seed_unverified') harnessError = `environment not verified, agent not invoked: ${environment.start.report.detail}`
  const output = invocation.kind === 'threw' || invocation.kind === 'skipped' ? undefined : invocation.output

  // the end state is read once the agent stopped (its tool box is closed by then), before the restore
  let envView: EnvironmentView | undefined
  if (environment.session !== undefined) {
    try {
      envView = await environment.session.capture(envQueriesOf(task.outcome_graders))
    } catch (error) {
      harnessError ??= `the environment's end state could not be captured: ${errorMessage(error)}`
    }
  }

  let budgetLimit: BudgetLimit | undefined = tools.exhaustedBy
  // usage the gateway measured beats what an adapter says about itself
  const usage = agent.llm?.summary.usage ?? output?.usage
  const totalTokens = (usage?.input_tokens ?? 0) + (usage?.output_tokens ?? 0)
  if (budgetLimit === undefined && budget.max_tokens !== undefined && totalTokens > budget.max_tokens) budgetLimit = 'max_tokens'

  const spans: NonNullable<AgentTraceInput['spans']> = [
    span('attempt', null, 'attempt', input.key.attempt_uid, 0, clock.since(agent.finishedAt), { task_id: task.id, adapter: adapter.name }),
    span('agent', 'attempt', 'agent', adapter.name, clock.since(agent.startedAt), agent.finishedAt - agent.startedAt, { result: invocation.kind }),
    ...tools.calls.map((call) =>
      span(`tool-${call.index}`, 'agent', 'tool', call.name, call.started_ms, call.duration_ms, {
        status: call.refused ?? (call.error !== undefined ? 'error' : 'ok'),
        ...(call.injected_fault !== undefined ? { injected_fault: call.injected_fault } : {}),
      }),
    ),
    ...(agent.llm?.spans ?? []),
    ...(output?.spans ?? []).map((s) => ({ ...s, parent_span_id: s.parent_span_id ?? 'agent' })),
  ]
  const traceInput: AgentTraceInput = {
    output: output?.output,
    tool_calls: tools.calls,
    spans,
    // the environment diff rides along so invariants (pure functions of the trace) can read state changes
    state_snapshots: [...(output?.state_snapshots ?? []), ...(envView !== undefined ? [{ label: 'env_diff', at_ms: clock.since(agent.finishedAt), state: envView.diff }] : [])],
    errors: [
      ...(output?.errors ?? []),
      ...(threwUnderFault && invocation.kind === 'threw' ? [{ kind: 'agent_error', message: `adapter "${adapter.name}" threw after an injected fault: ${errorMessage(invocation.error)}` }] : []),
      ...(agent.llm?.summary.closed_early === true
        ? [{ kind: 'gateway_closed', message: `the LLM gateway closed after refusing ${MAX_REFUSED_MODEL_CALLS} requests of this attempt (${agent.llm.summary.refused_calls} refused in all): malformed or unauthorized requests, other routes, or a spent token budget` }]
        : []),
    ],
    usage: { input_tokens: usage?.input_tokens ?? 0, output_tokens: usage?.output_tokens ?? 0 },
    duration_ms: Math.max(0, agent.finishedAt - agent.startedAt),
    refused: output?.refused ?? false,
  }
  if (budgetLimit !== undefined) traceInput.budget_exhausted = budgetLimit
  if (output?.self_report !== undefined) traceInput.self_report = output.self_report
  // an adapter that ran unsandboxed says so; an attempt in a process some earlier agent code tainted is no better
  const taint = processTaint()
  if (output?.isolation_degraded !== undefined) traceInput.isolation_degraded = output.isolation_degraded
  else if (taint !== undefined) {
    // not this attempt's choice: said as an error too, as an http agent's failed reset is, so forge trace shows it
    traceInput.isolation_degraded = taintedProcessNote(taint)
    traceInput.errors = [...(traceInput.errors ?? []), { kind: 'isolation', message: traceInput.isolation_degraded }]
  }
  if (opts.guardAnswers === true) traceInput.answer_guard = true

  const parsedTrace = AgentTrace.safeParse(traceInput)
  if (parsedTrace.success) return { trace: parsedTrace.data, harnessError, envView, budgetLimit }
  // bad agent output is data about the adapter: keep what the harness itself captured
  const problems = parsedTrace.error.issues.map((i) => `${i.path.map(String).join('.') || '(output)'}: ${i.message}`)
  harnessError ??= `adapter "${adapter.name}" returned an invalid trace: ${problems.join('; ')}`
  const trace = AgentTrace.parse({
    output: undefined,
    tool_calls: tools.calls,
    spans: spans.slice(0, 2 + tools.calls.length),
    duration_ms: traceInput.duration_ms,
    ...(budgetLimit !== undefined ? { budget_exhausted: budgetLimit } : {}),
    ...(traceInput.answer_guard === true ? { answer_guard: true } : {}),
    ...(traceInput.isolation_degraded !== undefined ? { isolation_degraded: traceInput.isolation_degraded } : {}),
  })
  return { trace, harnessError, envView, budgetLimit }
}

/** Puts the environment's baseline back and verifies it (or quarantines the instance); records the fixture spans. */
async function restoreEnvironment(environment: SeededEnvironment, trace: AgentTrace, gradingFinished: number, clock: AttemptClock): Promise<RestoredEnvironment> {
  const { start, session } = environment
  const report = start.status === 'seed_unverified' ? start.report : await session?.restore()
  const finishedAt = session !== undefined ? clock.now() : gradingFinished
  if (start.status !== 'none') {
    trace.spans.push(span('env-seed', 'attempt', 'fixture', 'seed+verify', clock.since(environment.startedAt), environment.seededAt - environment.startedAt, { status: start.status }))
    if (session !== undefined) {
      trace.spans.push(span('env-restore', 'attempt', 'fixture', 'restore+verify', clock.since(gradingFinished), finishedAt - gradingFinished, { status: report?.status ?? '' }))
    }
  }
  return { report, finishedAt }
}

/** The AttemptResult to publish: verdict, grades, measurements (cost, latency, tokens), model and decoding, timings. */
function attemptResultOf(
  opts: ExecuteAttemptOptions,
  parts: { key: AttemptKey; seed: number; agent: AgentRun; captured: CapturedTrace; graded: AttemptGrades; restored: RestoredEnvironment; startedAt: number },
): AttemptResult {
  const { task, adapter } = opts
  const { agent, graded, restored } = parts
  const { trace } = parts.captured
  const llmSummary = agent.llm?.summary
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

  // the key last: an object literal that starts with a spread is built on V8's slow path (see store/grading-converters.ts)
  return AttemptResult.parse({
    adapter: adapter.name,
    outcome: graded.verdict.outcome,
    // evidence that could not be restored is compromised (seed: quarantine that run): invalid, whatever the verdict
    validity: restored.report?.status === 'quarantined' ? 'invalid' : graded.verdict.validity,
    failure_bucket: graded.verdict.failure_bucket,
    budget_limit: parts.captured.budgetLimit ?? null,
    grades: graded.grades,
    invariants: graded.invariants,
    // the verbatim instruction stays in the suite (suite_hash); a result carries at most its first 64 KiB, marked
    instruction: truncateText(task.instruction, RESULT_INSTRUCTION_BYTES),
    output: truncateText(outputText(trace.output), LIMITS.outputBytes),
    self_report: truncateText(trace.self_report ?? '', LIMITS.errorBytes),
    error: truncateText(
      [graded.harnessError ?? trace.errors.map((e) => `${e.kind}: ${e.message}`).join('; '), restored.report?.status === 'quarantined' ? `environment ${restored.report.detail}` : '']
        .filter((text) => text !== '')
        .join('; '),
      LIMITS.errorBytes,
    ),
    // the gateway's figure when it forwarded the model calls; else the usage the adapter reported,
    // priced from the table (an unpriced model or no table: unavailable, never zero)
    cost_usd: llmSummary !== undefined ? llmSummary.cost_usd : opts.priceTable ? costOf(opts.priceTable, model, trace.usage) : null,
    latency_ms: Math.max(0, agent.finishedAt - agent.startedAt),
    tool_call_count: trace.tool_calls.length,
    input_tokens: trace.usage.input_tokens,
    output_tokens: trace.usage.output_tokens,
    model,
    decoding,
    price_table_version: opts.priceTable?.version ?? '',
    seed: String(parts.seed),
    worker_id: opts.workerId,
    started_at: parts.startedAt,
    finished_at: restored.finishedAt,
    tool_calls: trace.tool_calls.map(compactToolCall),
    ...(opts.faults !== undefined ? countInjectedFaults(trace) : {}),
    ...(restored.report !== undefined ? { environment: restored.report } : {}),
    ...parts.key,
  })
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
