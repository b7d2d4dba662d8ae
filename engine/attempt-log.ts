/**
 * Worker logs of one attempt with the fields every Forge log record carries (run_id, task_id,
 * attempt, span_id, parent_span_id, category — core/log-records): at debug, one record per step;
 * at trace, every call with its arguments and results; a warning for every harness error.
 */
import type { AttemptResult, StoredTrace } from '../core/contracts/index.js'
import { attemptRecords } from '../core/log-records.js'
import { buildTraceView } from '../core/span-tree.js'
import type { Logger } from './logger.js'

export function logAttempt(logger: Logger, stored: StoredTrace, result: AttemptResult): void {
  const where = { run_id: result.run_id, task_id: result.task_id, attempt: result.attempt, attempt_uid: result.attempt_uid }
  if (result.failure_bucket === 'harness_error') {
    logger.warn({ ...where, span_id: 'attempt', parent_span_id: null, category: 'scheduler', error: result.error }, 'harness error')
  }
  if (!logger.isLevelEnabled('debug')) return
  const view = buildTraceView(stored, { model: result.model, cost_usd: result.cost_usd, latency_ms: result.latency_ms, input_tokens: result.input_tokens, output_tokens: result.output_tokens })
  for (const record of attemptRecords(view)) {
    const fields = { ...where, span_id: record.span_id, parent_span_id: record.parent_span_id, category: record.category, depth: record.depth, ...(record.data ?? {}) }
    if (record.level === 'steps') logger.debug(fields, record.msg)
    else logger.trace(fields, record.msg)
  }
}
