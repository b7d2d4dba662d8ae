/** Row converters of the grading tables, and the stored trace kept under one message's size. */
import { describe, expect, it } from 'vitest'
import { AgentTrace, StoredTrace, type AttemptResult, type Judgement, type MetricValue, type ReviewResolution } from '../../core/contracts/index.js'
import type { EnvironmentView } from '../../core/env-diff.js'
import { tier2Status } from '../../core/judge/divergence.js'
import { judgementToRow, metricRowsOf, metricsToRows, regradeToRow, resolutionToRow, rowToJudgement, rowToMetric, rowToResolution, storedTraceToRow, type MetricRow } from '../../store/grading-converters.js'
import { storedTraceOf } from '../../engine/trace-store.js'

const key = { attempt_uid: 'r1/c0/t1/2', run_id: 'r1', config_id: 'c0', suite: 'smoke', task_id: 't1', attempt: 2 }
const stamp = { model: 'judge-1', prompt_version: 'judge-metrics/2', decoding: { temperature: 0, max_tokens: 64 } }

describe('grading converters', () => {
  it('stores an attempt\'s metrics as one row per kind, columns as arrays, and reads them back one per metric', () => {
    const metrics: MetricValue[] = [
      { metric: 'correctness', version: 1, kind: 'judge', status: 'scored', value: 0.75, passed: true, detail: '4/5: fine', judge: stamp },
      { metric: 'token_budget_use', version: 1, kind: 'deterministic', status: 'not_applicable', value: null, passed: null, detail: 'no max_tokens', judge: null },
      { metric: 'tool_error_rate', version: 2, kind: 'deterministic', status: 'scored', value: 0, passed: false, detail: '', judge: null },
    ]
    const rows = metricsToRows(key, 3, metrics, Date.UTC(2026, 10, 30, 3, 0, 0))
    expect(rows).toEqual([
      {
        ...key,
        grading_version: 3,
        kind: 'deterministic',
        metric: ['token_budget_use', 'tool_error_rate'],
        metric_version: [1, 2],
        status: ['not_applicable', 'scored'],
        value: [null, 0],
        passed: [null, 0],
        detail: ['no max_tokens', ''],
        judge_model: ['', ''],
        judge_prompt_version: ['', ''],
        judge_decoding: ['', ''],
        ingested_at: '2026-11-30 03:00:00.000',
      },
      {
        ...key,
        grading_version: 3,
        kind: 'judge',
        metric: ['correctness'],
        metric_version: [1],
        status: ['scored'],
        value: [0.75],
        passed: [1],
        detail: ['4/5: fine'],
        judge_model: ['judge-1'],
        judge_prompt_version: ['judge-metrics/2'],
        judge_decoding: ['{"temperature":0,"max_tokens":64}'],
        ingested_at: '2026-11-30 03:00:00.000',
      },
    ])
    // what the metrics view gives for them: one row per metric, every other column repeated
    const perMetric = rows.flatMap((r) => metricRowsOf(r as unknown as Record<string, unknown>))
    expect(perMetric[2]).toEqual({
      ...key,
      grading_version: 3,
      metric: 'correctness',
      metric_version: 1,
      kind: 'judge',
      status: 'scored',
      value: 0.75,
      passed: 1,
      detail: '4/5: fine',
      judge_model: 'judge-1',
      judge_prompt_version: 'judge-metrics/2',
      judge_decoding: '{"temperature":0,"max_tokens":64}',
      ingested_at: '2026-11-30 03:00:00.000',
    })
    expect(perMetric.map((r) => rowToMetric(r as unknown as MetricRow))).toEqual([metrics[1], metrics[2], metrics[0]])
    expect(metricsToRows(key, 1, [], 0)).toEqual([])
  })
  it('round-trips a judgement with its tier-2 result and review packet', () => {
    const judgement: Judgement = {
      ...key,
      grading_version: 1,
      revision: 2,
      tier0_failed: true,
      tier2: { ...tier2Status('not_applicable'), status: 'localized', divergence_step: 2, decision: 'd', explanation: 'e', confidence: 0.4, low_confidence: true, calls: 2, judge: stamp },
      needs_human_review: true,
      review_reasons: ['golden_divergence_low_confidence'],
      review_packet: {
        attempt_uid: key.attempt_uid, run_id: 'r1', suite: 'smoke', task_id: 't1', attempt: 2, reasons: ['x'], instruction: 'i', input: {}, output: 'o',
        outcome: 'fail', validity: 'valid', failure_bucket: 'wrong_answer', grades: [], invariants: [], steps: ['answered "o"'], tier2: tier2Status('pending'), golden: 't1', self_report: '',
      },
      created_at: Date.UTC(2026, 10, 30, 3, 0, 0, 5),
    }
    const row = judgementToRow(judgement, 0)
    expect(row).toMatchObject({ revision: 2, tier0_failed: 1, tier2_status: 'localized', divergence_step: 2, low_confidence: 1, tier2_calls: 2, judge_model: 'judge-1', needs_human_review: 1 })
    expect(rowToJudgement(row)).toEqual(judgement)
    const plain: Judgement = { ...judgement, tier2: tier2Status('not_applicable'), needs_human_review: false, review_reasons: [], review_packet: null, tier0_failed: false }
    expect(rowToJudgement(judgementToRow(plain, 0))).toEqual(plain)
  })
  it('round-trips a review resolution and writes a regrade as an attempt_grades row', () => {
    const resolution: ReviewResolution = { resolution_id: 'r1/c0/t1/2#1', attempt_uid: key.attempt_uid, run_id: 'r1', task_id: 't1', grading_version: 1, verdict: 'pass', failure_bucket: null, note: 'n', reviewer: 'alice', resolved_at: Date.UTC(2026, 10, 30) }
    expect(rowToResolution(resolutionToRow(resolution))).toEqual(resolution)
    expect(regradeToRow({ ...key, grading_version: 2, outcome: 'fail', validity: 'valid', failure_bucket: 'wrong_answer', grades: [], invariants: [], error: '', metrics: [], judgement: null, regraded_at: 0 }, 0)).toEqual({
      ...key, grading_version: 2, outcome: 'fail', validity: 'valid', failure_bucket: 'wrong_answer', grades: '[]', invariants: '[]', error: '', regraded_at: '1970-01-01 00:00:00.000', ingested_at: '1970-01-01 00:00:00.000',
    })
  })
})

