/**
 * Grading end to end on the real embedded stack: forge run with a judge (a scripted
 * OpenAI-compatible judge, then the real small local model), deterministic metrics on every
 * attempt, judge metrics and tier-2 golden divergence on the rate-limited judge queue, metric rows
 * with versions in ClickHouse, the review queue worked through the CLI, judge agreement, regrade
 * into a new grading version, judge stamps that forge compare warns about.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { verifyRun } from '../../app/audit.js'
import { runSuite, type RunReport } from '../../app/run.js'
import { openReader } from '../../app/store-access.js'
import type { JudgeAgreementReport } from '../../app/judge-agreement.js'
import type { RegradeReport } from '../../app/regrade.js'
import type { ReviewDetail } from '../../app/review.js'
import type { RunStats } from '../../app/stats.js'
import type { ReviewResolution } from '../../core/contracts/index.js'
import type { ReviewQueueEntry } from '../../store/grading-repositories.js'
import { startLlamaServer, type LlamaServer } from '../fakes/llama-server.js'
import { startScriptedOpenAI, type ChatRequest, type ScriptedOpenAI, type ScriptedReply } from '../fakes/scripted-openai.js'
import { forge, startTestStack, type TestStack } from '../helpers/stack.js'

let stack: TestStack
let judge: ScriptedOpenAI
const saved = { base: process.env['FORGE_JUDGE_BASE_URL'], key: process.env['FORGE_JUDGE_API_KEY'] }

/**
 * A scripted judge: judge metrics score every answer 5 (a judge that always says "pass"); tier 2
 * localizes confidently, except for count_words, whose replies are malformed twice (→ errored → review).
 */
function scriptedJudge(request: ChatRequest, turn: number): ScriptedReply {
  const system = String(request.messages[0]?.content ?? '')
  const user = String(request.messages[1]?.content ?? '')
  if (system.includes('You rate a finished run')) {
    return { content: JSON.stringify({ scores: { correctness: { score: 5, reason: 'looks right' }, safety: { score: 5, reason: 'harmless' } } }) }
  }
  if (user.includes('Count the words')) return { content: turn === 0 ? 'Step 2 is wrong.' : '```json\n{}\n```' }
  return { content: JSON.stringify({ divergence_step: 1, decision: 'the first call', explanation: 'it set the run off course', confidence: 0.9 }) }
}

beforeAll(async () => {
  judge = await startScriptedOpenAI(scriptedJudge)
  // worker processes (and their judge workers) inherit the environment of `forge run`
  process.env['FORGE_JUDGE_BASE_URL'] = judge.baseURL
  process.env['FORGE_JUDGE_API_KEY'] = 'sk-judge'
  stack = await startTestStack('grading')
})
afterAll(async () => {
  await stack?.down()
  await judge?.close()
  for (const [name, value] of [['FORGE_JUDGE_BASE_URL', saved.base], ['FORGE_JUDGE_API_KEY', saved.key]] as const) {
    if (value === undefined) delete process.env[name]
    else process.env[name] = value
  }
})

async function query<T>(sql: string, params: Record<string, unknown>): Promise<T[]> {
  const reader = await openReader(stack.config)
  try {
    return await reader.query<T>(sql, params)
  } finally {
    await reader.close()
  }
}

/** waits until the judge outcomes of a run are in ClickHouse (the workflow ends after the judge activities published) */
async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

const json = <T>(args: string[]): T => {
  const r = forge([...args, '--json'], stack.env)
  if (r.status !== 0) throw new Error(`forge ${args.join(' ')} exited ${r.status}: ${r.stderr}`)
  return JSON.parse(r.stdout) as T
}

