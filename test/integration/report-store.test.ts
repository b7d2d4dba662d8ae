/**
 * The report's reads against real chDB: a stored run with injected faults, judge verdicts, harness
 * errors and traces, written the way the ingester writes it. Each aggregate the report shows is
 * checked against the same figure computed from the inserted attempts one by one.
 */
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { judgeAgreement } from '../../app/judge-agreement.js'
import { buildRunReport, writeRunReport } from '../../app/report.js'
import { getRunStats } from '../../app/stats.js'
import { getTraceView } from '../../app/trace.js'
import type { AttemptResult, MetricValue, RunRecord, StoredTrace, ToolCall } from '../../core/contracts/index.js'
import { rateOf } from '../../core/stats.js'
import { directReader, openClickHouse, type ClickHouseClient, type StoreReader } from '../../store/clickhouse.js'
import { insertAttemptGrading, insertStoredTraces } from '../../store/grading-repositories.js'
import { migrate } from '../../store/migrations.js'
import { attemptPage } from '../../store/report-queries.js'
import { insertAttempts, insertRuns } from '../../store/repositories.js'

let dir: string
let client: ClickHouseClient
let reader: StoreReader
const RUN = 'rep1'
const TASKS = ['alpha', 'beta', 'gamma']
const PER_TASK = 40
const attempts: AttemptResult[] = []

const judgeStamp = { model: 'judge-m', prompt_version: 'p1', decoding: {} }

/** Attempt i of a task, deterministic: faults every 3rd attempt, a harness error every 13th, a judge grade on beta. */
function makeAttempt(task: string, taskIndex: number, i: number): AttemptResult {
  const faults = i % 3 === 0 ? 1 + (i % 4) : 0
  const harness = i % 13 === 5
  const pass = !harness && (i * (taskIndex + 3)) % 10 < 6 - faults
  const calls: ToolCall[] = Array.from({ length: 2 + faults }, (_, c) => ({
    index: c,
    name: c % 2 === 0 ? 'kv_get' : 'kv_put',
    args: { key: `k${c}` },
    result: c < faults ? undefined : 'ok',
    ...(c < faults ? { error: 'injected timeout', injected_fault: c % 2 === 0 ? 'timeout' : 'http_500' } : {}),
    retry_index: 0,
    started_ms: c * 10,
    duration_ms: 5,
  }))
  const uid = `${RUN}/cfg/${task}/${i}`
  const grades = [
    { grader: 'exact', passed: pass, score: pass ? 1 : 0, detail: '' },
    ...(task === 'beta' ? [{ grader: 'judge', passed: pass !== (i % 7 === 0), score: 1, detail: '', judge: judgeStamp }] : []),
  ]
  const metrics: MetricValue[] =
    task === 'gamma' ? [{ metric: 'correctness', version: 1, kind: 'judge', status: 'scored', value: 5, passed: pass !== (i % 5 === 0), detail: '', judge: judgeStamp }] : []
  return {
    attempt_uid: uid,
    run_id: RUN,
    config_id: 'cfg',
    suite: 'rep',
    task_id: task,
    attempt: i,
    adapter: 'mock',
    outcome: pass ? 'pass' : 'fail',
    validity: harness ? 'invalid' : 'valid',
    failure_bucket: pass ? null : harness ? 'harness_error' : faults > 0 ? 'tool_error' : 'wrong_answer',
    budget_limit: null,
    grades,
    invariants: [],
    instruction: 'do it',
    output: pass ? '42' : '41',
    self_report: '',
    error: harness ? 'adapter "mock" threw: boom' : '',
    cost_usd: task === 'gamma' ? null : 0.001 * (1 + (i % 5)),
    latency_ms: 5 + ((i * 37) % 400),
    tool_call_count: calls.length,
    input_tokens: 100,
    output_tokens: 10,
    model: task === 'gamma' ? 'unpriced-m' : 'm1',
    decoding: {},
    price_table_version: 'v1',
    seed: 's',
    worker_id: `w${i % 2}`,
    started_at: 1_764_470_000_000 + i,
    finished_at: 1_764_470_000_100 + i,
    tool_calls: calls,
    metrics,
  }
}

