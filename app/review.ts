/**
 * Tier 3 — the human review queue: attempts flagged because the pipeline could not confidently
 * localize their failure. `forge review list | show | resolve`. A resolution is stored as a new
 * row of `review_resolutions`; the original grade is never rewritten.
 */
import { randomBytes } from 'node:crypto'
import { FailureBucket, ReviewResolution, type Judgement, type MetricValue, type StoredTrace } from '../core/contracts/index.js'
import type { StoreReader } from '../store/clickhouse.js'
import { attemptMetrics, getJudgement, getResolution, getStoredTrace, listResolutions, reviewQueue, type ReviewQueueEntry } from '../store/grading-repositories.js'
import type { ForgeConfig } from '../stack/config.js'
import { ConfigError } from '../stack/errors.js'
import { writeGradingRecords } from './grading-store.js'
import { openReader } from './store-access.js'

export type ReviewState = 'open' | 'resolved' | 'all'

export async function listReviews(reader: StoreReader, opts: { runId?: string; state: ReviewState; limit: number }): Promise<ReviewQueueEntry[]> {
  return reviewQueue(reader, opts)
}

export interface ReviewDetail {
  judgement: Judgement
  /** every resolution recorded, oldest first; the last is the current one */
  resolutions: ReviewResolution[]
  metrics: MetricValue[]
  /** what was cut from the stored trace, when it was stored; null when no trace is stored */
  trace: Pick<StoredTrace, 'truncated' | 'stored_at'> & { tool_calls: number; spans: number } | null
}

/** One flagged attempt: its review packet (in the judgement), resolutions and metrics. */
export async function showReview(reader: StoreReader, attemptUid: string): Promise<ReviewDetail> {
  const judgement = await getJudgement(reader, attemptUid)
  if (judgement === undefined) throw new ConfigError(`no judgement is stored for attempt "${attemptUid}" (see forge review list)`)
  const [resolutions, metrics, stored] = await Promise.all([
    listResolutions(reader, attemptUid),
    attemptMetrics(reader, attemptUid, judgement.grading_version),
    getStoredTrace(reader, attemptUid),
  ])
  return {
    judgement,
    resolutions,
    metrics,
    trace: stored === undefined ? null : { truncated: stored.truncated, stored_at: stored.stored_at, tool_calls: stored.trace.tool_calls.length, spans: stored.trace.spans.length },
  }
}

export interface ResolveRequest {
  attemptUid: string
  verdict: ReviewResolution['verdict']
  failureBucket?: string
  note?: string
  reviewer?: string
  now?: () => number
}

/** Records a person's resolution of a flagged attempt, as a new row; returns it once stored. */
export async function resolveReview(config: ForgeConfig, request: ResolveRequest): Promise<ReviewResolution> {
  const now = request.now ?? Date.now
  const reader = await openReader(config)
  let judgement: Judgement | undefined
  try {
    judgement = await getJudgement(reader, request.attemptUid)
  } finally {
    await reader.close()
  }
  if (judgement === undefined) throw new ConfigError(`no judgement is stored for attempt "${request.attemptUid}" (see forge review list)`)
  if (!judgement.needs_human_review) {
    throw new ConfigError(`attempt "${request.attemptUid}" is not flagged for review (tier 3 did not flag it); nothing to resolve`)
  }
  let failureBucket: FailureBucket | null = null
  if (request.failureBucket !== undefined) {
    const bucket = FailureBucket.safeParse(request.failureBucket)
    if (!bucket.success) throw new ConfigError(`--failure-bucket must be one of ${FailureBucket.options.join(', ')}, got "${request.failureBucket}"`)
    failureBucket = bucket.data
  }
  const resolvedAt = now()
  const parsed = ReviewResolution.safeParse({
    resolution_id: `${request.attemptUid}#${resolvedAt}-${randomBytes(3).toString('hex')}`,
    attempt_uid: request.attemptUid,
    run_id: judgement.run_id,
    task_id: judgement.task_id,
    grading_version: judgement.grading_version,
    verdict: request.verdict,
    failure_bucket: failureBucket,
    note: request.note ?? '',
    reviewer: request.reviewer ?? process.env['USER'] ?? '',
    resolved_at: resolvedAt,
  })
  if (!parsed.success) throw new ConfigError(`invalid resolution: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`)
  const resolution = parsed.data
  await writeGradingRecords(config, { resolutions: [resolution] }, async (r) => (await getResolution(r, resolution.resolution_id)) !== undefined, now)
  return resolution
}
