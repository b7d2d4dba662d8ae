/**
 * The module adapter: sandboxed (a child process per attempt) by default, in-process as an opt-in
 * that marks the attempt degraded — and the process tainted, so every later attempt in it is
 * degraded too; a fresh agent per attempt, exports and factories, errors that name the module.
 */
import { describe, expect, it } from 'vitest'
import { moduleAdapter } from '../../engine/adapters/module.js'
import { processTaint } from '../../engine/process-taint.js'
import { loadSuite } from '../../engine/suite-loader.js'
import { agentPath, attempt, toolSuite } from './helpers.js'

const smoke = await loadSuite('smoke')

describe('module adapter', () => {
  it('runs the agent in a sandboxed child process by default: a module-level counter never passes 1, the worker never evaluates it', async () => {
    const { suite, task } = toolSuite()
    const before = (globalThis as { __forgeCounterModuleEvaluations?: number }).__forgeCounterModuleEvaluations ?? 0
    const results = await Promise.all([0, 1, 2].map((i) => attempt(moduleAdapter, { path: agentPath('counter-module.mjs') }, suite, task, i)))
    expect(results.map(({ result }) => [result.outcome, result.validity, result.output, result.self_report])).toEqual(Array.from({ length: 3 }, () => ['pass', 'valid', 'ABC', '1']))
    expect(results[0]!.trace.spans.find((s) => s.name === 'sandbox')?.attributes).toMatchObject({ user_namespace: false })
    expect((globalThis as { __forgeCounterModuleEvaluations?: number }).__forgeCounterModuleEvaluations ?? 0).toBe(before)
    // no agent code ran in this process (the in-process tests below come after every sandboxed one)
    expect(processTaint()).toBeUndefined()
  })

  it('solves the smoke suite with the example module agent', async () => {
    const results = await Promise.all(smoke.tasks.map((task) => attempt(moduleAdapter, { path: 'examples/agents/module-agent.mjs' }, smoke, task)))
    expect(results.map(({ result }) => [result.task_id, result.outcome])).toEqual(smoke.tasks.map((t) => [t.id, 'pass']))
  })

  // the module's own code runs only inside the sandbox: what it does there is the agent's doing
  it.each([
    [{ path: agentPath('counter-factory.mjs'), export: 'notAnAgent' }, /^agent_exit: agent exited with code 2: module adapter: export "notAnAgent" of file:.*counter-factory\.mjs is number, not an agent/],
    [{ path: agentPath('counter-factory.mjs'), export: 'missing' }, /^agent_exit: agent exited with code 2: module adapter: file:.*counter-factory\.mjs has no export "missing" \(it exports: CounterAgent, notAnAgent\)$/],
  ])('sandboxed, a module that is not an agent fails its attempt, naming the export (%#)', async (config, message) => {
    const { suite, task } = toolSuite()
    const { result } = await attempt(moduleAdapter, config, suite, task)
    expect([result.outcome, result.validity, result.failure_bucket]).toEqual(['fail', 'valid', 'no_answer'])
    expect(result.error).toMatch(message)
  })

  it('in-process (sandbox: false) evaluates the module afresh for every attempt, and marks each attempt degraded', async () => {
    const { suite, task } = toolSuite()
    const config = { path: agentPath('counter-module.mjs'), sandbox: false }
    const before = (globalThis as { __forgeCounterModuleEvaluations?: number }).__forgeCounterModuleEvaluations ?? 0
    const results = []
    for (let i = 0; i < 5; i += 1) results.push((await attempt(moduleAdapter, config, suite, task, i)).result)
    expect(results.map((r) => [r.outcome, r.validity, r.output, r.self_report])).toEqual(Array.from({ length: 5 }, () => ['pass', 'degraded', 'ABC', '1']))
    expect((globalThis as { __forgeCounterModuleEvaluations?: number }).__forgeCounterModuleEvaluations).toBe(before + 5)
    // concurrent attempts too
    const concurrent = await Promise.all([5, 6, 7, 8].map((i) => attempt(moduleAdapter, config, suite, task, i)))
    expect(concurrent.map(({ result }) => result.self_report)).toEqual(['1', '1', '1', '1'])
  })

  it('in-process with isolation "factory" imports once and makes a fresh instance per attempt', async () => {
    const { suite, task } = toolSuite({ outcome_graders: [{ type: 'exact', expected: 'abc' }] })
    const config = { path: agentPath('counter-factory.mjs'), export: 'CounterAgent', isolation: 'factory', sandbox: false }
    const reports = []
    for (let i = 0; i < 3; i += 1) reports.push(JSON.parse((await attempt(moduleAdapter, config, suite, task, i)).result.self_report) as unknown)
    // the instance is fresh each time; top-level state is shared, as documented
    expect(reports).toEqual([
      { module: 1, instance: 1 },
      { module: 2, instance: 1 },
      { module: 3, instance: 1 },
    ])
  })

  it.each([
    [{ path: agentPath('counter-factory.mjs'), export: 'notAnAgent', sandbox: false }, /^adapter "module" threw: module adapter: export "notAnAgent" of file:.*counter-factory\.mjs is number, not an agent/],
    [{ path: agentPath('counter-factory.mjs'), export: 'missing', sandbox: false }, /^adapter "module" threw: module adapter: file:.*counter-factory\.mjs has no export "missing" \(it exports: CounterAgent, notAnAgent\)$/],
    [{ path: agentPath('no-such-file.mjs'), sandbox: false }, /^adapter "module" threw: module adapter: cannot import file:.*no-such-file\.mjs: /],
    [{ path: agentPath('no-such-file.mjs') }, /^adapter "module" threw: module adapter: cannot import file:.*no-such-file\.mjs: no such file$/],
    [{}, /^adapter "module" threw: invalid module adapter config: path: required field missing \(expected string\)$/],
    [{ path: agentPath('no-such-file.mjs'), isolate: 'factory' }, /^adapter "module" threw: invalid module adapter config: isolate: unknown field \(known: .*isolation.*\)$/],
  ])('reports a bad module or config as a harness error naming it (%#)', async (config, message) => {
    const { suite, task } = toolSuite()
    const { result } = await attempt(moduleAdapter, config, suite, task)
    expect([result.outcome, result.validity, result.failure_bucket]).toEqual(['fail', 'invalid', 'harness_error'])
    expect(result.error).toMatch(message)
  })


  it('leaves the process tainted once an agent ran in it: every later attempt here, sandboxed or not, is degraded and says why', async () => {
    expect(processTaint()).toMatch(/^a module agent, file:.*counter-module\.mjs, ran inside it unsandboxed \(sandbox: false\)$/)
    const { suite, task } = toolSuite()
    const sandboxed = await attempt(moduleAdapter, { path: agentPath('counter-module.mjs') }, suite, task, 9)
    expect([sandboxed.result.outcome, sandboxed.result.validity, sandboxed.result.output]).toEqual(['pass', 'degraded', 'ABC'])
    expect(sandboxed.trace.errors).toContainEqual({ kind: 'isolation', message: sandboxed.trace.isolation_degraded })
    expect(sandboxed.trace.isolation_degraded).toMatch(/^the worker process was tainted before this attempt \(a module agent, file:.*counter-module\.mjs, ran inside it unsandboxed \(sandbox: false\)\): anything in it may have been altered since$/)
    // an in-process attempt keeps its own, more precise note
    const inProcess = await attempt(moduleAdapter, { path: agentPath('counter-module.mjs'), sandbox: false }, suite, task, 10)
    expect(inProcess.trace.isolation_degraded).toMatch(/^sandbox off: the module agent ran inside the worker process/)
  })
})
