/**
 * Ground truth never reaches a model: for every smoke task and every model-backed adapter, what the
 * model server receives before any tool ran holds the task's instruction and input, and none of its
 * graders' expected values, its golden trace, or any other task.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { AgentAdapter, LoadedSuite } from '../../core/plugins.js'
import { langgraphAdapter } from '../../engine/adapters/langgraph.js'
import { pydanticAiAdapter } from '../../engine/adapters/pydantic-ai.js'
import { reactAdapter } from '../../engine/adapters/react.js'
import { singleShotAdapter } from '../../engine/adapters/single-shot.js'
import { runAttempt } from '../../engine/attempt-runner.js'
import { loadSuite } from '../../engine/suite-loader.js'
import { startScriptedOpenAI, type ScriptedOpenAI } from '../fakes/scripted-openai.js'

let suite: LoadedSuite
let upstream: ScriptedOpenAI
beforeAll(async () => {
  suite = await loadSuite('smoke')
  upstream = await startScriptedOpenAI(() => ({ content: 'done' }))
})
afterAll(async () => {
  await upstream?.close()
})

/** Strings that must not reach the model for a task: expected values, the golden's output, other tasks. */
function secretsOf(taskId: string): string[] {
  const task = suite.tasks.find((t) => t.id === taskId)!
  const secrets: string[] = []
  for (const grader of task.outcome_graders) {
    // a tool_sequence names the tools, which the agent is given anyway
    if (grader.type === 'tool_sequence') continue
    for (const [key, value] of Object.entries(grader)) if (key !== 'type' && (typeof value === 'string' || typeof value === 'number')) secrets.push(String(value))
  }
  const golden = suite.goldens.get(taskId)
  if (golden !== undefined) secrets.push(JSON.stringify(golden.output).replace(/^"|"$/g, ''))
  for (const other of suite.tasks) if (other.id !== taskId) secrets.push(other.id, other.instruction)
  return secrets
}

const cases: Array<[string, AgentAdapter, string[]]> = [
  ['react', reactAdapter, []],
  ['single_shot', singleShotAdapter, []],
  ['langgraph', langgraphAdapter, []],
  // a Python process per attempt: two tasks say enough
  ['pydantic-ai', pydanticAiAdapter, ['echo_greeting', 'sum_two_numbers']],
]

describe('what a model-backed adapter sends the model', () => {
  it.each(cases)('%s: the instruction and input, never ground truth or other tasks', async (_name, adapter, only) => {
    const tasks = only.length > 0 ? suite.tasks.filter((t) => only.includes(t.id)) : suite.tasks
    expect(tasks.length).toBeGreaterThan(0)
    for (const task of tasks) {
      const before = upstream.requests.length
      const { result } = await runAttempt({
        suite,
        task: { ...task, budget: { ...task.budget, max_duration_ms: 30_000 } },
        adapter,
        runId: 'iso',
        configId: 'c',
        attempt: 0,
        runSeed: 's',
        adapterConfig: { model: 'scripted-iso' },
        workerId: 'w',
        env: { OPENAI_BASE_URL: upstream.baseURL },
      })
      expect(result.error).toBe('')
      const sent = upstream.requests.slice(before)
      expect(sent).toHaveLength(1)
      // the sampling seed is a number of the harness's, not the task's: leave it out of the search
      const { seed: _seed, ...body } = sent[0]!.body
      const text = JSON.stringify(body)
      expect(text).toContain(JSON.stringify(task.instruction).slice(1, -1))
      for (const [key, value] of Object.entries(task.input)) {
        expect(text).toContain(key)
        expect(text).toContain(JSON.stringify(value).replace(/^"|"$/g, ''))
      }
      const secrets = secretsOf(task.id)
      expect(secrets.length).toBeGreaterThan(0)
      expect(secrets.filter((secret) => text.includes(JSON.stringify(secret).slice(1, -1)))).toEqual([])
    }
  })
})
