/**
 * `forge trace`: one stored attempt's span tree, found by attempt_uid or by run, task and attempt
 * number, with the facts of its attempts row and its newest judgement (tier 2, review flag).
 */
import type { Judgement, StoredTrace } from '../core/contracts/index.js'
import { buildTraceView, type TraceView } from '../core/span-tree.js'
import type { StoreReader } from '../store/clickhouse.js'
import { findAttempts, getAttemptEntry, getJudgementByUid, getTraceByUid, runTaskIds, type AttemptListEntry } from '../store/report-queries.js'
import { getRun } from '../store/repositories.js'
import { ConfigError } from '../stack/errors.js'

export type TraceRequest = { attemptUid: string } | { runId: string; taskId: string; attempt: number; configId?: string }

/** The attempts row a request names; a ConfigError that says what exists when it names nothing. */
export async function resolveAttempt(reader: StoreReader, request: TraceRequest): Promise<AttemptListEntry> {
  if ('attemptUid' in request) {
    const entry = await getAttemptEntry(reader, request.attemptUid)
    if (!entry) throw new ConfigError(`no attempt "${request.attemptUid}" is stored (attempt uids look like run_id/config_id/task_id/attempt)`)
    return entry
  }
  const matches = (await findAttempts(reader, request.runId, request.taskId, request.attempt)).filter((a) => request.configId === undefined || a.config_id === request.configId)
  if (matches.length === 1) return matches[0]!
  if (matches.length > 1) {
    throw new ConfigError(`run ${request.runId} has attempt ${request.attempt} of task ${request.taskId} under several configs (${matches.map((m) => m.config_id).join(', ')}): pass --attempt-uid`)
  }
  if (!(await getRun(reader, request.runId))) throw new ConfigError(`no run "${request.runId}" is stored (see forge runs list)`)
  const tasks = await runTaskIds(reader, request.runId)
  if (!tasks.includes(request.taskId)) {
    const shown = tasks.slice(0, 30).join(', ') + (tasks.length > 30 ? `, … (${tasks.length} in all)` : '')
    throw new ConfigError(`--task: run ${request.runId} has no task "${request.taskId}" (it has: ${shown || 'no stored attempts'})`)
  }
  throw new ConfigError(`--attempt: run ${request.runId} has no stored attempt ${request.attempt} of task ${request.taskId} (attempts count from 0)`)
}

/** The trace view of one stored attempt. */
export async function getTraceView(reader: StoreReader, request: TraceRequest): Promise<TraceView> {
  const entry = await resolveAttempt(reader, request)
  const [stored, judgement] = await Promise.all([getTraceByUid(reader, entry.attempt_uid), getJudgementByUid(reader, entry.attempt_uid)])
  if (!stored) {
    throw new ConfigError(`attempt ${entry.attempt_uid} is stored but its trace is not (runs stored before traces were kept, or the ingester is still behind)`)
  }
  return storedTraceView(stored, entry, judgement)
}

/** A stored trace as a view, with the facts of its attempts row and its newest judgement (`forge trace`, `forge ui`). */
export function storedTraceView(stored: StoredTrace, entry: AttemptListEntry, judgement: Judgement | undefined): TraceView {
  return buildTraceView(stored, {
    model: entry.model,
    cost_usd: entry.cost_usd,
    latency_ms: entry.latency_ms,
    input_tokens: entry.input_tokens,
    output_tokens: entry.output_tokens,
    tier2: judgement?.tier2 ?? null,
    needs_human_review: judgement?.needs_human_review ?? false,
    review_reasons: judgement?.review_reasons ?? [],
  })
}
