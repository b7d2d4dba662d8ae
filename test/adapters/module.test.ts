/** The module adapter: a fresh agent per attempt, exports and factories, errors that name the module. */
import { describe, expect, it } from 'vitest'
import { moduleAdapter } from '../../engine/adapters/module.js'
import { loadSuite } from '../../engine/suite-loader.js'
import { agentPath, attempt, toolSuite } from './helpers.js'

const smoke = await loadSuite('smoke')

describe('module adapter', () => {
  it('evaluates the module afresh for every attempt: a module-level counter never passes 1', async () => {
    const { suite, task } = toolSuite()
    const config = { path: agentPath('counter-module.mjs') }
    const before = (globalThis as { __forgeCounterModuleEvaluations?: number }).__forgeCounterModuleEvaluations ?? 0
    const results = []
    for (let i = 0; i < 5; i += 1) results.push((await attempt(moduleAdapter, config, suite, task, i)).result)
    expect(results.map((r) => [r.outcome, r.output, r.self_report])).toEqual(Array.from({ length: 5 }, () => ['pass', 'ABC', '1']))
    expect((globalThis as { __forgeCounterModuleEvaluations?: number }).__forgeCounterModuleEvaluations).toBe(before + 5)
    // concurrent attempts too
    const concurrent = await Promise.all([5, 6, 7, 8].map((i) => attempt(moduleAdapter, config, suite, task, i)))
    expect(concurrent.map(({ result }) => result.self_report)).toEqual(['1', '1', '1', '1'])
  })

  it('with isolation "factory" imports once and makes a fresh instance per attempt', async () => {
    const { suite, task } = toolSuite({ outcome_graders: [{ type: 'exact', expected: 'abc' }] })
    const config = { path: agentPath('counter-factory.mjs'), export: 'CounterAgent', isolation: 'factory' }
    const reports = []
    for (let i = 0; i < 3; i += 1) reports.push(JSON.parse((await attempt(moduleAdapter, config, suite, task, i)).result.self_report) as unknown)
    // the instance is fresh each time; top-level state is shared, as documented
    expect(reports).toEqual([
      { module: 1, instance: 1 },
      { module: 2, instance: 1 },
      { module: 3, instance: 1 },
    ])
  })

  it('solves the smoke suite with the example module agent', async () => {
    const results = await Promise.all(smoke.tasks.map((task) => attempt(moduleAdapter, { path: 'examples/agents/module-agent.mjs' }, smoke, task)))
    expect(results.map(({ result }) => [result.task_id, result.outcome])).toEqual(smoke.tasks.map((t) => [t.id, 'pass']))
  })

  it.each([
    [{ path: agentPath('counter-factory.mjs'), export: 'notAnAgent' }, /^adapter "module" threw: module adapter: export "notAnAgent" of file:.*counter-factory\.mjs is number, not an agent/],
    [{ path: agentPath('counter-factory.mjs'), export: 'missing' }, /^adapter "module" threw: module adapter: file:.*counter-factory\.mjs has no export "missing" \(it exports: CounterAgent, notAnAgent\)$/],
    [{ path: agentPath('no-such-file.mjs') }, /^adapter "module" threw: module adapter: cannot import file:.*no-such-file\.mjs: /],
    [{}, /^adapter "module" threw: invalid module adapter config: path: required field missing \(expected string\)$/],
    [{ path: agentPath('no-such-file.mjs'), isolate: 'factory' }, /^adapter "module" threw: invalid module adapter config: isolate: unknown field \(known: .*isolation.*\)$/],
  ])('reports a bad module or config as a harness error naming it (%#)', async (config, message) => {
    const { suite, task } = toolSuite()
    const { result } = await attempt(moduleAdapter, config, suite, task)
    expect([result.outcome, result.validity, result.failure_bucket]).toEqual(['fail', 'invalid', 'harness_error'])
    expect(result.error).toMatch(message)
  })
})
