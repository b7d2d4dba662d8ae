import { destination, pino, type Logger } from 'pino'
import { readSetting, type LogLevel } from '../config/index.js'

export type { Logger }

/**
 * One structured logger per process role; JSON lines on stderr, at the process's FORGE_LOG_LEVEL unless
 * given. Records without a category of their own are the process's bookkeeping: `scheduler` (core/log-records).
 */
export function createLogger(role: string, level: LogLevel = readSetting('logLevel')): Logger {
  return pino({ name: `forge-${role}`, level, mixin: () => ({ category: 'scheduler' }) }, destination(2))
}
