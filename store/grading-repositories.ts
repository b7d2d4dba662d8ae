/**
 * Writes and reads of the grading tables: traces, metrics (rows of `attempt_metrics`, read through
 * the `metrics` view), judgements (tier 2/3), attempt_grades
 * (regrades) and review_resolutions. Every read uses FINAL (the `metrics` view applies it itself); rows
 * are never updated in place.
 */
import type { ClickHouseClient } from '@clickhouse/client'
import { AttemptResult, StoredTrace, type AttemptRegrade, type Grade, type Judgement, type JudgeOutcome, type ReviewResolution, type Tier2Result } from '../core/contracts/index.js'
import { insertAuditEntries } from './audit.js'
import type { StoreReader } from './clickhouse.js'
import {
  judgementToRow,
  metricsToRows,
  regradeToRow,
  resolutionToRow,
  rowToJudgement,
  rowToMetric,
  rowToResolution,
  storedTraceToRow,
  type JudgementRow,
  type MetricRow,
  type ResolutionRow,
} from './grading-converters.js'

const insert = async (client: ClickHouseClient, table: string, values: unknown[]): Promise<void> => {
  if (values.length > 0) await client.insert({ table, values, format: 'JSONEachRow' })
}

/** The grading parts of a batch of attempts: their deterministic metrics and first judgement. */
export async function insertAttemptGrading(client: ClickHouseClient, attempts: readonly AttemptResult[], ingestedAt: number): Promise<void> {
  await insert(client, 'attempt_metrics', attempts.flatMap((a) => metricsToRows(a, 1, a.metrics ?? [], ingestedAt)))
  await insert(client, 'judgements', attempts.flatMap((a) => (a.judgement ? [judgementToRow(a.judgement, ingestedAt)] : [])))
  await insertAuditEntries(client, attempts.flatMap((a) => (a.audit ? [a.audit] : [])), ingestedAt)
}

export async function insertStoredTraces(client: ClickHouseClient, traces: readonly StoredTrace[], ingestedAt: number): Promise<void> {
  await insert(client, 'traces', traces.map((t) => storedTraceToRow(t, ingestedAt)))
}

export async function insertJudgeOutcomes(client: ClickHouseClient, outcomes: readonly JudgeOutcome[], ingestedAt: number): Promise<void> {
  await insert(client, 'attempt_metrics', outcomes.flatMap((o) => metricsToRows(o, o.grading_version, o.metrics, ingestedAt)))
  await insert(client, 'judgements', outcomes.flatMap((o) => (o.judgement ? [judgementToRow(o.judgement, ingestedAt)] : [])))
  await insertAuditEntries(client, outcomes.flatMap((o) => (o.audit ? [o.audit] : [])), ingestedAt)
}

export async function insertRegrades(client: ClickHouseClient, regrades: readonly AttemptRegrade[], ingestedAt: number): Promise<void> {
  await insert(client, 'attempt_grades', regrades.map((r) => regradeToRow(r, ingestedAt)))
  await insert(client, 'attempt_metrics', regrades.flatMap((r) => metricsToRows(r, r.grading_version, r.metrics, ingestedAt)))
  await insert(client, 'judgements', regrades.flatMap((r) => (r.judgement ? [judgementToRow(r.judgement, ingestedAt)] : [])))
}

export async function insertResolutions(client: ClickHouseClient, resolutions: readonly ReviewResolution[]): Promise<void> {
  await insert(client, 'review_resolutions', resolutions.map(resolutionToRow))
}

const num = (value: string | number): number => Number(value)

/** An attempt's stored trace (table `traces`); undefined when none was stored. */
export async function getStoredTrace(reader: StoreReader, attemptUid: string): Promise<StoredTrace | undefined> {
  const rows = await reader.query<{ stored: string }>('SELECT stored FROM traces FINAL WHERE attempt_uid = {uid:String} LIMIT 1', { uid: attemptUid })
  return rows[0] ? StoredTrace.parse(JSON.parse(rows[0].stored)) : undefined
}

