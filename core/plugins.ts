/**
 * The seams the engine is built around: what a suite provides (tools, invariants, tasks, goldens),
 * what an adapter is, and what a grader is. The engine never imports a concrete tool or task type.
 */
import type { z } from 'zod'
import type {
  Budget,
  AgentTrace,
  AgentTraceInput,
  Grade,
  InvariantResult,
  InvocationPayload,
  SuiteManifest,
  Task,
  ToolSpec,
} from './contracts/index.js'
import type { EnvQuery, EnvironmentView } from './env-diff.js'
import type { JudgeGraderVerdict } from './graders/judge.js'
import type { JudgeGraderReply } from './judge/grader-prompt.js'
import type { JudgeRequest } from './judge/protocol.js'

/** A tool a suite ships. `run` is called only by the harness's tool proxy, never by an agent directly. */
export interface ToolDefinition extends ToolSpec {
  run(args: Record<string, unknown>, ctx: ToolRunContext): unknown | Promise<unknown>
}

export interface ToolRunContext {
  attemptUid: string
  taskId: string
  /** fixture files resolved for this task, by the path written in the task file */
  fixtures: Record<string, string>
  /**
   * This attempt's own environment instances, by fixture name (`workspace`, `db`, `api` unless the
   * task names them otherwise). Nothing in them is ground truth; no other attempt sees them.
   */
  env?: Readonly<Record<string, FixtureHandle>>
}

/** A per-attempt copy of a directory: tools read and write under `root` only. */
export interface WorkspaceHandle {
  kind: 'workspace'
  name: string
  /** absolute path of the attempt's copy */
  root: string
}

/** The subset of a better-sqlite3 statement that suite tools use. */
export interface SqlStatement {
  /** true when the statement only reads */
  readonly readonly: boolean
  /** true when the statement returns rows */
  readonly reader: boolean
  all(...params: unknown[]): unknown[]
  get(...params: unknown[]): unknown
  run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint }
}

/** The subset of a better-sqlite3 database that suite tools use. */
export interface SqlDatabase {
  prepare(sql: string): SqlStatement
  exec(sql: string): unknown
}

/** A per-attempt SQLite database, open for reading and writing. */
export interface SqliteHandle {
  kind: 'sqlite'
  name: string
  /** absolute path of the attempt's database file */
  path: string
  db: SqlDatabase
}

/** A per-attempt HTTP fixture service on 127.0.0.1. */
export interface HttpHandle {
  kind: 'http'
  name: string
  /** e.g. http://127.0.0.1:PORT (no trailing slash) */
  baseUrl: string
  /** the bearer token `request` sends; expired at the start under an `expired_token` condition */
  token: string
  /** one request with the current token; any status comes back as data, JSON bodies parsed */
  request(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }>
  /** trades the refresh token for a fresh bearer token (what a tool does after a 401) */
  refresh(): Promise<void>
}

export type FixtureHandle = WorkspaceHandle | SqliteHandle | HttpHandle

/** A tier-1 invariant: a pure function of the trace (no I/O, order-independent). */
export type InvariantFn = (trace: AgentTrace) => { passed: boolean; detail?: string }

export interface LoadedSuite {
  name: string
  /** absolute path of the suite directory */
  path: string
  manifest: SuiteManifest
  tasks: Task[]
  tools: Map<string, ToolDefinition>
  invariants: Map<string, InvariantFn>
  /** golden traces by task id, for tasks that name one */
  goldens: Map<string, AgentTrace>
  /** `file` fixture contents by task id, then by the path written in the task file */
  fixtures: Map<string, Record<string, string>>
  /** a content hash of every file of the suite, so runs can tell when suite content differs */
  contentHash: string
}

/** The only door an agent has to the tools: calls are checked, recorded and budgeted here. */
export interface ToolBox {
  specs: ToolSpec[]
  call(name: string, args: unknown): Promise<{ ok: true; result: unknown } | { ok: false; error: string }>
  /** true once a budget limit stopped the agent; every later call is refused */
  readonly exhausted: boolean
}

