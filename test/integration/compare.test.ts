/**
 * Regression detection end to end on the embedded stack: pairs of mock runs where run b has a
 * planted drop on a few tasks (the mock's `task_skill`), compared from ClickHouse. Across several
 * seeds and both small suites, exactly the dropped tasks are flagged. Then efficiency: the same agent
 * with another seed is not flagged, a slower one (`delay_ms`) or one that loops on tools is. Then
 * baselines and the CLI.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { setBaseline } from '../../app/baselines.js'
import { compareStoredRuns, type CompareReport } from '../../app/compare.js'
import { runSuite, type RunReport } from '../../app/run.js'
import { openReader } from '../../app/store-access.js'
import { measureRanks, type MetricChange } from '../../core/compare.js'
import { attemptMeasurements, attemptRanks } from '../../store/repositories.js'
import { forge, startTestStack, type TestStack } from '../helpers/stack.js'

let stack: TestStack

beforeAll(async () => {
  stack = await startTestStack('compare')
})
afterAll(async () => {
  await stack?.down()
})

// 40 attempts per task: forge plan --detect 0.6 --baseline-rate 0.9 --tasks 5 asks for far fewer
const ATTEMPTS = 40
const SKILL = 0.9
const DROPPED_SKILL = 0.3
/** the mock's think per attempt in the runs that must not differ: latency past 25 % of it is flagged */
const THINK_MS = 1000

async function pair(suite: string, seed: string, dropped: string[]): Promise<{ a: RunReport; b: RunReport }> {
  const base = { suite, adapter: 'mock', attempts: ATTEMPTS, workers: 1, concurrency: 50 }
  const a = await runSuite(stack.config, { ...base, seed: `${seed}-a`, adapter_config: { skill: SKILL } })
  const b = await runSuite(stack.config, {
    ...base,
    seed: `${seed}-b`,
    adapter_config: { skill: SKILL, task_skill: Object.fromEntries(dropped.map((t) => [t, DROPPED_SKILL])) },
  })
  return { a, b }
}

async function compare(request: Parameters<typeof compareStoredRuns>[1]) {
  const reader = await openReader(stack.config)
  try {
    return await compareStoredRuns(reader, request)
  } finally {
    await reader.close()
  }
}

const cases = [
  { suite: 'smoke', seed: 'e2e-1', dropped: ['count_words', 'reverse_shout'] },
  { suite: 'toy_math', seed: 'e2e-2', dropped: ['precedence'] },
  { suite: 'smoke', seed: 'e2e-3', dropped: ['capital_lookup'] },
]