/** The stored traces of a run: attempt uid and size, in task and attempt order (to read them in batches of bounded size). */
export async function storedTraceSizes(reader: StoreReader, runId: string): Promise<{ attempt_uid: string; bytes: number }[]> {
  const rows = await reader.query<{ attempt_uid: string; bytes: string | number }>(
    'SELECT attempt_uid, bytes FROM traces FINAL WHERE run_id = {run:String} ORDER BY task_id, attempt',
    { run: runId },
  )
  return rows.map((r) => ({ attempt_uid: r.attempt_uid, bytes: num(r.bytes) }))
}

export async function getStoredTraces(reader: StoreReader, runId: string, attemptUids: readonly string[]): Promise<StoredTrace[]> {
  if (attemptUids.length === 0) return []
  const rows = await reader.query<{ stored: string }>(
    'SELECT stored FROM traces FINAL WHERE run_id = {run:String} AND has({uids:Array(String)}, attempt_uid) ORDER BY task_id, attempt',
    { run: runId, uids: attemptUids },
  )
  return rows.map((r) => StoredTrace.parse(JSON.parse(r.stored)))
}

/** The newest grading version of a run: 1 (the original grades) unless it was re-graded. */
export async function latestGradingVersion(reader: StoreReader, runId: string): Promise<number> {
  const rows = await reader.query<{ v: string | number | null }>(
    `SELECT greatest(
       (SELECT ifNull(max(grading_version), 1) FROM attempts FINAL WHERE run_id = {run:String}),
       (SELECT ifNull(max(grading_version), 1) FROM attempt_grades FINAL WHERE run_id = {run:String})) AS v`,
    { run: runId },
  )
  return Math.max(1, num(rows[0]?.v ?? 1))
}

export async function countRegrades(reader: StoreReader, runId: string, gradingVersion: number): Promise<number> {
  const rows = await reader.query<{ n: string | number }>(
    'SELECT count() AS n FROM attempt_grades FINAL WHERE run_id = {run:String} AND grading_version = {v:UInt32}',
    { run: runId, v: gradingVersion },
  )
  return num(rows[0]?.n ?? 0)
}

/** Outcome counts of one grading version of a run (1: the attempts table; later: attempt_grades). */
export async function gradingOutcomes(reader: StoreReader, runId: string, gradingVersion: number): Promise<Record<string, number>> {
  const table = gradingVersion === 1 ? 'attempts' : 'attempt_grades'
  const rows = await reader.query<{ outcome: string; n: string | number }>(
    `SELECT outcome, count() AS n FROM ${table} FINAL WHERE run_id = {run:String} AND grading_version = {v:UInt32} GROUP BY outcome ORDER BY outcome`,
    { run: runId, v: gradingVersion },
  )
  return Object.fromEntries(rows.map((r) => [r.outcome, num(r.n)]))
}

export interface ReviewQueueEntry {
  attempt_uid: string
  run_id: string
  task_id: string
  attempt: number
  grading_version: number
  review_reasons: string[]
  tier2_status: string
  created_at: string
  /** how many resolutions were recorded; 0 = open */
  resolutions: number
  /** the newest resolution's verdict, '' when open */
  resolution: string
  reviewer: string
}

