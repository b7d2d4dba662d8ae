import { describe, expect, it } from 'vitest'
import { FaultProfile, type FaultProfileInput } from '../../core/contracts/index.js'
import {
  burstStartProbability,
  canonicalJson,
  createFaultSchedule,
  decideFault,
  FAULT_KINDS,
  garbageCompletion,
  garbageToolResult,
  GARBAGE_FLAVOURS,
  globMatches,
  modelFaultResponse,
  profileAtRate,
  profileFromShorthand,
  profileIdentity,
  profileMode,
  toolFaultError,
  type FaultCallKey,
} from '../../core/faults.js'

const profile = (input: FaultProfileInput): FaultProfile => FaultProfile.parse(input)
const key = (over: Partial<FaultCallKey> = {}): FaultCallKey => ({
  runSeed: 's1',
  attemptKey: 'mock-1/task/0',
  taskId: 'task',
  target: 'tools',
  tool: 'lookup',
  index: 0,
  ...over,
})
const issues = (input: unknown): string[] => {
  const parsed = FaultProfile.safeParse(input)
  return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`)
}

describe('fault profile contract', () => {
  it('fills defaults and reads YAML numbers as kinds', () => {
    expect(profile({ rules: [{ rate: 0.2, kinds: [500 as unknown as '500', 'timeout'] }] })).toEqual({
      name: 'faults',
      description: '',
      timeout_ms: 2000,
      slow_ms: 500,
      retry_after_ms: 1000,
      rules: [{ target: 'tools', mode: 'uniform', rate: 0.2, kinds: ['500', 'timeout'] }],
    })
  })

  it('names the field and value of every problem', () => {
    expect(issues({ rules: [] })).toEqual(['rules: a fault profile needs at least one rule'])
    expect(issues({ rules: [{ rate: 1.5 }] })).toEqual(['rules.0.rate: Too big: expected number to be <=1'])
    expect(issues({ rules: [{ rate: 0.1, kinds: ['explode'] }] })[0]).toMatch(/^rules\.0\.kinds/)
    expect(issues({ rules: [{ rate: 0.1, kinds: { explode: 1 } }] })).toEqual([
      'rules.0.kinds.explode: unknown fault kind "explode" (kinds: timeout, 500, garbage, rate_limit, slow)',
    ])
    expect(issues({ rules: [{ rate: 0.1, window: 3 }] })).toEqual(['rules.0.window: window applies only to mode: burst'])
    expect(issues({ rules: [{ rate: 0.1, target: 'model', tools: ['x'] }] })).toEqual([
      'rules.0.tools: tools scopes target: tools only (a model rule hits every completion)',
    ])
    expect(issues({ rules: [{ rate: 0.1, probability: 0.2 }] })[0]).toMatch(/^rules\.0: Unrecognized key: "probability"/)
    expect(issues({ rules: [{ rate: 0.1 }], sweep: [0, 2] })).toEqual(['sweep.1: Too big: expected number to be <=1'])
  })
})

describe('decideFault', () => {
  it('is a pure function of seed, attempt key, tool and call index', () => {
    const p = profile({ rules: [{ rate: 0.5 }] })
    const decisions = (runSeed: string) => Array.from({ length: 200 }, (_, index) => decideFault(p, key({ runSeed, index }))?.kind ?? '-')
    expect(decisions('s1')).toEqual(decisions('s1'))
    expect(decisions('s1')).not.toEqual(decisions('s2'))
    const tools = (tool: string) => Array.from({ length: 200 }, (_, index) => decideFault(p, key({ tool, index }))?.kind ?? '-')
    expect(tools('lookup')).not.toEqual(tools('search'))
  })

  it('fails about `rate` of the calls in uniform mode, with every listed kind', () => {
    const p = profile({ rules: [{ rate: 0.2, kinds: ['500', 'timeout'] }] })
    const hits = Array.from({ length: 20_000 }, (_, i) => decideFault(p, key({ attemptKey: `c/t/${i % 100}`, index: Math.floor(i / 100) })))
    const failed = hits.filter((h) => h !== undefined)
    expect(failed.length / hits.length).toBeGreaterThan(0.19)
    expect(failed.length / hits.length).toBeLessThan(0.21)
    expect(new Set(failed.map((h) => h.kind))).toEqual(new Set(['500', 'timeout']))
  })

  it('nests the calls that fail: every call failing at 0.1 also fails at 0.2 (a monotone curve)', () => {
    const base = profile({ rules: [{ rate: 0.1 }] })
    const at = (rate: number) => Array.from({ length: 2000 }, (_, index) => decideFault(profileAtRate(base, rate), key({ index })) !== undefined)
    const low = at(0.1)
    const high = at(0.2)
    expect(low.every((failed, i) => !failed || high[i])).toBe(true)
    expect(high.filter(Boolean).length).toBeGreaterThan(low.filter(Boolean).length)
    expect(at(0).some(Boolean)).toBe(false)
    expect(at(1).every(Boolean)).toBe(true)
  })

  it('fails contiguous windows of at least `window` calls in burst mode, one kind per window', () => {
    const p = profile({ rules: [{ rate: 0.2, mode: 'burst', window: 4 }] })
    const calls = 5000
    const decisions = Array.from({ length: calls }, (_, index) => decideFault(p, key({ index })))
    const runs: { start: number; length: number }[] = []
    decisions.forEach((d, i) => {
      if (d === undefined) return
      const last = runs[runs.length - 1]
      if (last !== undefined && last.start + last.length === i) last.length += 1
      else runs.push({ start: i, length: 1 })
    })
    expect(runs.length).toBeGreaterThan(50)
    // every outage lasts at least a window (the last may be cut by the end of the calls)
    for (const run of runs.slice(0, -1)) expect(run.length).toBeGreaterThanOrEqual(4)
    // each window keeps the kind drawn at the call that opened it
    for (const [i, d] of decisions.entries()) {
      if (d === undefined) continue
      expect(d.window_start).toBeLessThanOrEqual(i)
      expect(i - d.window_start!).toBeLessThan(4)
      // the opening call is in its own window and has the same kind
      expect(decisions[d.window_start!]).toMatchObject({ window_start: d.window_start, kind: d.kind })
    }
    const fraction = decisions.filter((d) => d !== undefined).length / calls
    expect(fraction).toBeGreaterThan(0.17)
    expect(fraction).toBeLessThan(0.23)
  })

  it('solves the window start probability so that `rate` is the long-run fraction', () => {
    expect(burstStartProbability(0, 5)).toBe(0)
    expect(burstStartProbability(1, 5)).toBe(1)
    expect(1 - Math.pow(1 - burstStartProbability(0.3, 4), 4)).toBeCloseTo(0.3, 12)
  })

  it('scopes rules by target, tool and task, and the first rule that hits decides', () => {
    const p = profile({
      rules: [
        { name: 'lookup outage', rate: 1, kinds: ['500'], tools: ['lookup'], tasks: ['refund_*'] },
        { rate: 1, kinds: ['slow'] },
        { rate: 1, kinds: ['rate_limit'], target: 'model' },
      ],
    })
    expect(decideFault(p, key({ taskId: 'refund_late' }))).toMatchObject({ kind: '500', rule: 0, rule_name: 'lookup outage' })
    expect(decideFault(p, key({ taskId: 'order_status' }))).toMatchObject({ kind: 'slow', rule: 1, rule_name: 'rule 2' })
    expect(decideFault(p, key({ taskId: 'refund_late', tool: 'search' }))).toMatchObject({ kind: 'slow', rule: 1 })
    expect(decideFault(p, key({ target: 'model', tool: 'model' }))).toMatchObject({ kind: 'rate_limit', rule: 2 })
    expect(globMatches('refund_*', 'refund_')).toBe(true)
    expect(globMatches('a.b', 'axb')).toBe(false)
  })

  it('draws kinds by weight', () => {
    const p = profile({ rules: [{ rate: 1, kinds: { timeout: 3, slow: 1 } }] })
    const kinds = Array.from({ length: 4000 }, (_, index) => decideFault(p, key({ index }))!.kind)
    const timeouts = kinds.filter((k) => k === 'timeout').length / kinds.length
    expect(new Set(kinds)).toEqual(new Set(['timeout', 'slow']))
    expect(timeouts).toBeGreaterThan(0.72)
    expect(timeouts).toBeLessThan(0.78)
  })
})

describe('createFaultSchedule', () => {
  it("numbers each tool's calls apart and counts what it injected", () => {
    const p = profile({ rules: [{ rate: 0.5, kinds: ['500'] }] })
    const base = { runSeed: 's1', attemptKey: 'mock-1/task/0', taskId: 'task' }
    const schedule = createFaultSchedule(p, base)
    const got = ['a', 'b', 'a', 'a', 'b'].map((tool) => schedule.next('tools', tool)?.kind ?? '-')
    const expected = [
      decideFault(p, { ...base, target: 'tools', tool: 'a', index: 0 }),
      decideFault(p, { ...base, target: 'tools', tool: 'b', index: 0 }),
      decideFault(p, { ...base, target: 'tools', tool: 'a', index: 1 }),
      decideFault(p, { ...base, target: 'tools', tool: 'a', index: 2 }),
      decideFault(p, { ...base, target: 'tools', tool: 'b', index: 1 }),
    ].map((d) => d?.kind ?? '-')
    expect(got).toEqual(expected)
    const failed = got.filter((k) => k === '500').length
    expect(schedule.injected).toEqual(failed === 0 ? {} : { 500: failed })
  })
})

describe('profile helpers', () => {
  it('labels modes, scales to a sweep rate and hashes what changes the faults', () => {
    const p = profile({ name: 'a', rules: [{ rate: 0.1 }, { rate: 0.3, mode: 'burst', window: 2 }], sweep: [0, 0.2] })
    expect(profileMode(p)).toBe('mixed')
    expect(profileMode(profile({ rules: [{ rate: 0.1, mode: 'burst' }] }))).toBe('burst')
    const scaled = profileAtRate(p, 0.2)
    expect(scaled.rules.map((r) => r.rate)).toEqual([0.2, 0.2])
    expect(scaled.sweep).toBeUndefined()
    expect(profileIdentity({ ...p, name: 'b', description: 'other' })).toBe(profileIdentity(p))
    expect(profileIdentity(scaled)).not.toBe(profileIdentity(p))
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: undefined }] })).toBe('{"a":[{"d":2}],"b":1}')
    expect(() => profileAtRate(p, 1.5)).toThrow(/between 0 and 1/)
  })

  it('builds the one-off profile of the command-line shorthand', () => {
    expect(FaultProfile.parse(profileFromShorthand({ rate: 0.3, kinds: ['timeout'], mode: 'burst', targets: ['tools', 'model'] })).rules).toEqual([
      { target: 'tools', mode: 'burst', rate: 0.3, window: 5, kinds: ['timeout'] },
      { target: 'model', mode: 'burst', rate: 0.3, window: 5, kinds: ['timeout'] },
    ])
  })
})

describe('what a faulted call looks like', () => {
  it('gives errors that read like real service failures, never naming the harness', () => {
    const p = { timeout_ms: 1500, retry_after_ms: 2500 }
    expect(toolFaultError('timeout', 'lookup', p)).toBe('timeout: tool "lookup" did not answer within 1500 ms')
    expect(toolFaultError('500', 'lookup', p)).toBe('500 Internal Server Error: the service behind tool "lookup" failed to handle the request')
    expect(toolFaultError('rate_limit', 'lookup', p)).toBe('429 Too Many Requests: tool "lookup" is rate limited; retry after 3 s (2500 ms)')
    for (const kind of FAULT_KINDS) expect(toolFaultError(kind, 'lookup', p)).not.toMatch(/inject|forge|fault/i)
  })

  it('turns a result into each flavour of garbage', () => {
    const result = { order: 'A-17', total: 42.5, paid: true, items: ['x'] }
    const byFlavour = new Map(Array.from({ length: 8 }, (_, i) => garbageToolResult(result, (i + 0.5) / 8)).map((g) => [g.flavour, g.value]))
    expect([...byFlavour.keys()].sort()).toEqual([...GARBAGE_FLAVOURS].sort())
    const truncated = byFlavour.get('truncated_json') as string
    expect(() => JSON.parse(truncated) as unknown).toThrow()
    expect('{"result":{"order":"A-17","total":42.5,"paid":true,"items":["x"]}}'.startsWith(truncated)).toBe(true)
    expect(byFlavour.get('wrong_types')).toEqual({ order: 4, total: '5.24?', paid: 'yes', items: { 0: 1 } })
    expect(byFlavour.get('html_error_page')).toMatch(/^<!DOCTYPE html>[\s\S]*502 Bad Gateway/)
    expect(byFlavour.get('binary_noise')).toHaveLength(48)
    expect(garbageToolResult(result, 0.1)).toEqual(garbageToolResult(result, 0.1))
  })

  it('answers model faults as an OpenAI-compatible server would', () => {
    const p = { timeout_ms: 1000, retry_after_ms: 1500 }
    expect(modelFaultResponse('500', p)?.status).toBe(500)
    expect(modelFaultResponse('rate_limit', p)).toMatchObject({ status: 429, headers: { 'retry-after': '2', 'retry-after-ms': '1500' } })
    expect(JSON.parse(modelFaultResponse('timeout', p)!.body)).toMatchObject({ error: { type: 'timeout' } })
    expect(modelFaultResponse('slow', p)).toBeUndefined()
    const completions = Array.from({ length: 8 }, (_, i) => garbageCompletion((i + 0.5) / 8, { model: 'm', stream: false }))
    expect(new Set(completions.map((c) => c.flavour)).size).toBe(4)
    for (const c of completions) {
      expect(c.status).toBe(200)
      // none of them is a usable chat completion
      let usable = false
      try {
        const parsed = JSON.parse(c.body) as { choices?: unknown }
        usable = Array.isArray(parsed.choices)
      } catch {
        usable = false
      }
      expect(usable).toBe(false)
    }
    expect(garbageCompletion(0.1, { model: 'm', stream: true }).body).toMatch(/^data: /)
  })
})
