/** Shared set-up of the adapter tests: a small in-memory suite and a way to run one attempt. */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Task } from '../../core/contracts/index.js'
import type { AgentAdapter, LoadedSuite } from '../../core/plugins.js'
import { runAttempt, type AttemptExecution } from '../../engine/attempt-runner.js'
import { fakeSuite, fakeTask, fakeTool } from '../unit/fake-suite.js'

export const agentsDir = fileURLToPath(new URL('./agents/', import.meta.url))
export const agentPath = (file: string): string => join(agentsDir, file)

/** upper (upper-cases `value`) and flaky (always throws), both allowed. */
export function toolSuite(taskFields: Record<string, unknown> = {}): { suite: LoadedSuite; task: Task; executions: () => number } {
  let executions = 0
  const tools = [
    fakeTool('upper', (args) => {
      executions += 1
      return String(args['value']).toUpperCase()
    }),
    fakeTool('flaky', () => {
      executions += 1
      throw new Error('service unavailable')
    }),
  ]
  const task = fakeTask({ tools: ['upper', 'flaky'], budget: { max_tool_calls: 5, max_retries_per_tool: 2, max_duration_ms: 5_000 }, ...taskFields })
  return { suite: fakeSuite({ tools, tasks: [task] }), task, executions: () => executions }
}

/** One attempt; `env` stands in for the worker's environment (default its own). */
export function attempt(adapter: AgentAdapter, adapterConfig: Record<string, unknown>, suite: LoadedSuite, task: Task, attemptNo = 0, env?: NodeJS.ProcessEnv): Promise<AttemptExecution> {
  return runAttempt({ suite, task, adapter, runId: 'run1', configId: 'c0', attempt: attemptNo, runSeed: 'seed', adapterConfig, workerId: 'w-test', ...(env !== undefined ? { env } : {}) })
}

/** Whether a pid is a living process (zombies count as gone). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]
    return state !== 'Z' && state !== 'X'
  } catch {
    return false
  }
}

