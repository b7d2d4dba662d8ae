import { describe, expect, it } from 'vitest'
import type { InvocationPayload } from '../../core/contracts/index.js'
import type { AdapterContext, AgentAdapter, LoadedSuite } from '../../core/plugins.js'
import { getAdapter } from '../../engine/adapters/index.js'
import { executeAttempt } from '../../engine/attempt-runner.js'
import { loadSuite } from '../../engine/suite-loader.js'

const smoke = await loadSuite('smoke')
const toyMath = await loadSuite('toy_math')

function attempt(suite: LoadedSuite, taskId: string, adapter: AgentAdapter, adapterConfig: Record<string, unknown>, n = 0) {
  const task = suite.tasks.find((t) => t.id === taskId)
  if (task === undefined) throw new Error(`no task ${taskId}`)
  return executeAttempt({ suite, task, adapter, runId: 'run1', configId: 'c0', attempt: n, runSeed: 'seed', adapterConfig, workerId: 'w1' })
}

describe('built-in suites', () => {
  it('smoke loads clean with five tasks, a fixture and goldens', () => {
    expect(smoke.name).toBe('smoke')
    expect(smoke.tasks.map((t) => t.id)).toEqual(['capital_lookup', 'count_words', 'echo_greeting', 'reverse_shout', 'sum_two_numbers'])
    expect(new Set(smoke.tasks.flatMap((t) => t.outcome_graders.map((g) => g.type)))).toEqual(
      new Set(['exact', 'contains', 'numeric', 'regex', 'tool_sequence']),
    )
    expect(smoke.tasks.every((t) => t.invariants.length > 0)).toBe(true)
    expect([...smoke.goldens.keys()].sort()).toEqual(['capital_lookup', 'count_words', 'echo_greeting', 'reverse_shout', 'sum_two_numbers'])
    expect(Object.keys(smoke.fixtures.get('capital_lookup') ?? {})).toEqual(['kv.json'])
  })

  it('toy_math loads clean with three tasks over one calculator', () => {
    expect(toyMath.tasks.map((t) => t.id)).toEqual(['decimal_division', 'paren_product', 'precedence'])
    expect([...toyMath.tools.keys()]).toEqual(['calculator'])
    expect([...toyMath.invariants.keys()]).toEqual(['calculator_args_are_arithmetic'])
  })

  it('the calculator evaluates arithmetic without eval and rejects anything else', async () => {
    const calculator = toyMath.tools.get('calculator')
    const ctx = { attemptUid: 'u', taskId: 't', fixtures: {} }
    const run = (expression: unknown) => calculator?.run({ expression }, ctx)
    expect(run('(3 + 4) * 6')).toBe(42)
    expect(run('2 + 3 * 4 - 1')).toBe(13)
    expect(run('-(2.5 * 4) + .5')).toBe(-9.5)
    expect(run('8 / 2 / 2')).toBe(2)
    expect(() => run('1 / 0')).toThrow('division by zero')
    expect(() => run('process.exit(1)')).toThrow('unexpected "p" at position 0')
    expect(() => run('(1 + 2')).toThrow('expected )')
    expect(() => run('')).toThrow('empty expression')
    expect(() => run(5)).toThrow('expression must be a string')
  })

  for (const [suite, label] of [
    [smoke, 'smoke'],
    [toyMath, 'toy_math'],
  ] as const) {
    for (const task of suite.tasks) {
      it(`${label}/${task.id} passes under a perfect mock`, async () => {
        const result = await attempt(suite, task.id, getAdapter('mock'), { skill: 1 })
        expect({ outcome: result.outcome, validity: result.validity, bucket: result.failure_bucket, error: result.error }).toEqual({
          outcome: 'pass',
          validity: 'valid',
          bucket: null,
          error: '',
        })
        expect(result.grades.every((g) => g.passed)).toBe(true)
        expect(result.invariants.map((i) => i.name)).toEqual(task.invariants)
        expect(result.invariants.every((i) => i.passed)).toBe(true)
      })
    }
  }

  for (const [taskId, golden] of smoke.goldens) {
    it(`the golden trace of smoke/${taskId} replays to pass`, async () => {
      const result = await attempt(smoke, taskId, getAdapter('replay'), { trace: golden })
      expect({ outcome: result.outcome, validity: result.validity, output: result.output }).toEqual({
        outcome: 'pass',
        validity: 'valid',
        output: String(golden.output),
      })
      expect(result.tool_calls.map((c) => [c.name, c.args, c.result])).toEqual(golden.tool_calls.map((c) => [c.name, c.args, c.result]))
    })
  }
})

describe('the invocation payload', () => {
  for (const [suite, label] of [
    [smoke, 'smoke'],
    [toyMath, 'toy_math'],
  ] as const) {
    it(`carries nothing of the ground truth in ${label}`, async () => {
      const received: { taskId: string; payload: InvocationPayload; ctxKeys: string[] }[] = []
      const spy: AgentAdapter = {
        name: 'spy',
        async invoke(payload, ctx: AdapterContext) {
          received.push({ taskId: ctx.taskId, payload: structuredClone(payload), ctxKeys: Object.keys(ctx).sort() })
          return { output: 'nothing' }
        },
      }
      for (const task of suite.tasks) await attempt(suite, task.id, spy, {})
      expect(received).toHaveLength(suite.tasks.length)

      for (const { taskId, payload, ctxKeys } of received) {
        const task = suite.tasks.find((t) => t.id === taskId)
        if (task === undefined) throw new Error(taskId)
        expect(Object.keys(payload).sort()).toEqual(['budget', 'disallowed_tools', 'input', 'instruction', 'tools'])
        expect(ctxKeys).toEqual(['attemptUid', 'budget', 'config', 'llm', 'seed', 'signal', 'taskId', 'tools'])
        expect(payload.tools.map((t) => t.name)).toEqual(task.tools)
        expect(payload.tools.every((t) => Object.keys(t).sort().join() === 'description,input_schema,name')).toBe(true)

        const text = JSON.stringify(payload)
        const secrets = [
          ...suite.tasks.flatMap((t) => t.outcome_graders.flatMap((g) => ('expected' in g ? [g['expected']].flat() : []))).map(String),
          ...[...suite.goldens.values()].map((g) => String(g.output)),
          ...suite.tasks.filter((t) => t.id !== taskId).map((t) => t.id),
        ]
        expect(secrets.length).toBeGreaterThan(suite.tasks.length)
        for (const secret of secrets) expect(text, `payload of ${taskId} leaks ${secret}`).not.toContain(secret)
        expect(text).not.toMatch(/outcome_graders|golden|expected|invariants|fixtures/)
      }
    })
  }
})
