/**
 * The ingester's log records carry the fields of every Forge log record (run_id, task_id, attempt,
 * span_id, parent_span_id, category — core/log-records): records about one attempt name it, records
 * about a run name the run, and a rejected message names what could be read from it. Pure.
 */
import type { LogFields, LogRecordCategory } from '../engine/logger.js'

/** A record about the process itself: no run, no attempt. */
export function processFields(category: LogRecordCategory): LogFields {
  return { run_id: null, task_id: '', attempt: null, span_id: null, parent_span_id: null, category }
}

/** A record about a whole run (or, with `run_id` null, about messages of no run, like a sweep's). */
export function runFields(runId: string | null, category: LogRecordCategory): LogFields {
  return { ...processFields(category), run_id: runId }
}

/** A record about one attempt: its span is the attempt's root span, as in worker logs (engine/attempt-log). */
export function attemptFields(key: { run_id: string; task_id: string; attempt: number; attempt_uid: string }, category: LogRecordCategory): LogFields & { attempt_uid: string } {
  return { run_id: key.run_id, task_id: key.task_id, attempt: key.attempt, attempt_uid: key.attempt_uid, span_id: 'attempt', parent_span_id: null, category }
}

/** The parts of an attempt_uid `run_id/config_id/task_id/attempt` (a task id may hold `/`), or undefined. */
export function partsOfAttemptUid(uid: string): { run_id: string; task_id: string; attempt: number } | undefined {
  const parts = uid.split('/')
  if (parts.length < 4) return undefined
  const attempt = Number(parts[parts.length - 1])
  if (!Number.isInteger(attempt) || attempt < 0) return undefined
  return { run_id: parts[0]!, task_id: parts.slice(2, -1).join('/'), attempt }
}

export interface RejectedMessageFields extends LogFields {
  subject: string
  attempt_uid?: string
  sweep_id?: string
}

/**
 * What a rejected message says about itself, as far as it can be read: its run, task, attempt and
 * attempt_uid from its JSON (or from the uid, or from the base64url uid ending a subject of one
 * attempt — its trace's or its message's, `keyedPrefixes`), its sweep.
 * Nothing of it is trusted: it only helps someone find the run that a bad message concerned.
 */
export function rejectedMessageFields(subject: string, data: Uint8Array, keyedPrefixes: readonly string[]): RejectedMessageFields {
  const fields: RejectedMessageFields = { ...processFields('ingest'), subject }
  let body: Record<string, unknown> = {}
  try {
    const parsed: unknown = JSON.parse(new TextDecoder().decode(data))
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed as Record<string, unknown>
  } catch {
    // not JSON: only the subject can say anything
  }
  const text = (key: string): string | undefined => {
    const value = body[key]
    return typeof value === 'string' && value !== '' ? value : undefined
  }
  let uid = text('attempt_uid')
  const prefix = keyedPrefixes.find((p) => subject.startsWith(p))
  if (uid === undefined && prefix !== undefined) {
    const decoded = Buffer.from(subject.slice(prefix.length), 'base64url').toString('utf8')
    if (partsOfAttemptUid(decoded) !== undefined) uid = decoded
  }
  const fromUid = uid === undefined ? undefined : partsOfAttemptUid(uid)
  if (uid !== undefined) fields.attempt_uid = uid
  const runId = text('run_id') ?? fromUid?.run_id
  if (runId !== undefined) fields.run_id = runId
  const taskId = text('task_id') ?? fromUid?.task_id
  if (taskId !== undefined) fields.task_id = taskId
  const number = body['attempt']
  const attempt = typeof number === 'number' && Number.isInteger(number) ? number : fromUid?.attempt
  if (attempt !== undefined) fields.attempt = attempt
  if (fields.attempt !== null) fields.span_id = 'attempt'
  const sweepId = text('sweep_id')
  if (sweepId !== undefined) fields.sweep_id = sweepId
  return fields
}

/** How many of these items belong to each run (items without a run under `null`). */
export function countByRun(items: Iterable<{ run_id?: string | undefined }>): Map<string | null, number> {
  const counts = new Map<string | null, number>()
  for (const item of items) {
    const run = item.run_id ?? null
    counts.set(run, (counts.get(run) ?? 0) + 1)
  }
  return counts
}
