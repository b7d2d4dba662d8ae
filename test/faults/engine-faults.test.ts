/**
 * Fault injection in the worker, in process (no servers): the tool proxy's wrapper for each kind,
 * the attempt runner's counts and failure bucket, determinism, and each kind reaching each adapter
 * family — tools through the in-process mock and module adapters, a subprocess over stdio and over
 * the HTTP tool endpoint, an agent service; the model through react, langgraph and PydanticAI.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { FaultProfile, type FaultKind, type FaultProfileInput, type Task } from '../../core/contracts/index.js'
import { decideFault } from '../../core/faults.js'
import type { AgentAdapter, LoadedSuite } from '../../core/plugins.js'
import { getAdapter } from '../../engine/adapters/index.js'
import { httpAdapter } from '../../engine/adapters/http.js'
import { langgraphAdapter } from '../../engine/adapters/langgraph.js'
import { moduleAdapter } from '../../engine/adapters/module.js'
import { pydanticAiAdapter } from '../../engine/adapters/pydantic-ai.js'
import { reactAdapter } from '../../engine/adapters/react.js'
import { subprocessAdapter } from '../../engine/adapters/subprocess.js'
import { runAttempt } from '../../engine/attempt-runner.js'
import { attemptFaults } from '../../engine/faults.js'
import { createToolBox } from '../../engine/tool-proxy.js'
import { agentPath, toolSuite } from '../adapters/helpers.js'
import { callTool, json, startService, type FakeService } from '../adapters/service.js'
import { startScriptedOpenAI, type ScriptedOpenAI } from '../fakes/scripted-openai.js'
import { fakeSuite, fakeTask } from '../unit/fake-suite.js'

const KINDS: FaultKind[] = ['timeout', '500', 'garbage', 'rate_limit', 'slow']
const every = (kind: FaultKind, target: 'tools' | 'model' = 'tools'): FaultProfile =>
  FaultProfile.parse({ timeout_ms: 30, slow_ms: 5, retry_after_ms: 1000, rules: [{ rate: 1, kinds: [kind], target }] } satisfies FaultProfileInput)

function box(profile: FaultProfile | undefined, suite: LoadedSuite, task: Task, signal?: AbortSignal) {
  return createToolBox({
    task,
    suite,
    attemptUid: 'r/c/t/0',
    budget: task.budget,
    startedAt: Date.now(),
    ...(profile !== undefined ? { faults: attemptFaults(profile, { runSeed: 's', configId: 'c', taskId: task.id, attempt: 0 }) } : {}),
    ...(signal !== undefined ? { signal } : {}),
  })
}

describe('the tool proxy under each fault kind', () => {
  it.each([
    ['timeout', false, { ok: false, error: 'timeout: tool "upper" did not answer within 30 ms' }],
    ['500', false, { ok: false, error: '500 Internal Server Error: the service behind tool "upper" failed to handle the request' }],
    ['rate_limit', false, { ok: false, error: '429 Too Many Requests: tool "upper" is rate limited; retry after 1 s (1000 ms)' }],
    ['slow', true, { ok: true, result: 'ABC' }],
  ] as const)('%s: the tool runs = %s, the agent gets what a real failure gives', async (kind, runs, outcome) => {
    const { suite, task, executions } = toolSuite()
    const tools = box(every(kind), suite, task)
    expect(await tools.call('upper', { value: 'abc' })).toEqual(outcome)
    expect(executions()).toBe(runs ? 1 : 0)
    expect(tools.calls).toEqual([
      expect.objectContaining({ index: 0, name: 'upper', injected_fault: kind, retry_index: 0, ...(outcome.ok ? { result: 'ABC' } : { error: outcome.error }) }),
    ])
  })

  it('garbage: the tool runs (its side effects happen) and its answer comes back malformed', async () => {
    const { suite, task, executions } = toolSuite()
    const tools = box(every('garbage'), suite, task)
    const outcome = await tools.call('upper', { value: 'abc' })
    expect(executions()).toBe(1)
    expect(outcome.ok).toBe(true)
    expect(outcome.ok && outcome.result).not.toEqual('ABC')
    expect(tools.calls[0]).toMatchObject({ injected_fault: 'garbage', result: outcome.ok ? outcome.result : undefined })
    expect(tools.calls[0]!.error).toBeUndefined()
  })

  it('an injected timeout ends with the attempt (its stop signal), never after it', async () => {
    const { suite, task } = toolSuite()
    const controller = new AbortController()
    const tools = box(FaultProfile.parse({ timeout_ms: 600_000, rules: [{ rate: 1, kinds: ['timeout'] }] }), suite, task, controller.signal)
    const pending = tools.call('upper', { value: 'abc' })
    controller.abort()
    expect(await pending).toEqual({ ok: false, error: 'timeout: tool "upper" did not answer within 600000 ms' })
  })

  it('checks come first: a refused call meets no fault and uses no call index', async () => {
    const { suite, task, executions } = toolSuite()
    const profile = FaultProfile.parse({ rules: [{ rate: 0.5, kinds: ['500'] }] })
    const tools = box(profile, suite, task)
    await tools.call('teleport', {})
    await tools.call('upper', { value: 7 })
    await tools.call('upper', { value: 'abc' })
    expect(tools.calls.map((c) => [c.refused ?? 'ran', c.injected_fault ?? '-'])).toEqual([
      ['hallucinated_tool', '-'],
      ['malformed_tool_call', '-'],
      ['ran', decideFault(profile, { runSeed: 's', attemptKey: 'c/task_one/0', taskId: 'task_one', target: 'tools', tool: 'upper', index: 0 })?.kind ?? '-'],
    ])
    expect(executions()).toBeLessThanOrEqual(1)
  })

  it('without a profile nothing is injected and nothing is recorded', async () => {
    const { suite, task } = toolSuite()
    const tools = box(undefined, suite, task)
    expect(await tools.call('upper', { value: 'abc' })).toEqual({ ok: true, result: 'ABC' })
    expect(Object.keys(tools.calls[0]!)).not.toContain('injected_fault')
  })
})

describe('the attempt runner with a fault profile', () => {
  const attempt = (adapter: AgentAdapter, config: Record<string, unknown>, suite: LoadedSuite, task: Task, faults: FaultProfile | undefined, attemptNo = 0, runSeed = 'seed') =>
    runAttempt({ suite, task, adapter, runId: 'run1', configId: 'c0', attempt: attemptNo, runSeed, adapterConfig: config, workerId: 'w', ...(faults ? { faults } : {}) })

  it('counts injected faults per attempt and buckets an unrecovered one apart from the agent’s own mistakes', async () => {
    const { suite, task } = toolSuite({ tools: ['upper'] })
    const { result, trace } = await attempt(getAdapter('mock'), { skill: 1 }, suite, task, every('500'))
    expect(result).toMatchObject({ outcome: 'fail', validity: 'valid', failure_bucket: 'injected_fault', injected_faults: 1, injected_fault_kinds: ['500'] })
    expect(result.tool_calls[0]).toMatchObject({ name: 'upper', injected_fault: '500' })
    expect(trace.spans.find((s) => s.span_id === 'tool-0')?.attributes).toEqual({ status: 'error', injected_fault: '500' })
    // slow answers correctly: met, counted, and the attempt passes
    const slow = await attempt(getAdapter('mock'), { skill: 1 }, suite, task, every('slow'))
    expect(slow.result).toMatchObject({ outcome: 'pass', failure_bucket: null, injected_faults: 1, injected_fault_kinds: ['slow'] })
    // no profile: the fields are absent, the attempt as before
    const clean = await attempt(getAdapter('mock'), { skill: 1 }, suite, task, undefined)
    expect(clean.result.outcome).toBe('pass')
    expect(clean.result).not.toHaveProperty('injected_faults')
  })

  it('reproduces the same faults from the same seed and attempt key, and others from another seed', async () => {
    const profile = FaultProfile.parse({ rules: [{ rate: 0.5, kinds: ['500', 'slow'] }], slow_ms: 1 })
    const { suite, task } = toolSuite({ budget: { max_tool_calls: 30, max_retries_per_tool: 30, max_duration_ms: 10_000 } })
    // an agent that calls upper 12 times whatever happens
    const caller: AgentAdapter = {
      name: 'caller',
      async invoke(_payload, ctx) {
        for (let i = 0; i < 12; i += 1) await ctx.tools.call('upper', { value: `v${i}` })
        return { output: 'done' }
      },
    }
    const faultsOf = async (runSeed: string, attemptNo: number) => (await attempt(caller, {}, suite, task, profile, attemptNo, runSeed)).result.tool_calls.map((c) => c.injected_fault ?? '-')
    const first = await faultsOf('seed', 3)
    expect(await faultsOf('seed', 3)).toEqual(first)
    expect(first).toEqual(Array.from({ length: 12 }, (_, index) => decideFault(profile, { runSeed: 'seed', attemptKey: 'c0/task_one/3', taskId: 'task_one', target: 'tools', tool: 'upper', index })?.kind ?? '-'))
    expect(await faultsOf('other', 3)).not.toEqual(first)
    expect(await faultsOf('seed', 4)).not.toEqual(first)
  })
})

describe('each kind reaches each tool-calling adapter family', () => {
  const services: FakeService[] = []
  afterEach(async () => {
    await Promise.all(services.splice(0).map((s) => s.close()))
  })
  const families: [string, () => Promise<{ adapter: AgentAdapter; config: Record<string, unknown> }>][] = [
    ['mock (in process)', async () => ({ adapter: getAdapter('mock'), config: { skill: 1 } })],
    ['module (in process)', async () => ({ adapter: moduleAdapter, config: { path: agentPath('counter-module.mjs') } })],
    ['subprocess over stdio', async () => ({ adapter: subprocessAdapter, config: { command: ['node', 'examples/agents/echo-agent.mjs'] } })],
    ['subprocess over the HTTP tool endpoint', async () => ({ adapter: subprocessAdapter, config: { command: ['node', 'examples/agents/http-tools-agent.mjs'], protocol: 'http' } })],
    [
      'an agent service (http)',
      async () => {
        const svc = await startService({
          'POST /reset': (_req, res) => json(res, 200, {}),
          'POST /invoke': async (req, res) => {
            const reply = await callTool(req.body, 'upper', { value: 'abc' })
            json(res, 200, { output: reply.ok ? reply.result : `failed: ${reply.error}` })
          },
        })
        services.push(svc)
        return { adapter: httpAdapter, config: { base_url: svc.url } }
      },
    ],
  ]
  const cases = families.flatMap(([family, make]) => KINDS.map((kind) => [family, kind, make] as const))
  it.each(cases)('%s meets %s', async (_family, kind, make) => {
    const { adapter, config } = await make()
    const { suite, task } = toolSuite({ tools: ['upper'] })
    const { result } = await runAttempt({ suite, task, adapter, runId: 'r', configId: 'c', attempt: 0, runSeed: 's', adapterConfig: config, workerId: 'w', faults: every(kind) })
    expect(result.tool_calls.map((c) => [c.name, c.injected_fault])).toEqual([['upper', kind]])
    expect(result.injected_fault_kinds).toEqual([kind])
    // what the agent did with it: slow still solves the task; every other kind leaves it without the right answer
    if (kind === 'slow') expect([result.outcome, result.validity]).toEqual(['pass', 'valid'])
    else expect([result.outcome, result.validity, result.failure_bucket]).toEqual(['fail', 'valid', 'injected_fault'])
  })
})

describe('each kind reaches each model-backed adapter family through the gateway', () => {
  let upstream: ScriptedOpenAI | undefined
  afterEach(async () => {
    await upstream?.close()
    upstream = undefined
  })
  const families: [string, AgentAdapter][] = [
    ['react (openai SDK, in process)', reactAdapter],
    ['langgraph (LangChain, in process)', langgraphAdapter],
    ['pydantic-ai (Python process)', pydanticAiAdapter],
  ]
  const cases = families.flatMap(([family, adapter]) => KINDS.map((kind) => [family, kind, adapter] as const))
  it.each(cases)('%s meets %s', async (_family, kind, adapter) => {
    upstream = await startScriptedOpenAI([{ content: 'ABC' }])
    const task = fakeTask({ tools: [], budget: { max_tool_calls: 5, max_retries_per_tool: 2, max_duration_ms: 30_000 } })
    const { result, trace } = await runAttempt({
      suite: fakeSuite({ tasks: [task] }),
      task,
      adapter,
      runId: 'r',
      configId: 'c',
      attempt: 0,
      runSeed: 's',
      adapterConfig: { model: 'scripted-1' },
      workerId: 'w',
      env: { OPENAI_BASE_URL: upstream.baseURL, OPENAI_API_KEY: 'sk-real' },
      faults: every(kind, 'model'),
    })
    const models = trace.spans.filter((s) => s.category === 'model')
    expect(models.length).toBeGreaterThan(0)
    expect(models.every((s) => s.attributes['injected_fault'] === kind)).toBe(true)
    // one entry per fault: a client that retries (the Python SDK does on 5xx and 429) meets one per call
    expect(result.injected_fault_kinds).toEqual(models.map(() => kind))
    expect(result.injected_faults).toBe(models.length)
    if (kind === 'slow') {
      // latency added, the model's answer forwarded
      expect(models.map((s) => s.attributes['status'])).toEqual(['ok'])
      expect([result.outcome, result.output]).toEqual(['pass', 'ABC'])
    } else {
      // answered by the gateway in the model's place: the upstream never saw the request
      expect(models.every((s) => s.attributes['status'] === 'injected_fault')).toBe(true)
      expect(upstream.requests).toHaveLength(0)
      expect([result.outcome, result.validity, result.failure_bucket]).toEqual(['fail', 'valid', 'injected_fault'])
    }
  })
})