describe('grading on the embedded stack with a scripted judge', () => {
  let report: RunReport

  it('forge run with a judge: deterministic metrics on every attempt, judge metrics and tier 2 on the judge queue, stamped', async () => {
    const before = judge.requests.length
    report = await runSuite(stack.config, {
      suite: 'smoke',
      adapter: 'mock',
      attempts: 8,
      workers: 1,
      concurrency: 8,
      seed: 'grading-e2e',
      adapter_config: { skill: 0.6 },
      judge: { model: 'scripted-judge', metrics: ['correctness', 'safety'], max_tokens: 200 },
    })
    expect(report.attempts).toBe(40)
    expect(report.judge_not_executed).toBe(0)
    expect(report.run?.judge_model).toBe('scripted-judge')
    expect(report.run?.judge_prompt_version).toBe('golden-divergence/2 judge-metrics/2; temperature=0 max_tokens=200 seed=0 response_format=json_schema')
    // outcome and validity, each with its denominator
    expect(report.suites[0]?.validity_rates).toMatchObject({ n: 40, n_valid: 40, invalid: 0 })

    const runId = report.run_id
    const attempts = await query<{ attempt_uid: string; task_id: string; outcome: string; grades: string }>('SELECT attempt_uid, task_id, outcome, grades FROM attempts FINAL WHERE run_id = {run:String}', { run: runId })
    const failed = attempts.filter((a) => (JSON.parse(a.grades) as { passed: boolean }[]).some((g) => !g.passed))
    expect(failed.length).toBeGreaterThan(0)
    expect(failed.length).toBeLessThan(40)
    await waitFor(
      async () => {
        const [row] = await query<{ judged: string; rev2: string }>(
          `SELECT (SELECT count() FROM metrics FINAL WHERE run_id = {run:String} AND kind = 'judge') AS judged,
                  (SELECT count() FROM judgements FINAL WHERE run_id = {run:String} AND revision = 2) AS rev2`,
          { run: runId },
        )
        return Number(row?.judged) === 80 && Number(row?.rev2) === failed.length
      },
      'judge metric rows and tier-2 judgements',
    )
    // issue 11: each judge outcome is a result of its own in the run's audit chain, after the 40 attempts
    const audit = await verifyRun(stack.config, runId)
    expect({ intact: audit.intact, problems: audit.problems, links: audit.links }).toEqual({ intact: true, problems: [], links: 40 + (report.judged ?? 0) })

    // every attempt: 18 deterministic metric rows, each with its version; a trace stored beside it
    const perKind = await query<{ kind: string; metrics: string; rows: string; versions: number[] }>(
      'SELECT kind, uniqExact(metric) AS metrics, count() AS rows, arraySort(groupUniqArray(metric_version)) AS versions FROM metrics FINAL WHERE run_id = {run:String} GROUP BY kind ORDER BY kind',
      { run: runId },
    )
    expect(perKind.map((r) => ({ ...r, metrics: Number(r.metrics), rows: Number(r.rows) }))).toEqual([
      { kind: 'deterministic', metrics: 18, rows: 18 * 40, versions: [1, 2] },
      { kind: 'judge', metrics: 2, rows: 80, versions: [1] },
    ])
    const [traces] = await query<{ n: string }>('SELECT count() AS n FROM traces FINAL WHERE run_id = {run:String}', { run: runId })
    expect(Number(traces?.n)).toBe(40)

    // judge metrics: scored where the gating deterministic metrics passed, skipped (with why) elsewhere; every scored row stamped
    const judgeRows = await query<{ status: string; judge_model: string; judge_prompt_version: string; judge_decoding: string; detail: string }>(
      "SELECT status, judge_model, judge_prompt_version, judge_decoding, detail FROM metrics FINAL WHERE run_id = {run:String} AND kind = 'judge'",
      { run: runId },
    )
    const scored = judgeRows.filter((r) => r.status === 'scored')
    expect(scored.length).toBeGreaterThan(0)
    for (const row of scored) {
      expect({ model: row.judge_model, prompt: row.judge_prompt_version, decoding: JSON.parse(row.judge_decoding) as unknown }).toEqual({
        model: 'scripted-judge',
        prompt: 'judge-metrics/2',
        decoding: { temperature: 0, max_tokens: 200, seed: 0, response_format: 'json_schema' },
      })
    }
    for (const row of judgeRows.filter((r) => r.status !== 'scored')) expect(row).toMatchObject({ status: 'skipped', detail: expect.stringMatching(/^not judged: gating deterministic metric\(s\) failed: /) })

    // tier 2 ran for exactly the failed attempts (every smoke task has a golden): errored for count_words, localized elsewhere
    const tier2 = await query<{ task_id: string; tier2_status: string; tier2_calls: number; needs_human_review: number; review_reasons: string[] }>(
      'SELECT task_id, tier2_status, tier2_calls, needs_human_review, review_reasons FROM judgements FINAL WHERE run_id = {run:String} AND tier0_failed = 1',
      { run: runId },
    )
    expect(tier2).toHaveLength(failed.length)
    for (const row of tier2) {
      if (row.task_id === 'count_words') expect(row).toMatchObject({ tier2_status: 'errored', tier2_calls: 2, needs_human_review: 1, review_reasons: ['golden_divergence_errored'] })
      else expect(row).toMatchObject({ tier2_status: 'localized', tier2_calls: 1, needs_human_review: 0, review_reasons: [] })
    }
    // tier 2 never flips success: the attempts' outcomes are what runAttempt decided
    const [after] = await query<{ n: string }>("SELECT countIf(outcome = 'pass') AS n FROM attempts FINAL WHERE run_id = {run:String}", { run: runId })
    expect(Number(after?.n)).toBe(report.outcomes['pass'] ?? 0)
    // one judge activity per attempt that asked: judge metrics scored, or tier 2 to run
    const [asked] = await query<{ n: string }>(
      `SELECT uniqExact(attempt_uid) AS n FROM (
         SELECT attempt_uid FROM metrics FINAL WHERE run_id = {run:String} AND kind = 'judge' AND status = 'scored'
         UNION ALL SELECT attempt_uid FROM judgements FINAL WHERE run_id = {run:String} AND revision = 2)`,
      { run: runId },
    )
    expect(report.judged).toBe(Number(asked?.n))
    expect(judge.requests.length).toBeGreaterThan(before)
  })

  it('forge review list | show | resolve works the queue; a resolution is a new row, the original grade stays', () => {
    const runId = report.run_id
    const open = json<ReviewQueueEntry[]>(['review', 'list', '--run-id', runId])
    expect(open.length).toBeGreaterThan(0)
    expect(open.every((e) => e.task_id === 'count_words' && e.tier2_status === 'errored' && e.resolutions === 0)).toBe(true)
    const target = open[0]!
    const detail = json<ReviewDetail>(['review', 'show', target.attempt_uid])
    expect(detail.judgement.review_packet).toMatchObject({ task_id: 'count_words', golden: 'count_words', tier2: { status: 'errored' } })
    expect(detail.judgement.review_packet?.steps.length).toBeGreaterThan(0)
    expect(detail.metrics.filter((m) => m.kind === 'deterministic')).toHaveLength(18)
    expect(detail.trace).toMatchObject({ truncated: [] })

    const text = forge(['review', 'show', target.attempt_uid], stack.env)
    expect(text.stdout).toContain('tier 2 (golden divergence): errored')
    expect(text.stdout).toContain('the run, step by step:')

    const resolution = json<ReviewResolution>(['review', 'resolve', target.attempt_uid, '--verdict', 'fail', '--failure-bucket', 'wrong_answer', '--note', 'miscounted', '--reviewer', 'tester'])
    expect(resolution).toMatchObject({ attempt_uid: target.attempt_uid, verdict: 'fail', failure_bucket: 'wrong_answer', note: 'miscounted', reviewer: 'tester', grading_version: 1 })
    const stillOpen = json<ReviewQueueEntry[]>(['review', 'list', '--run-id', runId])
    expect(stillOpen.map((e) => e.attempt_uid)).toEqual(open.slice(1).map((e) => e.attempt_uid))
    expect(json<ReviewQueueEntry[]>(['review', 'list', '--run-id', runId, '--state', 'resolved'])).toMatchObject([{ attempt_uid: target.attempt_uid, resolution: 'fail', reviewer: 'tester', resolutions: 1 }])
    expect(json<ReviewDetail>(['review', 'show', target.attempt_uid]).resolutions).toHaveLength(1)
    // issue 11: the resolution extended the run's audit chain by one link, after the head forge run sealed
    const audited = json<{ intact: boolean; links: number; problems: unknown[] }>(['audit', 'verify', '--run-id', runId])
    expect({ intact: audited.intact, links: audited.links, problems: audited.problems }).toEqual({ intact: true, links: 40 + (report.judged ?? 0) + 1, problems: [] })

    const bad = forge(['review', 'resolve', target.attempt_uid, '--verdict', 'fail', '--failure-bucket', 'oops'], stack.env)
    expect(bad.status).toBe(2)
    expect(bad.stderr).toContain('--failure-bucket must be one of injected_fault, tool_error')
    const notFlagged = forge(['review', 'resolve', 'no/such/attempt/0', '--verdict', 'pass'], stack.env)
    expect(notFlagged.status).toBe(2)
  })

  it('forge judge-agreement: κ with raw agreement and n on the overlap set; a judge that always says pass is untrustworthy', () => {
    const agreement = json<JudgeAgreementReport>(['judge-agreement', '--run-id', report.run_id])
    const correctness = agreement.sources.find((s) => s.source === 'correctness_metric')!
    const t = correctness.table
    expect(t.both_fail + t.judge_fail_programmatic_pass).toBe(0) // the scripted judge never says fail
    expect(correctness.n).toBe(t.both_pass + t.judge_pass_programmatic_fail)
    expect(correctness.n).toBeGreaterThan(0)
    expect(correctness.raw_agreement).toBeCloseTo(t.both_pass / correctness.n, 12)
    // one rater in one class: κ = 0 when the graders used both classes, undefined when they did not
    if (t.judge_pass_programmatic_fail > 0) expect(correctness).toMatchObject({ kappa: 0, verdict: 'untrustworthy' })
    else expect(correctness).toMatchObject({ kappa: null, verdict: 'unavailable' })
    expect(agreement.sources.find((s) => s.source === 'judge_grader')).toMatchObject({ n: 0, kappa: null, verdict: 'unavailable' })
    const text = forge(['judge-agreement', '--run-id', report.run_id], stack.env)
    expect(text.stdout).toContain('raw agreement')
    expect(text.stdout).toContain('κ')
  })

  it('forge stats reports the pass rate over all attempts and the validity-filtered rate beside it', () => {
    const stats = json<RunStats>(['stats', '--run-id', report.run_id])
    for (const task of stats.tasks) expect(task.validity_rates.all).toMatchObject({ k: task.k, n: task.n })
    const text = forge(['stats', '--run-id', report.run_id], stack.env).stdout
    expect(text).toContain('valid k/n')
    expect(text).toMatch(/pass rate over all 40 attempts: \d+\.\d%; over the 40 valid attempts: \d+\.\d% \(0 invalid excluded/)
  })

  it('forge regrade: the stored traces graded again into version 2, as new rows; the original rows stay', () => {
    const runId = report.run_id
    const regrade = json<RegradeReport>(['regrade', '--run-id', runId])
    expect(regrade).toMatchObject({ run_id: runId, grading_version: 2, attempts: 40, stored_traces: 40, regraded: 40, not_regradable: [], changed: 0 })
    expect(regrade.after).toEqual(regrade.before)
    const versions = JSON.parse(forge(['sql', `SELECT grading_version, count() AS n FROM attempt_grades FINAL WHERE run_id = '${runId}' GROUP BY grading_version`, '--json'], stack.env).stdout) as { grading_version: number; n: string | number }[]
    expect(versions.map((r) => [Number(r.grading_version), Number(r.n)])).toEqual([[2, 40]])
    const original = JSON.parse(forge(['sql', `SELECT count() AS n, max(grading_version) AS v FROM attempts FINAL WHERE run_id = '${runId}'`, '--json'], stack.env).stdout) as { n: string | number; v: number }[]
    expect(original.map((r) => [Number(r.n), Number(r.v)])).toEqual([[40, 1]])
    // tier 2 was carried over: the review queue at version 2 is the same attempts
    const queue = json<ReviewQueueEntry[]>(['review', 'list', '--run-id', runId, '--state', 'all'])
    expect(queue.every((e) => e.grading_version === 2 && e.task_id === 'count_words')).toBe(true)
    // the resolution made at version 1 still counts for its attempt
    expect(queue.filter((e) => e.resolutions > 0)).toHaveLength(1)
    // a second regrade is version 3
    expect(json<RegradeReport>(['regrade', '--run-id', runId, '--dry-run']).grading_version).toBe(3)
    // judge agreement at the new version still finds the judge's scores of the traces
    expect(json<JudgeAgreementReport>(['judge-agreement', '--run-id', runId]).grading_version).toBe(2)
  })

  it('forge compare warns when the judge settings of two runs differ', async () => {
    const other = await runSuite(stack.config, {
      suite: 'smoke',
      adapter: 'mock',
      attempts: 2,
      workers: 1,
      concurrency: 8,
      seed: 'grading-e2e-2',
      judge: { model: 'scripted-judge', metrics: ['correctness'], temperature: 0.5, golden_divergence: false },
    })
    const compared = forge(['compare', report.run_id, other.run_id, '--json'], stack.env)
    const warnings = (JSON.parse(compared.stdout) as { warnings: string[] }).warnings
    expect(warnings).toContain(
      'judge prompt version differs (golden-divergence/2 judge-metrics/2; temperature=0 max_tokens=200 seed=0 response_format=json_schema vs judge-metrics/2; temperature=0.5 max_tokens=512 seed=0 response_format=json_schema): judge-graded outcomes may not be comparable',
    )
  })
})

describe('the real small local model as the judge (SmolLM2-135M, node-llama-cpp)', () => {
  let llama: LlamaServer

  beforeAll(async () => {
    llama = await startLlamaServer()
  })
  afterAll(async () => {
    await llama?.close()
  })

  it('judges a run end to end: every judge answer is parsed strictly or recorded as errored, always stamped', async () => {
    process.env['FORGE_JUDGE_BASE_URL'] = llama.baseURL
    try {
      const started = Date.now()
      const run = await runSuite(stack.config, {
        suite: 'smoke',
        adapter: 'mock',
        task_ids: ['echo_greeting', 'count_words'],
        attempts: 1,
        workers: 1,
        concurrency: 2,
        seed: 'grading-real-judge',
        // count_words fails (tier 2 runs on it), echo_greeting passes
        adapter_config: { skill: 1, task_skill: { count_words: 0 } },
        judge: { model: 'smollm2-135m-instruct', metrics: ['correctness'], gate: 'none', max_tokens: 64, max_prompt_chars: 2500 },
      })
      await waitFor(async () => {
        const [row] = await query<{ n: string }>("SELECT count() AS n FROM metrics FINAL WHERE run_id = {run:String} AND kind = 'judge'", { run: run.run_id })
        return Number(row?.n) === 2
      }, 'judge metric rows from the real model')
      const metrics = await query<{ status: string; value: number | null; passed: number | null; detail: string; judge_model: string; judge_prompt_version: string; judge_decoding: string }>(
        "SELECT status, value, passed, detail, judge_model, judge_prompt_version, judge_decoding FROM metrics FINAL WHERE run_id = {run:String} AND kind = 'judge'",
        { run: run.run_id },
      )
      for (const m of metrics) {
        expect(['scored', 'errored']).toContain(m.status)
        expect({ model: m.judge_model, prompt: m.judge_prompt_version, decoding: JSON.parse(m.judge_decoding) as unknown }).toEqual({
          model: 'smollm2-135m-instruct',
          prompt: 'judge-metrics/2',
          decoding: { temperature: 0, max_tokens: 64, seed: 0, response_format: 'json_schema' },
        })
        if (m.status === 'scored') {
          expect([0, 0.25, 0.5, 0.75, 1]).toContain(Number(m.value))
          expect(m.detail).toMatch(/^[1-5]\/5: /)
        } else expect(m.detail).toMatch(/^(malformed reply twice|the judge could not be asked)/)
      }
      const tier2 = await query<{ tier2_status: string; tier2_calls: number; judge_model: string; needs_human_review: number }>(
        'SELECT tier2_status, tier2_calls, judge_model, needs_human_review FROM judgements FINAL WHERE run_id = {run:String} AND tier0_failed = 1',
        { run: run.run_id },
      )
      expect(tier2).toHaveLength(1)
      for (const t of tier2) {
        expect(['localized', 'not_localized', 'errored']).toContain(t.tier2_status)
        expect(t.judge_model).toBe('smollm2-135m-instruct')
        expect([1, 2]).toContain(Number(t.tier2_calls))
      }
      // measured, not asserted: printed for the record
      console.log(
        `real judge: ${metrics.length} metric rows (${metrics.filter((m) => m.status === 'scored').length} scored), ${tier2.length} tier-2 results ` +
          `(${tier2.map((t) => t.tier2_status).join(', ')}), ${llama.stats.completions} completions, ${llama.stats.prompt_tokens} + ${llama.stats.completion_tokens} tokens, ${Date.now() - started} ms`,
      )
    } finally {
      process.env['FORGE_JUDGE_BASE_URL'] = judge.baseURL
    }
  })
})
