import { destination, pino, type Logger } from 'pino'

export type { Logger }

/**
 * One structured logger per process role; JSON lines on stderr, level from FORGE_LOG_LEVEL. Records
 * without a category of their own are the process's bookkeeping: `scheduler` (core/log-records).
 */
export function createLogger(role: string): Logger {
  return pino({ name: `forge-${role}`, level: process.env['FORGE_LOG_LEVEL'] ?? 'info', mixin: () => ({ category: 'scheduler' }) }, destination(2))
}
