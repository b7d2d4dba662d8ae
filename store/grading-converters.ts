/** Pure row↔domain converters for the grading tables (traces, metrics, judgements, attempt_grades, review_resolutions). */
import type { AttemptRegrade, Judgement, MetricValue, ReviewPacket, ReviewResolution, StoredTrace, Tier2Result } from '../core/contracts/index.js'
import { attemptKeyOf, type AttemptKey } from '../core/identity.js'
import { fromChDateTime, toChDateTime } from './converters.js'

export interface TraceRow extends AttemptKey {
  stored: string
  bytes: number
  truncated: string[]
  stored_at: string
  ingested_at: string
}

/** A row of the `metrics` view: one metric of one attempt at one grading version. */
export interface MetricRow extends AttemptKey {
  grading_version: number
  metric: string
  metric_version: number
  kind: string
  status: string
  value: number | null
  passed: number | null
  detail: string
  judge_model: string
  judge_prompt_version: string
  judge_decoding: string
  ingested_at: string
}

/**
 * A row of `attempt_metrics`: every metric of one kind (deterministic, judge) of one attempt at one
 * grading version, column by column as arrays in the order they were computed. One row instead of
 * one per metric (issue 15): 18 rows of an attempt cost the ingester 2.4× the CPU of their one row.
 */
export interface AttemptMetricsRow extends AttemptKey {
  grading_version: number
  kind: string
  metric: string[]
  metric_version: number[]
  status: string[]
  value: (number | null)[]
  passed: (number | null)[]
  detail: string[]
  judge_model: string[]
  judge_prompt_version: string[]
  judge_decoding: string[]
  ingested_at: string
}

/** The per-metric columns of `attempt_metrics`, in the `metrics` view's order. */
export const METRIC_ARRAY_COLUMNS = ['metric', 'metric_version', 'status', 'value', 'passed', 'detail', 'judge_model', 'judge_prompt_version', 'judge_decoding'] as const

export interface JudgementRow extends AttemptKey {
  grading_version: number
  revision: number
  tier0_failed: number
  tier2_status: string
  divergence_step: number | null
  decision: string
  explanation: string
  confidence: number | null
  low_confidence: number
  tier2_calls: number
  tier2_error: string
  judge_model: string
  judge_prompt_version: string
  judge_decoding: string
  needs_human_review: number
  review_reasons: string[]
  review_packet: string
  created_at: string
  ingested_at: string
}

export interface AttemptGradeRow extends AttemptKey {
  grading_version: number
  outcome: string
  validity: string
  failure_bucket: string
  grades: string
  invariants: string
  error: string
  regraded_at: string
  ingested_at: string
}

export interface ResolutionRow {
  resolution_id: string
  attempt_uid: string
  run_id: string
  task_id: string
  grading_version: number
  verdict: string
  failure_bucket: string
  note: string
  reviewer: string
  resolved_at: string
}

export function storedTraceToRow(stored: StoredTrace, ingestedAt: number): TraceRow {
  const json = JSON.stringify(stored)
  return Object.assign(attemptKeyOf(stored), {
    stored: json,
    bytes: Buffer.byteLength(json, 'utf8'),
    truncated: stored.truncated,
    stored_at: toChDateTime(stored.stored_at),
    ingested_at: toChDateTime(ingestedAt),
  })
}

/** The `attempt_metrics` rows of an attempt's metrics at a grading version: one per kind present (deterministic first). */
export function metricsToRows(key: AttemptKey, gradingVersion: number, metrics: readonly MetricValue[], ingestedAt: number): AttemptMetricsRow[] {
  const ingested = toChDateTime(ingestedAt)
  const rows = new Map<string, AttemptMetricsRow>()
  for (const m of metrics) {
    let row = rows.get(m.kind)
    if (row === undefined) {
      // Object.assign, not `{ ...attemptKey, … }`: V8 (Node 20) builds an object literal that starts with
      // a spread property by property on a slow path (issue 15's profile)
      row = Object.assign(attemptKeyOf(key), {
        grading_version: gradingVersion,
        kind: m.kind as string,
        metric: [] as string[],
        metric_version: [] as number[],
        status: [] as string[],
        value: [] as (number | null)[],
        passed: [] as (number | null)[],
        detail: [] as string[],
        judge_model: [] as string[],
        judge_prompt_version: [] as string[],
        judge_decoding: [] as string[],
        ingested_at: ingested,
      })
      rows.set(m.kind, row)
    }
    row.metric.push(m.metric)
    row.metric_version.push(m.version)
    row.status.push(m.status)
    row.value.push(m.value)
    row.passed.push(m.passed === null ? null : m.passed ? 1 : 0)
    row.detail.push(m.detail)
    row.judge_model.push(m.judge?.model ?? '')
    row.judge_prompt_version.push(m.judge?.prompt_version ?? '')
    row.judge_decoding.push(m.judge ? JSON.stringify(m.judge.decoding) : '')
  }
  return [...rows.values()].sort((a, b) => (a.kind === b.kind ? 0 : a.kind === 'deterministic' ? -1 : b.kind === 'deterministic' ? 1 : a.kind < b.kind ? -1 : 1))
}

/**
 * The `metrics` view's rows of one `attempt_metrics` row (what ARRAY JOIN gives): how an audit
 * entry written before the table existed (manifest version ≤ 2) reads its metric rows back.
 */
