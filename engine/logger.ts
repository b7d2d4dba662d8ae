import { createRequire } from 'node:module'
import type { Logger } from 'pino'
import { readSetting, type LogLevel } from '../config/index.js'
import { Redactor, secretValuesOf } from '../core/redaction.js'
import type { LogCategory } from '../core/log-records.js'

export type { Logger }

type Pino = typeof import('pino')
let pinoModule: Pino | undefined
/**
 * pino, loaded when the process makes its first logger (issue 15): a command that logs nothing — `forge
 * run` plans with the adapters' registry, whose HTTP adapter makes a logger when it first logs — does not
 * load and evaluate it (~15 ms of its start).
 */
const loadPino = (): Pino => (pinoModule ??= createRequire(import.meta.url)('pino') as Pino)

/**
 * Categories of process logs beyond a run's (core/log-records `LOG_CATEGORIES`): the ingester's
 * consuming and rejecting (`ingest`), its inserts (`store`) and its NATS consumer (`bus`).
 */
export const PROCESS_LOG_CATEGORIES = ['ingest', 'store', 'bus'] as const
export type LogRecordCategory = LogCategory | (typeof PROCESS_LOG_CATEGORIES)[number]

/**
 * The fields every Forge log record carries (core/log-records): a record about a run has `task_id: ''`
 * and `attempt: null`, one about something that is no span has null span ids. Pass them in the record's
 * object (not as child bindings: pino would print `category` twice).
 */
export interface LogFields {
  run_id: string | null
  task_id: string
  attempt: number | null
  span_id: string | null
  parent_span_id: string | null
  category: LogRecordCategory
}

/**
 * One structured logger per process role; JSON lines on stderr, at the process's FORGE_LOG_LEVEL unless
 * given. Records without a category of their own get the role's `category` (default `scheduler`, the
 * process's bookkeeping).
 */
export function createLogger(role: string, level: LogLevel = readSetting('logLevel'), category: LogRecordCategory = 'scheduler'): Logger {
  // log lines go to files under FORGE_HOME: they are redacted like everything a worker publishes
  const secrets = secretValuesOf(process.env)
  const { pino, destination } = loadPino()
  return pino(
    {
      name: `forge-${role}`,
      level,
      mixin: () => ({ category }),
      hooks: {
        logMethod(args, method) {
          const redactor = new Redactor({ secrets })
          const redacted = args.map((arg: unknown) => redactLogArgument(arg, redactor))
          method.apply(this, redacted as Parameters<typeof method>)
        },
      },
    },
    destination(2),
  )
}

/** A log argument with secrets and PII replaced; errors keep their type (pino serializes message and stack). */
export function redactLogArgument(arg: unknown, redactor: Redactor): unknown {
  if (arg instanceof Error) {
    const copy = Object.assign(Object.create(Object.getPrototypeOf(arg) as object) as Error, arg)
    copy.message = redactor.text(arg.message)
    if (arg.stack !== undefined) copy.stack = redactor.text(arg.stack)
    return copy
  }
  if (arg !== null && typeof arg === 'object' && !Array.isArray(arg)) {
    return Object.fromEntries(Object.entries(arg).map(([key, value]) => [key, value instanceof Error ? redactLogArgument(value, redactor) : redactor.value(value)]))
  }
  return redactor.value(arg)
}