/** Flagged attempts (tier 3), oldest first, with their newest resolution. */
export async function reviewQueue(
  reader: StoreReader,
  opts: { runId?: string; state: 'open' | 'resolved' | 'all'; limit: number },
): Promise<ReviewQueueEntry[]> {
  const state = opts.state === 'open' ? 'AND ifNull(r.resolutions, 0) = 0' : opts.state === 'resolved' ? 'AND ifNull(r.resolutions, 0) > 0' : ''
  const rows = await reader.query<ReviewQueueEntry & { attempt: string | number; grading_version: string | number; resolutions: string | number | null }>(
    `SELECT j.attempt_uid AS attempt_uid, j.run_id AS run_id, j.task_id AS task_id, j.attempt AS attempt, j.grading_version AS grading_version,
       j.review_reasons AS review_reasons, j.tier2_status AS tier2_status, toString(j.created_at) AS created_at,
       ifNull(r.resolutions, 0) AS resolutions, ifNull(r.verdict, '') AS resolution, ifNull(r.reviewer, '') AS reviewer
     FROM (
       -- each attempt at its newest grading version only (a regrade decides the flag again)
       SELECT * FROM judgements FINAL
       WHERE (attempt_uid, grading_version) IN (
         SELECT attempt_uid, max(grading_version) FROM judgements FINAL ${opts.runId === undefined ? '' : 'WHERE run_id = {run:String}'} GROUP BY attempt_uid)
       AND needs_human_review = 1 ${opts.runId === undefined ? '' : 'AND run_id = {run:String}'}
     ) AS j
     LEFT JOIN (
       -- a person's resolution is of the attempt, whichever grading version they saw
       SELECT attempt_uid, count() AS resolutions, argMax(verdict, resolved_at) AS verdict, argMax(reviewer, resolved_at) AS reviewer
       FROM review_resolutions FINAL GROUP BY attempt_uid
     ) AS r ON r.attempt_uid = j.attempt_uid
     WHERE 1 ${state}
     ORDER BY j.created_at, j.attempt_uid
     LIMIT {limit:UInt32}
     SETTINGS join_use_nulls = 1`,
    { ...(opts.runId === undefined ? {} : { run: opts.runId }), limit: opts.limit },
  )
  return rows.map((r) => ({ ...r, attempt: num(r.attempt), grading_version: num(r.grading_version), resolutions: num(r.resolutions ?? 0) }))
}

/** An attempt's judgement at its newest grading version (or the given one). */
export async function getJudgement(reader: StoreReader, attemptUid: string, gradingVersion?: number): Promise<Judgement | undefined> {
  const rows = await reader.query<JudgementRow>(
    `SELECT * FROM judgements FINAL WHERE attempt_uid = {uid:String} ${gradingVersion === undefined ? '' : 'AND grading_version = {v:UInt32}'}
     ORDER BY grading_version DESC LIMIT 1`,
    { uid: attemptUid, ...(gradingVersion === undefined ? {} : { v: gradingVersion }) },
  )
  return rows[0] ? rowToJudgement(rows[0]) : undefined
}

export async function listResolutions(reader: StoreReader, attemptUid: string): Promise<ReviewResolution[]> {
  const rows = await reader.query<ResolutionRow>('SELECT * FROM review_resolutions FINAL WHERE attempt_uid = {uid:String} ORDER BY resolved_at, resolution_id', { uid: attemptUid })
  return rows.map(rowToResolution)
}

export async function getResolution(reader: StoreReader, resolutionId: string): Promise<ReviewResolution | undefined> {
  const rows = await reader.query<ResolutionRow>('SELECT * FROM review_resolutions FINAL WHERE resolution_id = {id:String} LIMIT 1', { id: resolutionId })
  return rows[0] ? rowToResolution(rows[0]) : undefined
}

/** The metric rows of an attempt at a grading version. */
export async function attemptMetrics(reader: StoreReader, attemptUid: string, gradingVersion = 1) {
  const rows = await reader.query<MetricRow>(
    'SELECT * FROM metrics WHERE attempt_uid = {uid:String} AND grading_version = {v:UInt32} ORDER BY kind, metric',
    { uid: attemptUid, v: gradingVersion },
  )
  return rows.map(rowToMetric)
}

