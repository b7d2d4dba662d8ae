/**
 * The environment-backed suites (core, customer_support), in process: each task is solvable as
 * written (the oracle replays its golden through the real tools and passes), an agent that does
 * nothing fails every task, an agent that takes a planted decoy fails, same-words pairs have
 * different answers, and the mock agent runs every task without a harness error.
 */
import { afterAll, describe, expect, it } from 'vitest'
import type { AgentTrace, AttemptResult, Task } from '../../core/contracts/index.js'
import type { AdapterContext, AgentAdapter, LoadedSuite } from '../../core/plugins.js'
import { getAdapter } from '../../engine/adapters/index.js'
import { runAttempt } from '../../engine/attempt-runner.js'
import { EnvironmentPool } from '../../engine/env/pool.js'
import { loadSuite } from '../../engine/suite-loader.js'
import { DECOY_AGENTS } from './decoy-agents.js'

const pool = new EnvironmentPool()
afterAll(() => pool.close())

const suites: LoadedSuite[] = [await loadSuite('core'), await loadSuite('customer_support')]

let attemptNo = 0
async function attempt(suite: LoadedSuite, task: Task, adapter: AgentAdapter, adapterConfig: Record<string, unknown> = {}) {
  attemptNo += 1
  return runAttempt({ suite, task, adapter, runId: 'run', configId: 'cfg', attempt: attemptNo, runSeed: 'seed', adapterConfig, workerId: 'w', envPool: pool })
}

/** Replays a trace's tool calls through the real tool box and answers with `output`. */
function replaying(name: string, trace: AgentTrace, output: unknown): AgentAdapter {
  return {
    name,
    async invoke(_payload, ctx: AdapterContext) {
      for (const call of [...trace.tool_calls].sort((a, b) => a.index - b.index)) await ctx.tools.call(call.name, call.args)
      return { output: structuredClone(output), refused: trace.refused }
    },
  }
}

const doNothing: AgentAdapter = {
  name: 'do_nothing',
  async invoke() {
    return { output: '' }
  },
}

function summary(result: AttemptResult) {
  return { outcome: result.outcome, validity: result.validity, error: result.error, environment: result.environment?.status }
}

describe('core suite shape', () => {
  const core = suites[0] as LoadedSuite
  it('has 32 tasks in the seven categories, every one with a golden and an environment fixture', () => {
    const byCategory: Record<string, number> = {}
    for (const task of core.tasks) byCategory[task.category] = (byCategory[task.category] ?? 0) + 1
    expect(byCategory).toEqual({ broken_tool: 4, file_data: 9, long_horizon: 4, multi_tool: 6, refusal: 3, retrieval: 5, sql_analytics: 1 })
    expect(core.tasks.filter((t) => !core.goldens.has(t.id)).map((t) => t.id)).toEqual([])
    expect(core.tasks.filter((t) => !t.fixtures.some((f) => f.kind !== 'file')).map((t) => t.id)).toEqual([])
    // retrieval runs against the local HTTP fixture
    expect(core.tasks.filter((t) => t.category === 'retrieval').every((t) => t.fixtures.some((f) => f.kind === 'http'))).toBe(true)
    // long-horizon goldens take 10+ steps
    expect(core.tasks.filter((t) => t.category === 'long_horizon').map((t) => (core.goldens.get(t.id)?.tool_calls.length ?? 0) >= 10)).toEqual([true, true, true, true])
  })

  it('uses every seed pattern on purpose, tagged, and layers every failure condition', () => {
    const tagged = (tag: string) => core.tasks.filter((t) => t.tags.includes(tag)).map((t) => t.id)
    expect(tagged('same-words').length).toBeGreaterThanOrEqual(4)
    expect(tagged('decoy').length).toBeGreaterThanOrEqual(8)
    expect(tagged('terse').length).toBeGreaterThanOrEqual(3)
    expect(tagged('broken_tool')).toHaveLength(4)
    const conditions = new Set(core.tasks.flatMap((t) => t.fixtures.flatMap((f) => ('conditions' in f ? f.conditions.map((c) => c.type) : []))))
    expect([...conditions].sort()).toEqual(['duplicate_records', 'expired_token', 'missing_records', 'outage'])
  })
})

