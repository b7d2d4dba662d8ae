import { destination, pino, type Logger } from 'pino'
import { readSetting, type LogLevel } from '../config/index.js'

export type { Logger }

/** One structured logger per process role; JSON lines on stderr, at the process's FORGE_LOG_LEVEL unless given. */
export function createLogger(role: string, level: LogLevel = readSetting('logLevel')): Logger {
  return pino({ name: `forge-${role}`, level }, destination(2))
}
