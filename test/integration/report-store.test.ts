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
import { compareStoredRuns } from '../../app/compare.js'
import { renderReport } from '../../app/render/report-html.js'
import type { AttemptResult } from '../../core/contracts/index.js'
import { rateOf } from '../../core/stats.js'
import { directReader, openClickHouse, type ClickHouseClient, type StoreReader } from '../../store/clickhouse.js'
import { migrate } from '../../store/migrations.js'
import { attemptPage } from '../../store/report-queries.js'
import { rowToRun } from '../../store/converters.js'
import { insertRuns } from '../../store/repositories.js'
import { insertAuditLinks, sealStored } from '../../store/audit.js'
import { storeSyntheticRun } from './report-fixture.js'

let dir: string
let client: ClickHouseClient
let reader: StoreReader
const RUN = 'rep1'
const TASKS = ['alpha', 'beta', 'gamma']
const PER_TASK = 40
const attempts: AttemptResult[] = []

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'forge-report-store-'))
  client = await openClickHouse({ kind: 'embedded', path: join(dir, 'store') })
  await migrate(client)
  attempts.push(...(await storeSyntheticRun(client, RUN, TASKS, PER_TASK)))
  // an earlier run that passed far more often: comparing against it finds regressions
  await storeSyntheticRun(client, 'rep0', TASKS, PER_TASK, 10)
  reader = directReader(client)
})

afterAll(async () => {
  await client?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('report aggregates from the store', () => {
  it('says how many attempts a run planned: the stored count of a sequential run whose tasks stopped early, else tasks × attempts', async () => {
    expect((await buildRunReport(reader, { runId: RUN, now: 0 })).stamps.planned_attempts).toBe(TASKS.length * PER_TASK)
    await storeSyntheticRun(client, 'seq1', TASKS, 8)
    // up to 10 attempts per task, but the tasks stopped early: the workflow planned (and stored) 24 of 3 × 10
    const [run] = await reader.query<Record<string, unknown>>("SELECT * FROM runs FINAL WHERE run_id = 'seq1'")
    await insertRuns(client, [{ ...rowToRun(run as never), attempts: 10, planned_attempts: 24, final_stored: 24, updated_at: 1_764_470_200_000 }])
    const model = await buildRunReport(reader, { runId: 'seq1', now: 0 })
    expect(model.stamps.planned_attempts).toBe(24)
    expect(renderReport(model)).toContain('24 stored of 24 planned')
  })

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
    let after: { task_id: string; attempt: number } | undefined
    for (;;) {
      const page = await attemptPage(reader, RUN, { taskId: 'beta', limit: 15, ...(after !== undefined ? { after } : {}) })
      if (page.length === 0) break
      seen.push(...page.map((a) => a.attempt))
      after = page.at(-1)!
    }
    expect(seen).toEqual(Array.from({ length: PER_TASK }, (_, i) => i))
    // across tasks: the cursor is (task, attempt)
    const all: string[] = []
    let cursor: { task_id: string; attempt: number } | undefined
    for (;;) {
      const page = await attemptPage(reader, RUN, { limit: 17, ...(cursor !== undefined ? { after: cursor } : {}) })
      if (page.length === 0) break
      all.push(...page.map((a) => a.attempt_uid))
      cursor = page.at(-1)!
    }
    expect(all).toEqual([...attempts].sort((a, b) => (a.task_id < b.task_id ? -1 : a.task_id > b.task_id ? 1 : a.attempt - b.attempt)).map((a) => a.attempt_uid))
    const harnessPage = await attemptPage(reader, RUN, { taskId: 'beta', limit: 100, filter: { failure_bucket: 'harness_error' } })
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

  it('compares with an earlier run: the regression table of forge compare, rendered with its figures', async () => {
    const model = await buildRunReport(reader, { runId: RUN, compare: 'rep0', now: 0 })
    const direct = await compareStoredRuns(reader, { runA: 'rep0', runB: RUN })
    expect(model.comparison).toEqual(direct)
    expect(direct.regression).toBe(true)
    const html = renderReport(model)
    for (const t of direct.suites[0]!.tasks) {
      expect(html).toContain(`data-task="${t.task_id}" data-delta="${t.delta}" data-p="${t.p}" data-q="${t.q}" data-verdict="${t.regressed ? 'regressed' : t.improved ? 'improved' : 'unchanged'}"`)
    }
    expect(html).toContain('<p class="banner" id="regression-verdict">Regression: ')
    expect(html).toContain('id="recovery-curve"')
    for (const s of model.agreement!.sources) expect(html).toContain(`data-source="${s.source}" data-kappa="${s.agreement.kappa}" data-n="${s.agreement.n}"`)
    await expect(buildRunReport(reader, { runId: RUN, compare: 'rep0', baseline: 'main', now: 0 })).rejects.toThrow('give either --compare <run> or --baseline <ref>, not both')
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

describe('what a seal left in the store', () => {
  it("reads the run's newest audit head and its chain's length in one read; nothing sealed reads '' and 0", async () => {
    expect(await sealStored(reader, 'sealed1')).toEqual({ head: '', links: 0 })
    const [row] = await reader.query<Record<string, unknown>>(`SELECT * FROM runs FINAL WHERE run_id = '${RUN}'`)
    const run = { ...rowToRun(row as never), run_id: 'sealed1' }
    await insertRuns(client, [run])
    expect(await sealStored(reader, 'sealed1')).toEqual({ head: '', links: 0 })
    const link = (seq: number) => ({ run_id: 'sealed1', seq, entry_kind: 'attempt' as const, entry_key: `sealed1/c/t/${seq}`, content_hash: 'a'.repeat(64), prev_hash: 'b'.repeat(64), link_hash: String(seq).repeat(64).slice(0, 64) })
    await insertAuditLinks(client, [link(0), link(1), link(2)], 1_764_470_300_000)
    // two seals: the newer record's head is the one read
    await insertRuns(client, [{ ...run, audit_head: 'c'.repeat(64), updated_at: run.updated_at + 1 }])
    await insertRuns(client, [{ ...run, audit_head: 'd'.repeat(64), updated_at: run.updated_at + 2 }])
    expect(await sealStored(reader, 'sealed1')).toEqual({ head: 'd'.repeat(64), links: 3 })
    // another run's chain is not counted
    expect(await sealStored(reader, RUN)).toEqual({ head: expect.any(String) as string, links: 0 })
  })
})
