/**
 * The one redaction step of an attempt (core/redaction.ts), applied by the attempt runner after
 * grading and before anything leaves the worker: the result (output, errors, grades, tool calls),
 * the stored trace (tool calls, spans, model spans, snapshots), the environment view, the metric
 * details and the judgement, and any error thrown out of the attempt (which Temporal would keep in
 * its history). Graders and the secret_leak / pii_exposure metrics have seen the raw trace by then.
 * One redactor per attempt, so a value has the same label everywhere in it.
 */
import type { AgentTrace, AttemptResult, Task } from '../core/contracts/index.js'
import { piiValuesIn, Redactor, secretValuesOf } from '../core/redaction.js'
import type { AttemptExecution } from './attempt-runner.js'

export interface AttemptRedactorInput {
  task: Task
  /** the task's golden trace: PII it holds is the suite's own, like the task's */
  golden?: AgentTrace | undefined
  /** the worker's environment: every variable whose name looks like a secret is searched for */
  processEnv: NodeJS.ProcessEnv
  /** further values known to be secret: those the adapter config passed by reference, the gateway's upstream key */
  secrets?: readonly string[]
}

/** The AttemptKey fields and worker stamps: identifiers, never redacted (rows are found by them). */
const KEY_FIELDS = new Set(['attempt_uid', 'run_id', 'config_id', 'suite', 'task_id', 'attempt', 'seed', 'worker_id'])

/**
 * The redactor of one attempt: the worker's secrets and those passed to the agent; PII the task
 * itself holds (instruction, input, graders, golden) stays, since the suite already has it and
 * graders compare against it, so a regrade of the stored trace grades what the worker graded.
 */
export function attemptRedactor(input: AttemptRedactorInput): Redactor {
  const secrets = [...secretValuesOf(input.processEnv), ...(input.secrets ?? [])]
  return new Redactor({ secrets, keepPii: taskPii(input.task, input.golden) })
}

/** The PII a task (and its golden) holds, once per loaded task: every attempt of it keeps the same. */
const piiOfTasks = new WeakMap<Task, Map<AgentTrace | undefined, string[]>>()

function taskPii(task: Task, golden: AgentTrace | undefined): string[] {
  let byGolden = piiOfTasks.get(task)
  if (byGolden === undefined) piiOfTasks.set(task, (byGolden = new Map()))
  let values = byGolden.get(golden)
  if (values === undefined) {
    values = piiValuesIn(`${JSON.stringify(task)}\n${golden === undefined ? '' : JSON.stringify(golden)}`)
    byGolden.set(golden, values)
  }
  return values
}

/** A result with every field but its keys redacted. */
export function redactResult(result: AttemptResult, redactor: Redactor): AttemptResult {
  const out: Record<string, unknown> = {}
  for (const [field, value] of Object.entries(result)) out[field] = KEY_FIELDS.has(field) ? value : redactor.value(value)
  return out as AttemptResult
}

/** The execution as it may leave the worker: result, trace and grading redacted with one redactor. */
export function redactExecution(execution: AttemptExecution, redactor: Redactor): AttemptExecution {
  const { grading } = execution
  return {
    result: redactResult(execution.result, redactor),
    trace: redactor.value(execution.trace),
    grading: {
      ...grading,
      metrics: redactor.value(grading.metrics),
      judgement: { ...redactor.value(grading.judgement), ...keysOf(grading.judgement) },
      ...(grading.env !== undefined ? { env: redactor.value(grading.env) } : {}),
    },
  }
}

function keysOf<T extends object>(row: T): Partial<T> {
  return Object.fromEntries(Object.entries(row).filter(([field]) => KEY_FIELDS.has(field))) as Partial<T>
}

/**
 * The error with its message, stack and causes redacted in place, so what Temporal records of a
 * failed attempt (and what a log prints) holds no secret.
 */
export function redactError<E>(error: E, redactor: Redactor): E {
  let current: unknown = error
  for (let depth = 0; current instanceof Error && depth < 10; depth++) {
    current.message = redactor.text(current.message)
    if (current.stack !== undefined) current.stack = redactor.text(current.stack)
    current = current.cause
  }
  return error
}
