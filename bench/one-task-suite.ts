/** A suite of one task and one tool, in memory, for the benches that run the engine in process. */
import type { Task } from '../core/contracts/index.js'
import type { LoadedSuite, ToolDefinition } from '../core/plugins.js'

export function oneTaskSuite(task: Task, tool: ToolDefinition): LoadedSuite {
  return {
    name: 'bench',
    path: '/bench',
    manifest: { name: 'bench', description: '', version: '0', tasks: 'tasks', goldens: 'goldens', fixtures: 'fixtures' },
    tasks: [task],
    tools: new Map([[tool.name, tool]]),
    invariants: new Map(),
    goldens: new Map(),
    fixtures: new Map([[task.id, {}]]),
    contentHash: '0',
  }
}
