import { describe, expect, it } from 'vitest'
import { MAX_SWEEP_CELLS, SweepSpec } from '../../core/contracts/sweep.js'
import { baselineNameOf, cellVerdictOf, promotesBaseline, sweepCells, sweepIdFrom, sweepVerdictOf } from '../../core/sweep.js'

describe('SweepSpec', () => {
  it('applies defaults', () => {
    expect(SweepSpec.parse({ name: 'nightly', suites: ['toy_math'], adapters: ['mock'] })).toEqual({
      name: 'nightly',
      suites: ['toy_math'],
      adapters: ['mock'],
      models: [],
      seeds: ['1'],
      attempts: 5,
      adapter_config: {},
      cells_in_flight: 2,
      baseline: '{name}.{suite}.{adapter}.{model}',
      promote_baseline: 'never',
    })
  })

  it('names every bad field at once', () => {
    const r = SweepSpec.safeParse({ name: 'bad name', suites: [], adapters: [{ name: 'mock', confg: {} }], attempts: 0, extra: 1 })
    expect(r.success).toBe(false)
    const problems = r.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`)
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^name: must be 1–40 letters/),
        expect.stringMatching(/^suites: /),
        expect.stringMatching(/^attempts: /),
        expect.stringMatching(/Unrecognized key.*extra/),
      ]),
    )
    expect(problems.some((p) => p.startsWith('adapters.0'))).toBe(true)
  })

  it('refuses a matrix larger than a sweep holds, and a value listed twice', () => {
    const seeds = Array.from({ length: MAX_SWEEP_CELLS + 1 }, (_, i) => `s${i}`)
    const big = SweepSpec.safeParse({ name: 'big', suites: ['a'], adapters: ['mock'], seeds })
    expect(big.success).toBe(false)
    expect(big.error!.issues[0]!.message).toBe(`the matrix has ${MAX_SWEEP_CELLS + 1} cells; a sweep holds at most ${MAX_SWEEP_CELLS} (split it into several sweeps)`)
    const dup = SweepSpec.safeParse({ name: 'dup', suites: ['a', 'a'], adapters: ['mock'] })
    expect(dup.error!.issues.map((i) => [i.path.join('.'), i.message])).toEqual([['suites', '"a" is listed twice']])
  })
})

describe('sweep matrix', () => {
  const spec = SweepSpec.parse({
    name: 'nightly',
    suites: ['toy_math', 'smoke'],
    adapters: ['mock', { name: 'react', config: { temperature: 0 } }],
    models: ['m1', 'org/m2'],
    seeds: ['a', 'b'],
    adapter_config: { skill: 0.9 },
  })

  it('has one cell per suite × adapter × model × seed, in a stable order, with its run id and merged config', () => {
    const cells = sweepCells(spec, 'nightly-20261201T020000Z')
    expect(cells).toHaveLength(16)
    expect(cells[0]).toEqual({ cell: 0, suite_ref: 'toy_math', adapter: 'mock', adapter_config: { skill: 0.9, model: 'm1' }, model: 'm1', seed: 'a', run_id: 'nightly-20261201T020000Z-c0' })
    expect(cells[7]).toEqual({ cell: 7, suite_ref: 'toy_math', adapter: 'react', adapter_config: { skill: 0.9, temperature: 0, model: 'org/m2' }, model: 'org/m2', seed: 'b', run_id: 'nightly-20261201T020000Z-c7' })
    expect(cells[15]!.suite_ref).toBe('smoke')
    expect(new Set(cells.map((c) => c.run_id)).size).toBe(16)
  })

  it('runs each adapter once per seed with its own default model when no models are listed', () => {
    const cells = sweepCells(SweepSpec.parse({ name: 'n', suites: ['s'], adapters: ['mock'], seeds: ['1', '2'] }), 'x')
    expect(cells.map((c) => [c.model, c.seed, c.adapter_config])).toEqual([
      ['', '1', {}],
      ['', '2', {}],
    ])
  })

  it('takes a sweep id from a workflow id, including a Schedule-started one', () => {
    expect(sweepIdFrom('forge-sweep-nightly-20261201-abc')).toBe('nightly-20261201-abc')
    expect(sweepIdFrom('forge-sweep-nightly-2026-12-01T02:00:00Z')).toBe('nightly-2026-12-01T020000Z')
    expect(sweepIdFrom('forge-sweep-')).toBe('sweep')
  })

  it('fills baseline templates and keeps only characters a baseline name holds', () => {
    const values = { name: 'nightly', suite: 'toy_math', adapter: 'react', model: 'org/m2:latest', seed: '1' }
    expect(baselineNameOf('{name}.{suite}.{adapter}.{model}', values)).toBe('nightly.toy_math.react.org-m2-latest')
    expect(baselineNameOf('{suite}-{model}', { ...values, model: '' })).toBe('toy_math-default')
    expect(baselineNameOf('__{seed}', values)).toBe('1')
  })
})

describe('baseline promotion', () => {
  it('promotes one cell per baseline: the first seed, or every cell when the template names {seed}', () => {
    const spec = SweepSpec.parse({ name: 'n', suites: ['s'], adapters: ['mock'], seeds: ['a', 'b'], promote_baseline: 'if_no_regression' })
    expect(sweepCells(spec, 'x').map((c) => promotesBaseline(spec, c))).toEqual([true, false])
    const perSeed = { ...spec, baseline: '{suite}.{seed}' }
    expect(sweepCells(perSeed, 'x').map((c) => promotesBaseline(perSeed, c))).toEqual([true, true])
    const never = { ...spec, promote_baseline: 'never' as const }
    expect(sweepCells(never, 'x').map((c) => promotesBaseline(never, c))).toEqual([false, false])
  })
})

describe('verdicts', () => {
  it('decides a cell: failed run, no baseline, regression, pass', () => {
    expect(cellVerdictOf({ runFailed: true, baselineFound: true, regression: true })).toBe('failed')
    expect(cellVerdictOf({ runFailed: false, baselineFound: false, regression: true })).toBe('no_baseline')
    expect(cellVerdictOf({ runFailed: false, baselineFound: true, regression: true })).toBe('regressed')
    expect(cellVerdictOf({ runFailed: false, baselineFound: true, regression: false })).toBe('pass')
  })

  it('decides the sweep: any regression wins, then failures, then passes', () => {
    const of = (...verdicts: string[]) => sweepVerdictOf(verdicts.map((verdict) => ({ verdict: verdict as 'pass' })))
    expect(of('pass', 'failed', 'regressed')).toBe('regressed')
    expect(of('pass', 'failed', 'no_baseline')).toBe('failed')
    expect(of('pass', 'no_baseline')).toBe('pass')
    expect(of('no_baseline')).toBe('no_baseline')
    expect(of('pass', 'pending')).toBe('pending')
    expect(of()).toBe('no_baseline')
  })
})