/** Per metric of a run (at a grading version): how many rows of each status, how many passed, and the mean value. */
export async function metricSummary(
  reader: StoreReader,
  runId: string,
  gradingVersion = 1,
): Promise<{ metric: string; kind: string; metric_version: number; scored: number; passed: number; failed: number; not_applicable: number; skipped: number; errored: number; mean: number | null }[]> {
  const rows = await reader.query<Record<string, string | number | null>>(
    `SELECT metric, kind, max(metric_version) AS metric_version,
       countIf(status = 'scored') AS scored, countIf(passed = 1) AS passed, countIf(passed = 0) AS failed,
       countIf(status = 'not_applicable') AS not_applicable, countIf(status = 'skipped') AS skipped, countIf(status = 'errored') AS errored,
       avgIf(value, status = 'scored') AS mean
     FROM metrics WHERE run_id = {run:String} AND grading_version = {v:UInt32}
     GROUP BY metric, kind ORDER BY kind, metric`,
    { run: runId, v: gradingVersion },
  )
  return rows.map((r) => ({
    metric: String(r['metric']),
    kind: String(r['kind']),
    metric_version: num(r['metric_version'] ?? 0),
    scored: num(r['scored'] ?? 0),
    passed: num(r['passed'] ?? 0),
    failed: num(r['failed'] ?? 0),
    not_applicable: num(r['not_applicable'] ?? 0),
    skipped: num(r['skipped'] ?? 0),
    errored: num(r['errored'] ?? 0),
    mean: r['mean'] === null || r['mean'] === undefined || Number.isNaN(Number(r['mean'])) || num(r['scored'] ?? 0) === 0 ? null : Number(r['mean']),
  }))
}

export interface AgreementRow {
  attempt_uid: string
  task_id: string
  grades: Grade[]
  /** the `correctness` judge metric's pass/fail; null when it was not scored */
  correctness: boolean | null
}

/** For judge agreement: each attempt's tier-0 grades (at the version) and its scored `correctness` judge metric. */
export async function agreementRows(reader: StoreReader, runId: string, gradingVersion = 1): Promise<AgreementRow[]> {
  const table = gradingVersion === 1 ? 'attempts' : 'attempt_grades'
  const rows = await reader.query<{ attempt_uid: string; task_id: string; grades: string; correctness: number | string | null }>(
    `SELECT a.attempt_uid AS attempt_uid, a.task_id AS task_id, a.grades AS grades, m.passed AS correctness
     FROM (SELECT attempt_uid, task_id, attempt, grades FROM ${table} FINAL WHERE run_id = {run:String} AND grading_version = {v:UInt32}) AS a
     LEFT JOIN (
       -- the judge scored the trace, not a grading: its newest score up to this version
       SELECT attempt_uid, argMax(passed, grading_version) AS passed FROM metrics
       WHERE run_id = {run:String} AND grading_version <= {v:UInt32} AND metric = 'correctness' AND status = 'scored'
       GROUP BY attempt_uid
     ) AS m ON m.attempt_uid = a.attempt_uid
     ORDER BY a.task_id, a.attempt
     SETTINGS join_use_nulls = 1`,
    { run: runId, v: gradingVersion },
  )
  return rows.map((r) => ({
    attempt_uid: r.attempt_uid,
    task_id: r.task_id,
    grades: JSON.parse(r.grades) as Grade[],
    correctness: r.correctness === null ? null : Number(r.correctness) === 1,
  }))
}

/** The tier-2 results of a run's attempts at one grading version, by attempt uid (judge stamps included). */
export async function tier2Results(reader: StoreReader, runId: string, gradingVersion: number, attemptUids: readonly string[]): Promise<Map<string, Tier2Result>> {
  if (attemptUids.length === 0) return new Map()
  const rows = await reader.query<JudgementRow>(
    `SELECT attempt_uid, run_id, config_id, suite, task_id, attempt, grading_version, revision, tier0_failed, tier2_status, divergence_step, decision,
       explanation, confidence, low_confidence, tier2_calls, tier2_error, judge_model, judge_prompt_version, judge_decoding,
       needs_human_review, review_reasons, '' AS review_packet, created_at, ingested_at
     FROM judgements FINAL WHERE run_id = {run:String} AND grading_version = {v:UInt32} AND has({uids:Array(String)}, attempt_uid)`,
    { run: runId, v: gradingVersion, uids: attemptUids },
  )
  return new Map(rows.map((row) => [row.attempt_uid, rowToJudgement(row).tier2]))
}
