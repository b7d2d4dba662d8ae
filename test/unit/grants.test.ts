import { describe, expect, it } from 'vitest'
import { FaultProfile, RunPlan } from '../../core/contracts/index.js'
import { SweepSpec } from '../../core/contracts/sweep.js'
import { attemptScopeOf, attemptScopeOfPlan, judgeScopeOf, planScopeOf, type AttemptScope } from '../../core/run-scope.js'
import { grantHolds, grantOf, grantPlan, grantSweep } from '../../store/grants.js'
import { attemptInputOf } from '../../workflows/tally.js'
import { batchInputOf } from '../../workflows/attempt-batches.js'

const KEY = 'ab'.repeat(32)
const OTHER = 'cd'.repeat(32)
/** what Temporal does to a workflow's input: JSON there and back */
const roundTrip = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T

const plan = RunPlan.parse({
  run_id: 'r1',
  config_id: 'mock-1',
  suite_path: '/suites/smoke',
  suite: 'smoke',
  task_ids: ['a', 'b'],
  attempts: 3,
  adapter: 'subprocess',
  adapter_config: { command: ['python3', 'agent.py'], env: { B: '2', A: '1' } },
  seed: 's',
  price_table: '/prices/p.yaml',
  judge: { model: 'local' },
  redact: false,
  guard_answers: true,
  faults: { profile: FaultProfile.parse({ rules: [{ target: 'tools', rate: 0.2, kinds: ['timeout'] }] }), profile_hash: 'h', mode: 'uniform', rate: 0.2 },
})

describe('grants', () => {
  it('are HMACs of canonical JSON under a key of their own kind: key order does not matter, the key and the kind do', () => {
    expect(grantOf(KEY, 'sweep', { a: 1, b: [1, { d: 2, c: 3 }] })).toBe(grantOf(KEY, 'sweep', { b: [1, { c: 3, d: 2 }], a: 1 }))
    expect(grantOf(KEY, 'sweep', { a: 1 })).toMatch(/^[0-9a-f]{64}$/)
    expect(grantOf(KEY, 'sweep', { a: 1 })).not.toBe(grantOf(OTHER, 'sweep', { a: 1 }))
    expect(grantOf(KEY, 'sweep', { a: 1 })).not.toBe(grantOf(KEY, 'plan', { a: 1 }))
    expect(grantOf(KEY, 'sweep', { a: 1 })).not.toBe(grantOf(KEY, 'sweep', { a: 2 }))
  })

  it('hold only for the value they were made for; without a key nothing is checked', () => {
    const grant = grantOf(KEY, 'attempts', { suite_path: '/s' })
    expect(grantHolds(KEY, 'attempts', { suite_path: '/s' }, grant)).toBe(true)
    expect(grantHolds(KEY, 'attempts', { suite_path: '/evil' }, grant)).toBe(false)
    expect(grantHolds(OTHER, 'attempts', { suite_path: '/s' }, grant)).toBe(false)
    for (const bad of [undefined, '', 'zz', grant.toUpperCase(), `${grant}0`]) expect(grantHolds(KEY, 'attempts', { suite_path: '/s' }, bad), String(bad)).toBe(false)
    expect(grantHolds(undefined, 'attempts', { suite_path: '/evil' }, undefined)).toBe(true)
  })

  it('a granted plan carries grants every activity can check from what it is given, after Temporal\'s JSON', () => {
    const granted = roundTrip(grantPlan(plan, KEY))
    expect(grantHolds(KEY, 'plan', planScopeOf(granted), granted.grants?.plan)).toBe(true)
    for (const input of [attemptInputOf(granted, 'a', 0), attemptInputOf(granted, 'b', 2), { ...attemptInputOf(granted, 'a', 1), republish: 2 }]) {
      const given = roundTrip(input)
      expect(grantHolds(KEY, 'attempts', attemptScopeOf(given), given.grant)).toBe(true)
    }
    const batch = roundTrip(batchInputOf([attemptInputOf(granted, 'a', 0), attemptInputOf(granted, 'b', 0)]))
    expect(grantHolds(KEY, 'attempts', attemptScopeOf(batch.base), batch.base.grant)).toBe(true)
    expect(grantHolds(KEY, 'judge', judgeScopeOf({ ...granted, judge: granted.judge! }), granted.grants?.judge)).toBe(true)
    // the scope a plan grants is exactly what attemptInputOf puts in every input
    expect(attemptScopeOf(attemptInputOf(plan, 'a', 0))).toEqual(attemptScopeOfPlan(plan))
  })

  it('cover everything a worker acts on: any field changed, the grant fails', () => {
    const granted = grantPlan(plan, KEY)
    const input = attemptInputOf(granted, 'a', 0)
    const changes: Partial<AttemptScope>[] = [
      { suite_path: '/tmp/evil' },
      { adapter: 'module' },
      { adapter_config: { command: ['sh', '-c', 'id'] } },
      { price_table: '/tmp/p.yaml' },
      { run_id: 'r2' },
      { no_redact: undefined },
      { guard_answers: undefined },
      { judge: undefined },
      { faults: undefined },
    ]
    for (const change of changes) expect(grantHolds(KEY, 'attempts', attemptScopeOf({ ...input, ...change }), input.grant), JSON.stringify(change)).toBe(false)
    expect(grantHolds(KEY, 'plan', planScopeOf({ ...granted, attempts: 1000 }), granted.grants!.plan)).toBe(false)
    expect(grantHolds(KEY, 'plan', planScopeOf({ ...granted, task_ids: ['a'] }), granted.grants!.plan)).toBe(false)
    expect(grantHolds(KEY, 'judge', judgeScopeOf({ ...granted, suite_path: '/tmp/evil', judge: granted.judge! }), granted.grants!.judge)).toBe(false)
  })

  it('a process without the results key grants nothing; a plan without a judge gets no judge grant', () => {
    expect(grantPlan(plan, undefined)).toBe(plan)
    expect(grantSweep(SweepSpec.parse({ name: 'n', suites: ['smoke'], adapters: ['mock'] }), undefined)).toBeUndefined()
    const { judge: _judge, ...noJudge } = plan
    expect(grantPlan(RunPlan.parse(noJudge), KEY).grants).toEqual({ plan: expect.stringMatching(/^[0-9a-f]{64}$/) as unknown, attempts: expect.stringMatching(/^[0-9a-f]{64}$/) as unknown })
  })
})