export function metricRowsOf(row: Record<string, unknown>): Record<string, unknown>[] {
  const names = (row['metric'] as unknown[] | undefined) ?? []
  return names.map((_, i) => {
    const out: Record<string, unknown> = {}
    for (const [column, value] of Object.entries(row)) {
      out[column] = (METRIC_ARRAY_COLUMNS as readonly string[]).includes(column) ? (value as unknown[])[i] : value
    }
    return out
  })
}

export function rowToMetric(row: MetricRow): MetricValue {
  return {
    metric: row.metric,
    version: Number(row.metric_version),
    kind: row.kind as MetricValue['kind'],
    status: row.status as MetricValue['status'],
    value: row.value === null ? null : Number(row.value),
    passed: row.passed === null ? null : Number(row.passed) === 1,
    detail: row.detail,
    judge: row.judge_model === '' && row.judge_prompt_version === '' ? null : { model: row.judge_model, prompt_version: row.judge_prompt_version, decoding: parseObject(row.judge_decoding) },
  }
}

export function judgementToRow(j: Judgement, ingestedAt: number): JudgementRow {
  return Object.assign(attemptKeyOf(j), {
    grading_version: j.grading_version,
    revision: j.revision,
    tier0_failed: j.tier0_failed ? 1 : 0,
    tier2_status: j.tier2.status,
    divergence_step: j.tier2.divergence_step,
    decision: j.tier2.decision,
    explanation: j.tier2.explanation,
    confidence: j.tier2.confidence,
    low_confidence: j.tier2.low_confidence ? 1 : 0,
    tier2_calls: j.tier2.calls,
    tier2_error: j.tier2.error,
    judge_model: j.tier2.judge?.model ?? '',
    judge_prompt_version: j.tier2.judge?.prompt_version ?? '',
    judge_decoding: j.tier2.judge ? JSON.stringify(j.tier2.judge.decoding) : '',
    needs_human_review: j.needs_human_review ? 1 : 0,
    review_reasons: j.review_reasons,
    review_packet: j.review_packet === null ? '' : JSON.stringify(j.review_packet),
    created_at: toChDateTime(j.created_at),
    ingested_at: toChDateTime(ingestedAt),
  })
}

export function rowToJudgement(row: JudgementRow): Judgement {
  const tier2: Tier2Result = {
    status: row.tier2_status as Tier2Result['status'],
    divergence_step: row.divergence_step === null ? null : Number(row.divergence_step),
    decision: row.decision,
    explanation: row.explanation,
    confidence: row.confidence === null ? null : Number(row.confidence),
    low_confidence: Number(row.low_confidence) === 1,
    calls: Number(row.tier2_calls),
    error: row.tier2_error,
    judge: row.judge_model === '' && row.judge_prompt_version === '' ? null : { model: row.judge_model, prompt_version: row.judge_prompt_version, decoding: parseObject(row.judge_decoding) },
  }
  return {
    // a read row may carry UInt32 columns as text
    ...attemptKeyOf({ ...row, attempt: Number(row.attempt) }),
    grading_version: Number(row.grading_version),
    revision: Number(row.revision),
    tier0_failed: Number(row.tier0_failed) === 1,
    tier2,
    needs_human_review: Number(row.needs_human_review) === 1,
    review_reasons: row.review_reasons,
    review_packet: row.review_packet === '' ? null : (JSON.parse(row.review_packet) as ReviewPacket),
    created_at: fromChDateTime(row.created_at),
  }
}

export function regradeToRow(r: AttemptRegrade, ingestedAt: number): AttemptGradeRow {
  return Object.assign(attemptKeyOf(r), {
    grading_version: r.grading_version,
    outcome: r.outcome,
    validity: r.validity,
    failure_bucket: r.failure_bucket ?? '',
    grades: JSON.stringify(r.grades),
    invariants: JSON.stringify(r.invariants),
    error: r.error,
    regraded_at: toChDateTime(r.regraded_at),
    ingested_at: toChDateTime(ingestedAt),
  })
}

export function resolutionToRow(r: ReviewResolution): ResolutionRow {
  return {
    resolution_id: r.resolution_id,
    attempt_uid: r.attempt_uid,
    run_id: r.run_id,
    task_id: r.task_id,
    grading_version: r.grading_version,
    verdict: r.verdict,
    failure_bucket: r.failure_bucket ?? '',
    note: r.note,
    reviewer: r.reviewer,
    resolved_at: toChDateTime(r.resolved_at),
  }
}

export function rowToResolution(row: ResolutionRow): ReviewResolution {
  return {
    resolution_id: row.resolution_id,
    attempt_uid: row.attempt_uid,
    run_id: row.run_id,
    task_id: row.task_id,
    grading_version: Number(row.grading_version),
    verdict: row.verdict as ReviewResolution['verdict'],
    failure_bucket: row.failure_bucket === '' ? null : (row.failure_bucket as ReviewResolution['failure_bucket']),
    note: row.note,
    reviewer: row.reviewer,
    resolved_at: fromChDateTime(row.resolved_at),
  }
}

function parseObject(text: string): Record<string, unknown> {
  if (text === '') return {}
  try {
    const value: unknown = JSON.parse(text)
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {}
  } catch {
    return {}
  }
}
