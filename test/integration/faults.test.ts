/**
 * Fault injection end to end on the real embedded stack (Temporal dev server, workers, NATS,
 * ingester + chDB): the same seed injects identical faults on 1 and on 3 workers; a recovery
 * curve of the mock whose every number is worked out from the pure fault decisions; the
 * robustness drop against the same agent without faults; per-family scores of a generated
 * adversarial suite; and the CLI as a user runs it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runFaultSweep } from '../../app/fault-sweep.js'
import { faultPlanOf } from '../../app/faults.js'
import { generateAdversarialSuite } from '../../app/generate-adversarial.js'
import { readProvenance } from '../../app/provenance.js'
import { loadSuite } from '../../engine/suite-loader.js'
import { runSuite } from '../../app/run.js'
import { getRunStats } from '../../app/stats.js'
import { openReader } from '../../app/store-access.js'
import { FaultProfile } from '../../core/contracts/index.js'
import { decideFault, profileAtRate } from '../../core/faults.js'
import { forge, startTestStack, type TestStack } from '../helpers/stack.js'

let stack: TestStack
const scratch = mkdtempSync(path.join(tmpdir(), 'forge-faults-it-'))

beforeAll(async () => {
  stack = await startTestStack('faults')
})
afterAll(async () => {
  await stack?.down()
  rmSync(scratch, { recursive: true, force: true })
})

async function sql<T>(query: string, params: Record<string, unknown> = {}): Promise<T[]> {
  const reader = await openReader(stack.config)
  try {
    return await reader.query<T>(query, params)
  } finally {
    await reader.close()
  }
}

// every kind, short waits so timeouts stay cheap
const mixed = FaultProfile.parse({ timeout_ms: 20, slow_ms: 2, retry_after_ms: 10, rules: [{ rate: 0.35 }] })
const base = { suite: 'smoke', adapter: 'mock', attempts: 8, concurrency: 20, seed: 'det', adapter_config: { skill: 1, retries: 1 } }

/** Every tool call of a run, keyed without the run id: task/attempt/call → name and injected fault. */
async function callsOf(runId: string): Promise<Record<string, string>> {
  const rows = await sql<{ attempt_uid: string; call_index: number; name: string; injected_fault: string }>(
    'SELECT attempt_uid, call_index, name, injected_fault FROM tool_calls FINAL WHERE run_id = {run:String} ORDER BY attempt_uid, call_index',
    { run: runId },
  )
  return Object.fromEntries(rows.map((r) => [`${r.attempt_uid.split('/').slice(2).join('/')}#${r.call_index}`, `${r.name}:${r.injected_fault || '-'}`]))
}