describe('stored traces', () => {
  const result = { ...key, outcome: 'fail', validity: 'valid', failure_bucket: 'wrong_answer', grades: [], invariants: [] } as unknown as AttemptResult
  const big = 'x'.repeat(5_000)
  const trace = AgentTrace.parse({
    output: 'o',
    duration_ms: 1,
    self_report: 'claimed success',
    tool_calls: Array.from({ length: 40 }, (_, index) => ({ index, name: 'read', args: { path: big }, result: big, retry_index: 0, started_ms: 0, duration_ms: 1 })),
  })
  const env: EnvironmentView = {
    start: { workspace: { kind: 'workspace', files: { 'a.txt': { sha256: 'h', size: 60_000, text: 'y'.repeat(60_000) } } } },
    end: { workspace: { kind: 'workspace', files: { 'a.txt': { sha256: 'h2', size: 3, text: 'new' } } } },
    diff: [],
    queries: {},
  }

  it('keeps everything, the self-report included, when it fits', () => {
    const stored = storedTraceOf(result, trace, env, 5)
    expect(stored.truncated).toEqual([])
    expect(stored.trace).toEqual(trace)
    expect(stored.trace.self_report).toBe('claimed success')
    expect(storedTraceToRow(stored, 0)).toMatchObject({ ...key, bytes: Buffer.byteLength(JSON.stringify(stored)), truncated: [] })
  })
  it('stores the trace of an attempt without an answer (the adapter threw) with output null, so it survives JSON', () => {
    const stored = storedTraceOf(result, { ...trace, output: undefined }, env, 5)
    expect(StoredTrace.safeParse(JSON.parse(JSON.stringify(stored))).success).toBe(true)
    expect(stored.trace.output).toBeNull()
  })
  it('cuts tool payloads, then the environment start texts, until it fits, and says what it cut', () => {
    const stored = storedTraceOf(result, trace, env, 5, 250_000)
    expect(stored.truncated).toEqual(['tool_calls'])
    expect(Buffer.byteLength(JSON.stringify(stored))).toBeLessThanOrEqual(250_000)
    const tighter = storedTraceOf(result, trace, env, 5, 150_000)
    expect(tighter.truncated).toEqual(['tool_calls', 'span_attributes', 'env_start_text'])
    expect((tighter.env as EnvironmentView).start).toEqual({ workspace: { kind: 'workspace', files: { 'a.txt': { sha256: 'h', size: 60_000 } } } })
    expect((tighter.env as EnvironmentView).end).toEqual(env.end)
  })
})