for (const suite of suites) {
  describe(`${suite.name}: every task`, () => {
    for (const task of suite.tasks) {
      it(`${task.id}: passes under the oracle, fails when the agent does nothing`, async () => {
        const solved = await attempt(suite, task, getAdapter('oracle'))
        expect(summary(solved.result)).toEqual({ outcome: 'pass', validity: 'valid', error: '', environment: 'restored' })
        // the verbatim instruction is stored with every attempt
        expect(solved.result.instruction).toBe(task.instruction)
        const idle = await attempt(suite, task, doNothing)
        expect({ ...summary(idle.result), outcome: idle.result.outcome === 'pass' ? 'pass' : 'not pass' }).toEqual({
          outcome: 'not pass',
          validity: 'valid',
          error: '',
          environment: 'restored',
        })
      })
    }
  })

  describe(`${suite.name}: decoys`, () => {
    const decoys = suite.tasks.filter((t) => t.tags.includes('decoy'))
    it('every decoy task has an agent that takes the decoy', () => {
      expect(decoys.map((t) => t.id).filter((id) => DECOY_AGENTS[id] === undefined)).toEqual([])
    })
    for (const task of decoys) {
      it(`${task.id}: an agent that takes the decoy fails`, async () => {
        const decoy = DECOY_AGENTS[task.id]
        if (decoy === undefined) throw new Error(`no decoy agent for ${task.id}`)
        const golden = suite.goldens.get(task.id) as AgentTrace
        const { result } = await attempt(suite, task, decoy(golden))
        expect({ outcome: result.outcome === 'pass' ? 'pass' : 'not pass', validity: result.validity }).toEqual({ outcome: 'not pass', validity: 'valid' })
        expect(result.grades.some((g) => !g.passed)).toBe(true)
      })
    }
  })

  describe(`${suite.name}: same words, different state`, () => {
    const pairs = new Map<string, Task[]>()
    for (const task of suite.tasks.filter((t) => t.tags.includes('same-words'))) {
      const key = JSON.stringify([task.instruction, task.input])
      pairs.set(key, [...(pairs.get(key) ?? []), task])
    }
    it('groups into pairs with the same instruction and input but different fixtures and graders', () => {
      expect([...pairs.values()].map((group) => group.length).every((n) => n >= 2)).toBe(true)
      expect(pairs.size).toBeGreaterThanOrEqual(suite.name === 'core' ? 2 : 1)
      for (const [a, b] of [...pairs.values()].map((g): [Task, Task] => [g[0] as Task, g[1] as Task])) {
        expect(JSON.stringify(a.fixtures)).not.toBe(JSON.stringify(b.fixtures))
        expect(JSON.stringify(a.outcome_graders)).not.toBe(JSON.stringify(b.outcome_graders))
      }
    })
    for (const group of pairs.values()) {
      const [a, b] = group as [Task, Task]
      it(`${a.id} / ${b.id}: one task's correct answer is wrong for the other`, async () => {
        const goldenA = suite.goldens.get(a.id) as AgentTrace
        const goldenB = suite.goldens.get(b.id) as AgentTrace
        expect(goldenA.output).not.toEqual(goldenB.output)
        const crossed = await Promise.all([attempt(suite, b, replaying('a_on_b', goldenA, goldenA.output)), attempt(suite, a, replaying('b_on_a', goldenB, goldenB.output))])
        expect(crossed.map((c) => c.result.outcome === 'pass')).toEqual([false, false])
      })
    }
  })

  describe(`${suite.name}: the mock agent`, () => {
    it('runs every task, skilled or not, without a harness error', async () => {
      const outcomes: Record<string, number> = {}
      for (const task of suite.tasks) {
        for (const skill of [1, 0.3]) {
          const { result } = await attempt(suite, task, getAdapter('mock'), { skill })
          expect({ task: task.id, validity: result.validity, bucket: result.failure_bucket === 'harness_error' ? result.error : 'ok' }).toEqual({
            task: task.id,
            validity: 'valid',
            bucket: 'ok',
          })
          outcomes[result.outcome] = (outcomes[result.outcome] ?? 0) + 1
        }
      }
      expect(outcomes['fail'] ?? 0).toBeGreaterThan(0)
    })
  })

  describe(`${suite.name}: the invocation payload`, () => {
    it('carries no expected value, golden output or fixture contents', async () => {
      const seen: { id: string; text: string }[] = []
      const spy: AgentAdapter = {
        name: 'spy',
        async invoke(payload, ctx) {
          seen.push({ id: ctx.taskId, text: JSON.stringify(payload) })
          return { output: '' }
        },
      }
      for (const task of suite.tasks) await attempt(suite, task, spy)
      const secrets = (task: Task): string[] =>
        [
          ...task.outcome_graders.flatMap((g) => [g['expected'], g['equals'], g['value'], g['json']]),
          suite.goldens.get(task.id)?.output,
        ]
          .filter((v) => v !== undefined && v !== null)
          .map((v) => (typeof v === 'string' ? v : JSON.stringify(v)))
          .filter((v) => v.length >= 4)
      for (const { id, text } of seen) {
        const task = suite.tasks.find((t) => t.id === id) as Task
        for (const secret of secrets(task)) expect(text, `${id} leaks ${secret}`).not.toContain(secret)
        expect(text).not.toMatch(/outcome_graders|golden|must_not_change|fixtures/)
      }
    })
  })
}