describe('forge compare of two mock runs with a planted drop', () => {
  const runs = new Map<string, { a: RunReport; b: RunReport }>()

  for (const c of cases) {
    it(`flags exactly the dropped tasks (${c.suite}, seed ${c.seed}: ${c.dropped.join(', ')})`, async () => {
      const { a, b } = await pair(c.suite, c.seed, c.dropped)
      runs.set(c.seed, { a, b })
      const report = await compare({ runA: a.run_id, runB: b.run_id })
      expect(report.suites.map((s) => s.suite)).toEqual([c.suite])
      const tasks = report.suites[0]!.tasks
      expect(tasks).toHaveLength(a.tasks.length)
      expect(tasks.every((t) => t.a.n === ATTEMPTS && t.b.n === ATTEMPTS)).toBe(true)
      expect(tasks.filter((t) => t.regressed).map((t) => t.task_id).sort()).toEqual([...c.dropped].sort())
      // flagged means significant after BH and a lower point estimate
      for (const t of tasks.filter((x) => x.regressed)) expect({ q: t.q <= 0.05, dropped: t.delta! < 0 }).toEqual({ q: true, dropped: true })
      expect(report.regression).toBe(true)
      expect(report.findings.success).toBe(c.dropped.length)
      // a worse agent also calls tools differently; an unchanged one does not
      expect(tasks.filter((t) => t.tool_usage_changed).every((t) => c.dropped.includes(t.task_id))).toBe(true)
      // same suite files, same price table: nothing to warn about
      expect(report.warnings).toEqual([])
    })
  }

  it('finds no regression between two runs of the same agent with different seeds', async () => {
    // an attempt's latency is its wall time, which a busy machine stretches: with no think time a
    // loaded CI host once made one of two such runs 50 ms (> 25 %) slower and compare flagged it. Both
    // runs think THINK_MS per attempt, so only a slowdown past compare's latency delta (25 % of that,
    // 250 ms) could be flagged — an agent's, not the machine's
    const agent = { suite: 'smoke', adapter: 'mock', attempts: ATTEMPTS, workers: 1, concurrency: 50, adapter_config: { skill: SKILL, delay_ms: THINK_MS } }
    const a = await runSuite(stack.config, { ...agent, seed: 'e2e-1' })
    const again = await runSuite(stack.config, { ...agent, seed: 'e2e-1-again' })
    runs.set('again', { a, b: again })
    const report = await compare({ runA: a.run_id, runB: again.run_id })
    expect({ regression: report.regression, findings: report.findings }).toEqual({
      regression: false,
      findings: { success: 0, tool_usage: 0, cost: 0, latency: 0, tool_calls: 0 },
    })
    // every efficiency figure was tested on all 40 attempts of each run, and none increased
    const taskMetrics = report.suites[0]!.tasks.flatMap((t) => t.metrics)
    expect(taskMetrics.every((m) => m.test === 'mann-whitney u' && m.n_a === ATTEMPTS && m.n_b === ATTEMPTS && m.verdict !== 'increased')).toBe(true)
    expect(report.suites[0]!.metrics.map((m) => m.test)).toEqual(['van elteren', 'van elteren', 'van elteren', 'van elteren'])

    const cli = forge(['compare', a.run_id, again.run_id, '--json'], stack.env)
    expect(cli.status).toBe(0)
    const parsed = JSON.parse(cli.stdout) as CompareReport
    const first = parsed.suites[0]!.tasks[0]!.metrics.find((m) => m.metric === 'tool_calls_per_attempt')!
    expect(Object.keys(first)).toEqual(['metric', 'a', 'b', 'relative', 'beyond_delta', 'test', 'method', 'n_a', 'n_b', 'effect', 'z', 'p', 'q', 'verdict', 'flagged'])
    expect({ test: first.test, p: typeof first.p, q: typeof first.q, flagged: first.flagged }).toEqual({ test: 'mann-whitney u', p: 'number', q: 'number', flagged: false })
  })

  it('ranks per-attempt values in SQL exactly as core ranks the raw attempts', async () => {
    const { a, b } = runs.get('again')!
    const reader = await openReader(stack.config)
    try {
      const sql = await attemptRanks(reader, a.run_id, b.run_id)
      const raw = measureRanks(await attemptMeasurements(reader, a.run_id), await attemptMeasurements(reader, b.run_id))
      expect(sql).toEqual(raw)
      // 5 tasks × latency, tool calls and cost (the mock's model is priced, at 0)
      expect(sql.map((r) => r.measure)).toEqual(Array.from({ length: 5 }, () => ['cost_usd', 'latency_ms', 'tool_calls']).flat())
      // a run against itself: the same attempts in both samples
      const self = await attemptRanks(reader, a.run_id, a.run_id)
      expect(self).toEqual(measureRanks(await attemptMeasurements(reader, a.run_id), await attemptMeasurements(reader, a.run_id)))
    } finally {
      await reader.close()
    }
  })

  const flagged = (report: CompareReport, metric: MetricChange['metric']) =>
    report.suites[0]!.tasks.filter((t) => t.metrics.some((m) => m.metric === metric && m.flagged)).map((t) => t.task_id)

  it('flags a slower agent: the same agent with delay_ms 100 is slower on every task, and nothing else is flagged', async () => {
    const base = { suite: 'smoke', adapter: 'mock', attempts: ATTEMPTS, workers: 1, concurrency: 50, seed: 'slow' }
    const a = await runSuite(stack.config, { ...base, adapter_config: { skill: SKILL } })
    const b = await runSuite(stack.config, { ...base, adapter_config: { skill: SKILL, delay_ms: 100 } })
    const report = await compare({ runA: a.run_id, runB: b.run_id })
    const tasks = report.suites[0]!.tasks.map((t) => t.task_id)
    expect({ p50: flagged(report, 'latency_p50_ms'), success: report.findings.success, tool_calls: report.findings.tool_calls, tool_usage: report.findings.tool_usage }).toEqual({
      p50: tasks,
      success: 0,
      tool_calls: 0,
      tool_usage: 0,
    })
    const p50 = report.suites[0]!.tasks[0]!.metrics.find((m) => m.metric === 'latency_p50_ms')!
    // every attempt of b sleeps 100 ms inside the agent's clock (timers may fire a millisecond or two early); a's latency is
    // the worker's own work, which grows with the machine's load, so b - a is not a fixed 100 ms
    expect({ test: p50.test, verdict: p50.verdict, slower: p50.b! >= 95 && p50.b! > p50.a!, q: p50.q! <= 0.05 }).toEqual({
      test: 'mann-whitney u',
      verdict: 'increased',
      slower: true,
      q: true,
    })

    // the mock answers in well under a millisecond: a's p50 may print as 0 ms, with no relative change
    const text = forge(['compare', a.run_id, b.run_id], stack.env)
    expect(text.status).toBe(6)
    expect(text.stdout).toMatch(new RegExp(`${tasks[0]}: latency p50 [\\d.]+ ms → [\\d.]+ ms \\((\\+\\d+%; )?mann-whitney u, q \\S+, increased\\)`))
    expect(text.stdout).toMatch(/^REGRESSION: 0 task\(s\) dropped significantly, 0 changed tool usage, 0 cost, \d+ latency and 0 tool-call increase\(s\)/m)
  })

  it('flags an agent that loops on its tools where the baseline gave up without calling any', async () => {
    // half the attempts fail in both runs: a's refuse, b's repeat a call until the budget stops them
    const base = { suite: 'smoke', adapter: 'mock', attempts: ATTEMPTS, workers: 1, concurrency: 50, seed: 'loops' }
    const a = await runSuite(stack.config, { ...base, adapter_config: { skill: 0.5, failure_modes: { refusal: 1 } } })
    const b = await runSuite(stack.config, { ...base, adapter_config: { skill: 0.5, failure_modes: { call_loop: 1 } } })
    const report = await compare({ runA: a.run_id, runB: b.run_id })
    expect(flagged(report, 'tool_calls_per_attempt')).toEqual(report.suites[0]!.tasks.map((t) => t.task_id))
    expect(report.suites[0]!.metrics.find((m) => m.metric === 'tool_calls_per_attempt')).toMatchObject({ test: 'van elteren', verdict: 'increased' })
    expect({ success: report.findings.success, tool_calls: report.findings.tool_calls, regression: report.regression }).toEqual({
      success: 0,
      tool_calls: report.suites[0]!.tasks.length + 1,
      regression: true,
    })
    const text = forge(['compare', a.run_id, b.run_id], stack.env)
    expect(text.status).toBe(6)
    expect(text.stdout).toMatch(/suite smoke: tool calls per attempt [\d.]+ → [\d.]+ \(\+\d+%; van elteren, q \S+, increased\)/)
  })

  it('compares against a stored baseline, newest version of a name or latest for the suite', async () => {
    const { a, b } = runs.get('e2e-3')!
    const first = await setBaseline(stack.config, { runId: runs.get('e2e-1')!.a.run_id, name: 'main', commit: 'aaaa1111', agentVersion: '1.0' })
    const second = await setBaseline(stack.config, { runId: a.run_id, name: 'main', commit: 'bbbb2222', agentVersion: '1.1', note: 'e2e' })
    expect([first.version, second.version]).toEqual([1, 2])
    expect(second).toMatchObject({ name: 'main', run_id: a.run_id, suite: 'smoke', commit_hash: 'bbbb2222', agent_version: '1.1', note: 'e2e' })

    const byName = await compare({ baseline: 'main', runB: b.run_id })
    expect(byName.baseline).toEqual(second)
    expect(byName.run_a).toBe(a.run_id)
    expect(byName.suites[0]!.tasks.filter((t) => t.regressed).map((t) => t.task_id)).toEqual(['capital_lookup'])
    expect((await compare({ baseline: 'main@1', runB: b.run_id })).run_a).toBe(runs.get('e2e-1')!.a.run_id)
    expect((await compare({ baseline: 'bbbb22', runB: b.run_id })).baseline).toEqual(second)
    expect((await compare({ baseline: 'latest', runB: b.run_id })).baseline).toEqual(second)
    // no toy_math baseline exists: latest is per suite, never another suite's
    await expect(compare({ baseline: 'latest', runB: runs.get('e2e-2')!.b.run_id })).rejects.toThrow(/no baseline is stored for suite "toy_math"/)
  })

  it('tells CI through the exit code, prints a readable table and has --json', () => {
    const { a, b } = runs.get('e2e-3')!
    const text = forge(['compare', a.run_id, b.run_id], stack.env)
    expect(text.status).toBe(6)
    expect(text.stdout).toMatch(/task\s+a k\/n\s+a\s+wilson 95%\s+b k\/n\s+b\s+wilson 95%\s+delta\s+test\s+p\s+q \(BH\)\s+verdict/)
    expect(text.stdout).toMatch(/capital_lookup\s+\d+\/40.*REGRESSED/)
    expect(text.stdout).toMatch(/price table 2026-11-default\.2 \(2026-11-30\)/)
    expect(text.stdout).toMatch(/^REGRESSION: 1 task\(s\) dropped significantly/m)

    const json = forge(['compare', '--baseline', 'main', b.run_id, '--json'], stack.env)
    expect(json.status).toBe(6)
    const parsed = JSON.parse(json.stdout) as { regression: boolean; baseline: { name: string; version: number }; findings: { success: number } }
    expect({ regression: parsed.regression, baseline: [parsed.baseline.name, parsed.baseline.version], success: parsed.findings.success }).toEqual({
      regression: true,
      baseline: ['main', 2],
      success: 1,
    })

    const same = forge(['compare', a.run_id, a.run_id], stack.env)
    expect({ status: same.status, clean: /no regression found/.test(same.stdout) }).toEqual({ status: 0, clean: true })

    const list = forge(['baseline', 'list', '--json'], stack.env)
    expect((JSON.parse(list.stdout) as { name: string; version: number }[]).map((x) => `${x.name}@${x.version}`)).toEqual(['main@2', 'main@1'])
    const shown = forge(['baseline', 'show', 'main'], stack.env)
    expect(shown.stdout).toMatch(/^baseline main v2: run \S+, suite smoke/m)
    expect(forge(['compare', '--baseline', 'nope'], stack.env).status).toBe(2)
  })
})
