import { destination, pino, type Logger } from 'pino'
import { readSetting, type LogLevel } from '../config/index.js'
import { Redactor, secretValuesOf } from '../core/redaction.js'

export type { Logger }

/**
 * One structured logger per process role; JSON lines on stderr, at the process's FORGE_LOG_LEVEL unless
 * given. Records without a category of their own are the process's bookkeeping: `scheduler` (core/log-records).
 */
export function createLogger(role: string, level: LogLevel = readSetting('logLevel')): Logger {
  // log lines go to files under FORGE_HOME: they are redacted like everything a worker publishes
  const secrets = secretValuesOf(process.env)
  return pino(
    {
      name: `forge-${role}`,
      level,
      mixin: () => ({ category: 'scheduler' }),
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
