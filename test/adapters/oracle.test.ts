/** The oracle adapter: golden traces replayed through the real tool proxy; goldens reach no one else. */
import { describe, expect, it } from 'vitest'
import { AgentTrace } from '../../core/contracts/index.js'
import type { AdapterContext, AgentAdapter } from '../../core/plugins.js'
import { getAdapter } from '../../engine/adapters/index.js'
import { oracleAdapter } from '../../engine/adapters/oracle.js'
import { loadSuite } from '../../engine/suite-loader.js'
import { fakeSuite, fakeTask, fakeTool } from '../unit/fake-suite.js'
import { attempt } from './helpers.js'

const smoke = await loadSuite('smoke')
const goldenTasks = smoke.tasks.filter((t) => t.golden !== undefined)

describe('oracle adapter', () => {
  it('passes every smoke task that has a golden, re-issuing its tool calls through the proxy', async () => {
    expect(goldenTasks.map((t) => t.id)).toEqual(expect.arrayContaining(['echo_greeting', 'reverse_shout']))
    for (const task of goldenTasks) {
      const { result } = await attempt(oracleAdapter, {}, smoke, task)
      const golden = smoke.goldens.get(task.id)!
      expect([result.outcome, result.validity, result.error]).toEqual(['pass', 'valid', ''])
      expect(result.tool_calls.map(({ name, args, result: r }) => ({ name, args, result: r }))).toEqual(
        golden.tool_calls.map(({ name, args, result: r }) => ({ name, args, result: r })),
      )
      expect(result.self_report).toBe(golden.self_report)
      // the oracle's trace carries no model usage: the golden's recorded tokens are not this run's
      expect([result.input_tokens, result.output_tokens]).toEqual([0, 0])
    }
  })

  it('is a harness error for a task without a golden, naming the task', async () => {
    const task = fakeTask()
    const { result } = await attempt(oracleAdapter, {}, fakeSuite({ tasks: [task] }), task)
    expect([result.outcome, result.validity, result.failure_bucket]).toEqual(['fail', 'invalid', 'harness_error'])
    expect(result.error).toBe('adapter "oracle" threw: oracle adapter: task "task_one" has no golden trace (name one with `golden:` in the task file)')
  })

  it('notes where a tool now answers differently from the golden (a stale golden)', async () => {
    const task = fakeTask({ golden: 'task_one' })
    const golden = AgentTrace.parse({
      output: 'ABC',
      tool_calls: [{ index: 0, name: 'upper', args: { value: 'abc' }, result: 'abc!', retry_index: 0, started_ms: 0, duration_ms: 1 }],
      duration_ms: 1,
    })
    const suite = fakeSuite({ tasks: [task], tools: [fakeTool('upper', (args) => String(args['value']).toUpperCase())], goldens: { task_one: golden } })
    const { result } = await attempt(oracleAdapter, {}, suite, task)
    expect([result.outcome, result.error]).toEqual(['pass', 'golden_divergence: call #0 upper: the golden recorded "abc!", the replay returned "ABC"'])
  })

  it('hands the golden to the oracle only: no other adapter finds it in its context', async () => {
    const seen: Record<string, { keys: string[]; golden: unknown }> = {}
    const spy = (name: string): AgentAdapter => ({
      name,
      invoke(_payload, ctx: AdapterContext) {
        seen[name] = { keys: Object.keys(ctx).sort(), golden: ctx.golden }
        return Promise.resolve({ output: ctx.golden?.output ?? null })
      },
    })
    const task = goldenTasks[0]!
    for (const name of ['spy', 'mock', 'replay', 'subprocess', 'module', 'http', 'react', 'Oracle', 'oracle ']) await attempt(spy(name), {}, smoke, task)
    await attempt(spy('oracle'), {}, smoke, task)
    for (const [name, view] of Object.entries(seen)) {
      if (name === 'oracle') {
        expect(view.golden).toEqual(smoke.goldens.get(task.id))
      } else {
        expect({ name, ...view }).toEqual({ name, keys: ['attemptUid', 'budget', 'config', 'llm', 'seed', 'signal', 'taskId', 'tools'], golden: undefined })
      }
    }
    expect(getAdapter('oracle')).toBe(oracleAdapter)
  })

  it('gives the oracle a copy: a mutating replay cannot change the suite\'s golden', async () => {
    const task = goldenTasks[0]!
    const before = structuredClone(smoke.goldens.get(task.id))
    const vandal: AgentAdapter = {
      name: 'oracle',
      invoke(_payload, ctx) {
        if (ctx.golden) ctx.golden.output = 'vandalised'
        return Promise.resolve({ output: null })
      },
    }
    await attempt(vandal, {}, smoke, task)
    expect(smoke.goldens.get(task.id)).toEqual(before)
  })
})