/** Where an agent reaches a model: the per-attempt OpenAI-compatible LLM gateway of its worker. */
export interface LlmEndpoint {
  /** e.g. http://127.0.0.1:PORT/v1 — give it to an agent as OPENAI_BASE_URL */
  baseURL: string
  /** a per-attempt token the gateway checks; give it as OPENAI_API_KEY (never the real key) */
  apiKey: string
}

export interface AdapterContext {
  attemptUid: string
  taskId: string
  /** a deterministic seed derived from the run seed and the attempt's key */
  seed: number
  tools: ToolBox
  signal: AbortSignal
  config: Record<string, unknown>
  /** the task's budget; the harness enforces it whatever the adapter does */
  budget: Budget
  /**
   * Starts (once per attempt) the LLM gateway: it forwards to the configured upstream, records
   * model, parameters and usage per call as spans, prices them and enforces max_tokens.
   */
  llm(): Promise<LlmEndpoint>
  /**
   * The task's golden trace: set by the runner for the `oracle` adapter only, which replays it to
   * prove the task solvable. Ground truth never reaches any other adapter.
   */
  golden?: AgentTrace
}

/** What an adapter returns; the harness fills in tool calls, timing and budget fields itself. */
export type AdapterOutput = Pick<
  AgentTraceInput,
  'output' | 'self_report' | 'refused' | 'usage' | 'errors' | 'spans' | 'state_snapshots' | 'isolation_degraded'
>

/** One surface through which an agent is invoked: `invoke(payload, ctx) → trace`. */
export interface AgentAdapter {
  name: string
  invoke(payload: InvocationPayload, ctx: AdapterContext): Promise<AdapterOutput>
  /**
   * How long the runner waits, after aborting at the deadline, for this adapter to stop its agent
   * and hand back what it has (default 250 ms). Out-of-process adapters need longer: they return
   * only once the agent's processes are gone.
   */
  stopGraceMs?: number
}

export interface GradeContext {
  task: Task
  /** fixture contents by path, for graders that read files */
  fixtures: Record<string, string>
  /** the environment fixtures' start and end state and their diff (tasks with workspace, sqlite or http fixtures) */
  env?: EnvironmentView
  /** LLM-backed graders' verdicts, by the grader's `judge.key(config)`; filled in by the worker (see GraderDefinition.judge) */
  judgements?: Readonly<Record<string, JudgeGraderVerdict>>
}

/** A tier-0 outcome grader, registered by name; `config` is validated by `configSchema` at load time. */
export interface GraderDefinition<C = unknown> {
  name: string
  description: string
  configSchema: z.ZodType<C>
  grade(config: C, trace: AgentTrace, ctx: GradeContext): Omit<Grade, 'grader'>
  /**
   * Read-only queries this grader needs answered against the end state (e.g. the `sql` grader's);
   * the worker runs them after the agent stopped and before the restore (GradeContext.env.queries).
   */
  envQueries?(config: C): EnvQuery[]
  /** The environment fixtures this grader reads, so suite validation can check the task has them. */
  fixtureRefs?(config: C): { name: string; kind?: 'workspace' | 'sqlite' | 'http' }[]
  /**
   * LLM-backed graders (`judge`): the question for a judge model about one attempt, built purely.
   * The worker asks it only once every deterministic grader of the task passed, and hands the
   * answer back in GradeContext.judgements under `key(config)`; `grade` stays pure.
   */
  judge?: {
    key(config: C): string
    /** the model the config names, if it names one */
    model(config: C): string | undefined
    request(config: C, trace: AgentTrace, ctx: GradeContext, opts: { maxChars: number }): JudgeRequest<JudgeGraderReply>
  }
}

export type { Grade, InvariantResult }
