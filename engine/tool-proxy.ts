/**
 * The tool proxy: the only door between an agent and a suite's tools. Every call is checked
 * (allowlist, denylist, argument schema), budgeted (tool calls, retries per tool) and recorded,
 * refused ones included. Budgets are enforced here, never trusted to the agent.
 *
 * Retry loops are caught per tool two ways: consecutive calls of a tool after its failure
 * (`retry_index`), and the same failing call (tool + arguments) repeated with other calls in
 * between; either past `max_retries_per_tool` exhausts the budget.
 *
 * With a fault profile, a call that passed every check may meet a seeded injected fault instead of
 * (or on top of) the tool (engine/faults.ts); the call records it in `injected_fault`. Injected
 * errors count as failures for the retry budget, as real ones would.
 */
import type { Budget, BudgetLimit, Task, ToolCall, ToolSpec } from '../core/contracts/index.js'
import type { FixtureHandle, LoadedSuite, ToolBox } from '../core/plugins.js'
import { guardToolArgs, type GuardedAnswer } from '../core/answer-guard.js'
import { validateToolArgs } from '../core/tool-args.js'
import { runToolCall, type AttemptFaults } from './faults.js'
import { boundRegexpBacktracking } from './regexp-backtracking.js'

export interface ToolBoxOptions {
  task: Task
  suite: LoadedSuite
  attemptUid: string
  budget: Budget
  /** epoch ms the attempt started at; call timings are relative to it */
  startedAt: number
  now?: () => number
  /** the attempt's environment instances, handed to every tool call (ToolRunContext.env) */
  env?: Readonly<Record<string, FixtureHandle>>
  /** the answer guard: expected answers to replace in arguments before a tool runs (core/answer-guard.ts) */
  guardAnswers?: readonly GuardedAnswer[]
  /** the run's fault injection: each call that passed the checks may get a seeded fault (engine/faults.ts) */
  faults?: AttemptFaults
  /** the attempt's stop signal: an injected timeout or latency never outlasts the attempt */
  signal?: AbortSignal
}

export interface RecordingToolBox extends ToolBox {
  /** every call in order, refused ones included */
  readonly calls: ToolCall[]
  /** the budget limit that stopped the agent, once one did */
  readonly exhaustedBy: BudgetLimit | undefined
  /** stops the box from outside (the attempt deadline): every later call is refused */
  exhaust(limit: BudgetLimit): void
}

type CallOutcome = { ok: true; result: unknown } | { ok: false; error: string }
type Refusal = NonNullable<ToolCall['refused']>