function storedTraceOf(a: AttemptResult): StoredTrace {
  return {
    attempt_uid: a.attempt_uid,
    run_id: a.run_id,
    config_id: a.config_id,
    suite: a.suite,
    task_id: a.task_id,
    attempt: a.attempt,
    outcome: a.outcome,
    validity: a.validity,
    failure_bucket: a.failure_bucket,
    grades: a.grades,
    invariants: [],
    trace: {
      output: a.output,
      tool_calls: a.tool_calls,
      spans: [
        { span_id: 'attempt', parent_span_id: null, category: 'attempt', name: a.attempt_uid, start_ms: 0, duration_ms: 60, attributes: {} },
        { span_id: 'agent', parent_span_id: 'attempt', category: 'agent', name: 'mock', start_ms: 0, duration_ms: 50, attributes: {} },
        ...a.tool_calls.map((c) => ({ span_id: `tool-${c.index}`, parent_span_id: 'agent', category: 'tool' as const, name: c.name, start_ms: c.started_ms, duration_ms: c.duration_ms, attributes: {} })),
        { span_id: 'grading', parent_span_id: 'attempt', category: 'grading', name: 'grade', start_ms: 55, duration_ms: 1, attributes: {} },
      ],
      state_snapshots: [],
      errors: [],
      usage: { input_tokens: 100, output_tokens: 10 },
      duration_ms: 50,
      refused: false,
    },
    env: null,
    truncated: [],
    stored_at: a.finished_at,
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'forge-report-store-'))
  client = await openClickHouse({ kind: 'embedded', path: join(dir, 'store') })
  await migrate(client)
  TASKS.forEach((task, t) => {
    for (let i = 0; i < PER_TASK; i++) attempts.push(makeAttempt(task, t, i))
  })
  await insertAttempts(client, attempts, Date.now())
  await insertAttemptGrading(client, attempts, Date.now())
  await insertStoredTraces(client, attempts.map(storedTraceOf), Date.now())
  const run: RunRecord = {
    run_id: RUN, suite: 'rep', suite_path: '/x', adapter: 'mock', config_id: 'cfg', attempts: PER_TASK, task_count: TASKS.length, seed: 's',
    status: 'completed', started_at: 1_764_470_000_000, finished_at: 1_764_470_100_000, updated_at: 1_764_470_100_000,
    price_table_version: 'v1', price_table_date: '2026-11-30', suite_hash: 'ab'.repeat(32), judge_model: 'judge-m', judge_prompt_version: 'p1',
    stop_width: 0, stopped_tasks: [],
  }
  await insertRuns(client, [run])
  reader = directReader(client)
})