describe('fault injection on the embedded stack', () => {
  let oneWorker: string
  let cleanRun: string

  it('injects identical faults from the same seed on 1 worker and on 3', async () => {
    const plan = faultPlanOf(mixed)
    const one = await runSuite(stack.config, { ...base, workers: 1, run_id: 'faults-w1', faults: plan })
    const three = await runSuite(stack.config, { ...base, workers: 3, run_id: 'faults-w3', faults: plan })
    oneWorker = one.run_id
    const [a, b] = [await callsOf(one.run_id), await callsOf(three.run_id)]
    expect(Object.keys(a).length).toBeGreaterThan(40)
    expect(b).toEqual(a)
    const kinds = new Set(Object.values(a).map((v) => v.split(':')[1]))
    expect([...kinds].sort()).toEqual(['-', '500', 'garbage', 'rate_limit', 'slow', 'timeout'])
    // counted per attempt, the same on both
    const perAttempt = async (run: string) =>
      sql<{ task_id: string; attempt: number; outcome: string; failure_bucket: string; injected_faults: number; kinds: string[] }>(
        'SELECT task_id, attempt, outcome, failure_bucket, injected_faults, injected_fault_kinds AS kinds FROM attempts FINAL WHERE run_id = {run:String} ORDER BY task_id, attempt',
        { run },
      )
    const rowsOne = await perAttempt(one.run_id)
    expect(await perAttempt(three.run_id)).toEqual(rowsOne)
    expect(rowsOne.reduce((n, r) => n + Number(r.injected_faults), 0)).toBe(Object.values(a).filter((v) => !v.endsWith(':-')).length)
    // the failure buckets keep unrecovered injected faults apart
    expect(one.failure_buckets['injected_fault']).toBeGreaterThan(0)
    // the run is stamped with its profile
    expect(one.run).toMatchObject({ fault_profile_hash: plan.profile_hash, fault_mode: 'uniform', fault_rate: 0.35 })
  })

  it('measures recovery per kind and task, and the robustness drop against the same agent without faults', async () => {
    const clean = await runSuite(stack.config, { ...base, workers: 1, run_id: 'faults-clean' })
    cleanRun = clean.run_id
    expect(clean.faults).toBeUndefined()
    expect(clean.run?.fault_profile_hash).toBeUndefined()
    const reader = await openReader(stack.config)
    try {
      const stats = await getRunStats(reader, oneWorker)
      const faults = stats.faults!
      expect(faults.profile).toMatchObject({ mode: 'uniform', rate: 0.35 })
      expect(faults.recovery.by_kind.map((k) => k.kind).sort()).toEqual(['500', 'garbage', 'rate_limit', 'slow', 'timeout'])
      // recovery: attempts that met a disruptive fault and passed, from the attempt rows themselves
      const [row] = await sql<{ n: string; k: string }>(
        "SELECT countIf(hasAny(injected_fault_kinds, ['timeout','500','garbage','rate_limit'])) AS n, countIf(hasAny(injected_fault_kinds, ['timeout','500','garbage','rate_limit']) AND outcome = 'pass') AS k FROM attempts FINAL WHERE run_id = {run:String}",
        { run: oneWorker },
      )
      expect([faults.recovery.overall.k, faults.recovery.overall.n]).toEqual([Number(row!.k), Number(row!.n)])
      expect(faults.robustness).toMatchObject({ clean_run_id: cleanRun, clean: { k: clean.outcomes['pass'] ?? 0, n: 40 } })
    } finally {
      await reader.close()
    }
  })

  it('draws a recovery curve of the mock whose numbers follow from the seeded decisions', async () => {
    const profile = FaultProfile.parse({ name: 'curve', rules: [{ rate: 0.1, kinds: { 500: 3, slow: 1 } }], slow_ms: 1 })
    const rates = [0, 0.3, 0.6]
    const report = await runFaultSweep(
      stack.config,
      { suite: 'toy_math', adapter: 'mock', attempts: 10, workers: 1, concurrency: 20, seed: 'curve', run_id: 'curve', adapter_config: { skill: 1, retries: 1 } },
      { profile, rates },
    )
    expect(report.sweep_id).toBe('curve-sweep')
    const configId = report.runs[0]!.run!.config_id
    // by hand: the mock calls the calculator once and retries once after an error; only a 500 is an error
    const expected = rates.map((rate) => {
      const at = profileAtRate(profile, rate)
      let passed = 0
      let met = 0
      let recovered = 0
      for (const task of ['decimal_division', 'paren_product', 'precedence']) {
        for (let attempt = 0; attempt < 10; attempt += 1) {
          const kind = (index: number) => decideFault(at, { runSeed: 'curve', attemptKey: `${configId}/${task}/${attempt}`, taskId: task, target: 'tools', tool: 'calculator', index })?.kind
          const first = kind(0) === '500'
          const ok = !first || kind(1) !== '500'
          if (ok) passed += 1
          if (first) met += 1
          if (first && ok) recovered += 1
        }
      }
      return { rate, pass: [passed, 30], recovery: [recovered, met] }
    })
    expect(report.curve.points.map((p) => ({ rate: p.rate, pass: [p.pass.k, p.pass.n], recovery: [p.recovery.k, p.recovery.n] }))).toEqual(expected)
    expect(report.curve.mode).toBe('uniform')
    // at 0 nothing is injected; the higher rates met faults and recovered some of them
    expect(expected[0]).toEqual({ rate: 0, pass: [30, 30], recovery: [0, 0] })
    expect(expected[2]!.recovery[1]).toBeGreaterThan(expected[1]!.recovery[1]!)
    expect(expected[2]!.recovery[0]).toBeGreaterThan(0)
    // the sweep's fault-free point is each faulted point's comparison
    const reader = await openReader(stack.config)
    try {
      const stats = await getRunStats(reader, 'curve-f2')
      expect(stats.faults?.robustness).toMatchObject({ clean_run_id: 'curve-f0' })
    } finally {
      await reader.close()
    }
  })

  it('scores a generated adversarial suite per mutation family', async () => {
    const out = path.join(scratch, 'smoke-adv')
    await generateAdversarialSuite({ suite: 'smoke', out, seed: '1', mutations: ['missing_tool', 'conflicting_constraints'] })
    const report = await runSuite(stack.config, { suite: out, adapter: 'mock', attempts: 2, workers: 1, concurrency: 20, seed: 'adv', adapter_config: { skill: 1 } })
    const passed = async (family: string) =>
      Number(
        (await sql<{ k: string }>("SELECT countIf(outcome = 'pass') AS k FROM attempts FINAL WHERE run_id = {run:String} AND task_id LIKE {like:String}", { run: report.run_id, like: `%.${family}.%` }))[0]!.k,
      )
    expect(report.families).toEqual([
      { family: 'missing_tool', label: 'fails gracefully when a tool is missing', tasks: 5, k: await passed('missing_tool'), n: 10, rate: expect.any(Number), low: expect.any(Number), high: expect.any(Number) },
      { family: 'conflicting_constraints', label: 'detects and reports conflicting constraints', tasks: 5, k: await passed('conflicting_constraints'), n: 10, rate: expect.any(Number), low: expect.any(Number), high: expect.any(Number) },
    ])
    // the naive mock never reports a conflict
    expect(report.families?.[1]?.k).toBe(0)
    const text = forge(['stats', '--run-id', report.run_id], stack.env)
    expect(text.stdout).toContain(`  fails gracefully when a tool is missing: ${report.families![0]!.k}/10`)

    // the failing cases kept as a corpus: a valid suite holding exactly them, with where they were kept from
    const failing = (await sql<{ task_id: string }>(
      "SELECT task_id FROM attempts FINAL WHERE run_id = {run:String} GROUP BY task_id HAVING countIf(outcome = 'pass') < count() ORDER BY task_id",
      { run: report.run_id },
    )).map((r) => r.task_id)
    const corpus = path.join(scratch, 'corpus')
    const kept = forge(['generate', 'keep-failing', '--run-id', report.run_id, '--into', corpus, '--json'], stack.env)
    expect(kept.status).toBe(0)
    expect((JSON.parse(kept.stdout) as { kept: { task_id: string }[] }).kept.map((k) => k.task_id)).toEqual(failing)
    const suite = await loadSuite(corpus)
    expect(suite.name).toBe('smoke_adversarial_corpus')
    expect(suite.tasks.map((t) => t.id).sort()).toEqual(failing)
    expect((await readProvenance(corpus))!.tasks[failing[0]!]!.kept_from).toMatchObject({ run_id: report.run_id, attempts: 2 })
    // keeping again adds nothing twice
    const again = forge(['generate', 'keep-failing', '--run-id', report.run_id, '--into', corpus, '--json'], stack.env)
    expect(JSON.parse(again.stdout)).toMatchObject({ kept: [], already: failing, tasks: failing.length })
    // a run of a suite that was not generated has nothing to keep
    const refused = forge(['generate', 'keep-failing', '--run-id', 'faults-clean', '--into', path.join(scratch, 'nope')], stack.env)
    expect(refused.status).toBe(2)
    expect(refused.stderr).toMatch(/is not a generated adversarial suite/)
  })

  it('works from the CLI: loud profile errors, the schema, stats of a sweep, compare warning on different profiles', () => {
    const bad = path.join(scratch, 'bad.yaml')
    writeFileSync(bad, 'rules:\n  - rate: 2\n')
    const refused = forge(['run', '--suite', 'smoke', '--fault-profile', bad], stack.env)
    expect(refused.status).toBe(2)
    expect(refused.stderr).toContain(`${bad}: rules[0].rate: Too big: expected number to be <=1 (got 2)`)

    const schema = forge(['faults', 'schema', '--json'], stack.env)
    expect(schema.status).toBe(0)
    expect(JSON.parse(schema.stdout)).toMatchObject({ title: 'Forge fault profile', required: ['rules'] })

    const curve = forge(['stats', '--fault-sweep', 'curve-sweep', '--json'], stack.env)
    expect(curve.status).toBe(0)
    expect((JSON.parse(curve.stdout) as { points: { rate: number }[] }).points.map((p) => p.rate)).toEqual([0, 0.3, 0.6])
    const text = forge(['stats', '--fault-sweep', 'curve-sweep'], stack.env)
    expect(text.stdout).toMatch(/recovery curve of sweep curve-sweep \(uniform\)/)

    const compare = forge(['compare', cleanRun, oneWorker, '--json'], stack.env)
    expect((JSON.parse(compare.stdout) as { warnings: string[] }).warnings.some((w) => w.startsWith('fault profile differs (none vs '))).toBe(true)

    const stats = forge(['stats', '--run-id', oneWorker], stack.env)
    expect(stats.stdout).toMatch(/recovery rate \(met ≥ 1 disruptive fault and still passed\): \d+\/\d+/)
    expect(stats.stdout).toMatch(new RegExp(`robustness drop vs fault-free run ${cleanRun}`))
  })
})
