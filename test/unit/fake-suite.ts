/** A small in-memory suite for unit tests of the worker side: no files, no imports. */
import { Task, type AgentTrace } from '../../core/contracts/index.js'
import type { InvariantFn, LoadedSuite, ToolDefinition } from '../../core/plugins.js'

export function fakeTool(name: string, run: ToolDefinition['run'], properties: Record<string, unknown> = { value: { type: 'string' } }): ToolDefinition {
  return {
    name,
    description: `the ${name} tool`,
    input_schema: { type: 'object', properties, required: Object.keys(properties), additionalProperties: false },
    run,
  }
}

export function fakeTask(fields: Partial<Record<string, unknown>> = {}): Task {
  return Task.parse({
    id: 'task_one',
    instruction: 'Do the thing.',
    input: { value: 'abc' },
    tools: ['upper'],
    outcome_graders: [{ type: 'exact', expected: 'ABC' }],
    ...fields,
  })
}

export function fakeSuite(opts: { tasks?: Task[]; tools?: ToolDefinition[]; invariants?: Record<string, InvariantFn>; goldens?: Record<string, AgentTrace> } = {}): LoadedSuite {
  const tools = opts.tools ?? [fakeTool('upper', (args) => String(args['value']).toUpperCase())]
  const tasks = opts.tasks ?? [fakeTask()]
  return {
    name: 'fake',
    path: '/nowhere/fake',
    manifest: { name: 'fake', description: '', version: '0', tasks: 'tasks', goldens: 'goldens', fixtures: 'fixtures' },
    tasks,
    tools: new Map(tools.map((t) => [t.name, t])),
    invariants: new Map(Object.entries(opts.invariants ?? {})),
    goldens: new Map(Object.entries(opts.goldens ?? {})),
    fixtures: new Map(tasks.map((t) => [t.id, {}])),
    contentHash: '0'.repeat(64),
  }
}