afterAll(async () => {
  await client?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('report aggregates from the store', () => {
  it('computes recovery under injected faults, per kind and by faults met, as the attempts say', async () => {
    const model = await buildRunReport(reader, { runId: RUN, now: 0 })
    const faultsOf = (a: AttemptResult) => a.tool_calls.filter((c) => c.injected_fault !== undefined).length
    const faulted = attempts.filter((a) => faultsOf(a) > 0)
    const clean = attempts.filter((a) => faultsOf(a) === 0)
    const passed = (xs: AttemptResult[]) => xs.filter((a) => a.outcome === 'pass').length
    expect(model.recovery!.faulted).toEqual(rateOf(passed(faulted), faulted.length))
    expect(model.recovery!.clean).toEqual(rateOf(passed(clean), clean.length))
    expect(model.recovery!.curve.map((p) => [p.faults, p.k, p.n])).toEqual(
      [0, 1, 2, 3, 4].map((f) => {
        const group = attempts.filter((a) => faultsOf(a) === f)
        return [f, passed(group), group.length]
      }),
    )
    const kinds = ['http_500', 'timeout'].map((fault) => {
      const hit = attempts.filter((a) => a.tool_calls.some((c) => c.injected_fault === fault))
      return { fault, calls: attempts.flatMap((a) => a.tool_calls).filter((c) => c.injected_fault === fault).length, attempts: hit.length, recovered: passed(hit) }
    })
    expect([...model.fault_kinds].sort((a, b) => (a.fault < b.fault ? -1 : 1))).toEqual(kinds)
    expect(model.stamps.fault_profile).toMatch(/^injected: /)
  })

  it('gives the same judge agreement as forge judge-agreement, which reads the attempts one by one', async () => {
    const model = await buildRunReport(reader, { runId: RUN, now: 0 })
    const direct = await judgeAgreement(reader, RUN)
    expect(model.agreement!.grading_version).toBe(direct.grading_version)
    for (const source of direct.sources) {
      const { source: name, judge_only, ...agreement } = source
      expect(model.agreement!.sources.find((s) => s.source === name)).toEqual({ source: name, agreement, judge_only })
    }
    expect(direct.sources.every((s) => s.n > 0)).toBe(true)
  })

  it('bins latency and cost in ClickHouse without losing an attempt, and counts unpriced ones apart', async () => {
    const model = await buildRunReport(reader, { runId: RUN, now: 0 })
    expect(model.latency.total).toBe(attempts.length)
    const unpriced = attempts.filter((a) => a.cost_usd === null).length
    expect(model.cost).toMatchObject({ missing: unpriced, total: attempts.length - unpriced })
    // every latency falls in the bin whose edges hold it
    for (const a of attempts.slice(0, 20)) {
      const bin = model.latency.bins.find((b) => a.latency_ms >= b.low && a.latency_ms < b.high)
      expect(bin, `latency ${a.latency_ms}`).toBeDefined()
    }
  })

  it('shows the harness-error banner above 2% and lists failed attempts in task and attempt order, bounded', async () => {
    const model = await buildRunReport(reader, { runId: RUN, now: 0, maxFailed: 7 })
    const harness = attempts.filter((a) => a.failure_bucket === 'harness_error').length
    expect(model.banner).toMatchObject({ harness_errors: harness, attempts: attempts.length, total: false })
    const failed = attempts.filter((a) => a.outcome !== 'pass')
    expect(model.failed.total).toBe(failed.length)
    expect(model.failed.attempts.map((a) => a.attempt_uid)).toEqual(failed.slice(0, 7).map((a) => a.attempt_uid))
  })

  it('pages a task keyset-wise: every attempt once, in order, filters applied in SQL', async () => {
    const seen: number[] = []
    let after: number | undefined
    for (;;) {
      const page = await attemptPage(reader, RUN, 'beta', { limit: 15, ...(after !== undefined ? { after } : {}) })
      if (page.length === 0) break
      seen.push(...page.map((a) => a.attempt))
      after = page.at(-1)!.attempt
    }
    expect(seen).toEqual(Array.from({ length: PER_TASK }, (_, i) => i))
    const harnessPage = await attemptPage(reader, RUN, 'beta', { limit: 100, filter: { failure_bucket: 'harness_error' } })
    expect(harnessPage.map((a) => a.attempt)).toEqual(attempts.filter((a) => a.task_id === 'beta' && a.failure_bucket === 'harness_error').map((a) => a.attempt))
  })

  it('writes the report with the figures of forge stats and a trace page per listed failed attempt, linked', async () => {
    const out = join(dir, 'out', 'run.html')
    const written = await writeRunReport(reader, { runId: RUN, now: 0, out, maxTraces: 5 })
    expect(written).toMatchObject({ run_id: RUN, traces_written: 5, traces_dir: join(dir, 'out', 'run-traces'), attempts: attempts.length, harness_banner: true })
    const html = readFileSync(out, 'utf8')
    expect(written.bytes).toBe(Buffer.byteLength(html))
    const stats = await getRunStats(reader, RUN)
    for (const t of stats.tasks) {
      expect(html).toContain(`data-task="${t.task_id}" data-k="${t.k}" data-n="${t.n}" data-rate="${t.rate}" data-low="${t.low}" data-high="${t.high}"`)
    }
    const links = [...html.matchAll(/<a class="trace-link" href="([^"]+)">/g)].map((m) => m[1]!)
    expect(links).toHaveLength(5)
    for (const link of links) expect(existsSync(join(dir, 'out', link))).toBe(true)
    expect(readdirSync(join(dir, 'out', 'run-traces'))).toHaveLength(5)
    const firstTrace = readFileSync(join(dir, 'out', links[0]!), 'utf8')
    expect(firstTrace).toContain('<a id="back" href="../run.html">')
  })

  it('finds a trace by run, task and attempt, and explains what exists when it does not', async () => {
    const view = await getTraceView(reader, { runId: RUN, taskId: 'alpha', attempt: 3 })
    expect(view.attempt_uid).toBe(`${RUN}/cfg/alpha/3`)
    expect(view.roots[0]!.children.map((c) => c.id)).toEqual(['agent', 'grading'])
    await expect(getTraceView(reader, { runId: RUN, taskId: 'delta', attempt: 0 })).rejects.toThrow('--task: run rep1 has no task "delta" (it has: alpha, beta, gamma)')
    await expect(getTraceView(reader, { runId: RUN, taskId: 'alpha', attempt: 99 })).rejects.toThrow('--attempt: run rep1 has no stored attempt 99 of task alpha (attempts count from 0)')
    await expect(getTraceView(reader, { runId: 'nope', taskId: 'alpha', attempt: 0 })).rejects.toThrow('no run "nope" is stored')
    await expect(getTraceView(reader, { attemptUid: 'x/y/z/1' })).rejects.toThrow('no attempt "x/y/z/1" is stored')
  })
})
