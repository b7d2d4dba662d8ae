/**
 * What an agent receives of a task (engine/attempt-runner.ts invokes it with this; app/plan-run.ts
 * estimates a run's tokens from it). Its own module: planning a run must not load the attempt
 * runner's environments, sandbox, gateway and tool proxy into the CLI.
 */
import { InvocationPayload, type Task, type ToolSpec } from '../core/contracts/index.js'

/** The only thing the agent receives: instruction, input, allowlisted tool specs, denylist, budget. */
export function buildInvocationPayload(task: Task, suite: { name: string; tools: ReadonlyMap<string, ToolSpec> }): InvocationPayload {
  const tools: ToolSpec[] = task.tools.map((name) => {
    const tool = suite.tools.get(name)
    if (tool === undefined) throw new Error(`task "${task.id}" allows tool "${name}", which suite "${suite.name}" does not define`)
    return { name: tool.name, description: tool.description, input_schema: structuredClone(tool.input_schema) }
  })
  // cloned so an agent mutating its payload cannot reach the task
  return InvocationPayload.parse({
    instruction: task.instruction,
    input: structuredClone(task.input),
    tools,
    disallowed_tools: [...task.disallowed_tools],
    budget: { ...task.budget },
  })
}