/** Builds the tool box of one attempt from the task's allowlist and the suite's tool definitions. */
export function createToolBox(opts: ToolBoxOptions): RecordingToolBox {
  // tool schemas' `pattern`s run on the agent's arguments: none may backtrack without bound
  boundRegexpBacktracking()
  const { task, suite, attemptUid, budget, startedAt } = opts
  const now = opts.now ?? Date.now
  const allowed = new Set(task.tools)
  const disallowed = new Set(task.disallowed_tools)
  const fixtures = suite.fixtures.get(task.id) ?? {}
  const env = opts.env ?? {}
  const specs: ToolSpec[] = task.tools.flatMap((name) => {
    const tool = suite.tools.get(name)
    return tool === undefined ? [] : [{ name: tool.name, description: tool.description, input_schema: tool.input_schema }]
  })

  const calls: ToolCall[] = []
  let exhaustedBy: BudgetLimit | undefined
  // calls that got past the exhaustion check: what max_tool_calls counts
  let counted = 0

  // failures of the same call (tool + args) since that tool last succeeded: catches a retry loop
  // that interleaves other calls, which the consecutive retry index cannot see
  const failedRepeats = new Map<string, number>()
  const callKey = (name: string, args: unknown): string => {
    try {
      return `${name}\u0000${JSON.stringify(args) ?? ''}`
    } catch {
      return `${name}\u0000${String(args)}`
    }
  }

  const record = (call: ToolCall, outcome: CallOutcome): CallOutcome => {
    // the index is taken when the call is recorded, so concurrent calls still get distinct ones
    calls.push({ ...call, index: calls.length })
    if (call.refused !== 'budget_exhausted') {
      if (call.error === undefined) {
        for (const key of failedRepeats.keys()) if (key.startsWith(`${call.name}\u0000`)) failedRepeats.delete(key)
      } else {
        const key = callKey(call.name, call.args)
        failedRepeats.set(key, (failedRepeats.get(key) ?? 0) + 1)
      }
    }
    return outcome
  }

  const call = async (name: string, args: unknown): Promise<CallOutcome> => {
    const started = now()
    const base = { index: calls.length, name, args, started_ms: Math.max(0, started - startedAt) }
    const refuse = (refused: Refusal, error: string, retryIndex: number): CallOutcome =>
      record({ ...base, error, refused, retry_index: retryIndex, duration_ms: Math.max(0, now() - started) }, { ok: false, error })

    // a call to the same tool right after a failed call of it is a retry
    const previous = calls[calls.length - 1]
    const retryIndex =
      previous !== undefined && previous.name === name && (previous.error !== undefined || previous.refused !== undefined)
        ? previous.retry_index + 1
        : 0

    if (exhaustedBy !== undefined) return refuse('budget_exhausted', `budget exhausted (${exhaustedBy}): no more tool calls`, retryIndex)
    if (counted >= budget.max_tool_calls) {
      exhaustedBy = 'max_tool_calls'
      return refuse('budget_exhausted', `budget exhausted: at most ${budget.max_tool_calls} tool calls`, retryIndex)
    }
    if (retryIndex > budget.max_retries_per_tool || (failedRepeats.get(callKey(name, args)) ?? 0) > budget.max_retries_per_tool) {
      exhaustedBy = 'max_retries_per_tool'
      return refuse('budget_exhausted', `budget exhausted: at most ${budget.max_retries_per_tool} retries of "${name}"`, retryIndex)
    }
    counted += 1

    const tool = allowed.has(name) ? suite.tools.get(name) : undefined
    if (tool === undefined) {
      if (disallowed.has(name)) return refuse('disallowed_tool', `tool "${name}" is not allowed for this task`, retryIndex)
      return refuse('hallucinated_tool', `no tool named "${name}" (available: ${task.tools.join(', ') || 'none'})`, retryIndex)
    }
    const problems =
      typeof args === 'object' && args !== null && !Array.isArray(args)
        ? validateToolArgs(tool.input_schema, args)
        : [`args: expected an object of named arguments, got ${Array.isArray(args) ? 'array' : args === null ? 'null' : typeof args}`]
    if (problems.length > 0) return refuse('malformed_tool_call', `invalid arguments for "${name}": ${problems.join('; ')}`, retryIndex)

    // the tool receives the arguments without the task's expected answers; the call keeps what the agent sent
    const guarded = opts.guardAnswers === undefined ? { args, intercepted: [] } : guardToolArgs(args, opts.guardAnswers)
    const interception = guarded.intercepted.length > 0 ? { intercepted: guarded.intercepted } : {}
    const fault = opts.faults?.schedule.next('tools', name)
    if (fault !== undefined) {
      // between the checks and the suite's tool: every adapter meets it the same way
      const outcome = await runToolCall(fault, opts.faults!.profile, name, async () => tool.run(guarded.args as Record<string, unknown>, { attemptUid, taskId: task.id, fixtures, env }), opts.signal)
      const faulted = { ...base, ...interception, injected_fault: fault.kind, retry_index: retryIndex, duration_ms: Math.max(0, now() - started) }
      return record(outcome.ok ? { ...faulted, result: outcome.result } : { ...faulted, error: outcome.error }, outcome)
    }
    try {
      const result = await tool.run(guarded.args as Record<string, unknown>, { attemptUid, taskId: task.id, fixtures, env })
      return record(
        { ...base, ...interception, result, retry_index: retryIndex, duration_ms: Math.max(0, now() - started) },
        { ok: true, result },
      )
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error)
      return record(
        { ...base, ...interception, error: message, retry_index: retryIndex, duration_ms: Math.max(0, now() - started) },
        { ok: false, error: message },
      )
    }
  }

  return {
    specs,
    calls,
    call,
    get exhausted() {
      return exhaustedBy !== undefined
    },
    get exhaustedBy() {
      return exhaustedBy
    },
    exhaust(limit: BudgetLimit) {
      exhaustedBy ??= limit
    },
  }
}
