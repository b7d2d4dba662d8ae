/**
 * The peer comparison's workload (issue 15), built from Forge's own loaded suite so every harness runs
 * the same thing: each task's instruction, input, allowlisted tools in order (with their schemas),
 * fixture files, outcome graders and invariants. `peerWorkload` is what the promptfoo provider and the
 * Inspect task read (workload.json); `promptfooConfig` maps each task's graders onto promptfoo
 * assertions (built-in ones where they mean the same, JavaScript ones calling the suite's own
 * invariants otherwise); `promptfooDuration` reads promptfoo's own run time from its output.
 * Pure: no I/O (test/bench/peers-workload.test.ts).
 */
import type { GraderSpec, Task } from '../../core/contracts/index.js'

export interface PeerTool {
  name: string
  description: string
  input_schema: Record<string, unknown>
}

export interface PeerTask {
  id: string
  instruction: string
  input: Record<string, unknown>
  /** the allowlist, in the task's order: the mock agent calls them in this order */
  tools: PeerTool[]
  /** fixture file contents by the path written in the task */
  fixtures: Record<string, string>
  graders: GraderSpec[]
  invariants: string[]
}

export interface PeerWorkload {
  suite: string
  /** attempts per task */
  attempts: number
  /** attempts at once */
  concurrency: number
  tasks: PeerTask[]
}

/** The workload of `tasks` (tool specs from `tools`), `attempts` each, `concurrency` at once. */
export function peerWorkload(
  suite: { name: string; tools: ReadonlyMap<string, PeerTool>; fixtures: ReadonlyMap<string, Record<string, string>> },
  tasks: readonly Task[],
  attempts: number,
  concurrency: number,
): PeerWorkload {
  return {
    suite: suite.name,
    attempts,
    concurrency,
    tasks: tasks.map((task) => ({
      id: task.id,
      instruction: task.instruction,
      input: task.input,
      tools: task.tools.map((name) => {
        const tool = suite.tools.get(name)
        if (tool === undefined) throw new Error(`task ${task.id} allows tool "${name}", which suite ${suite.name} does not define`)
        return { name: tool.name, description: tool.description, input_schema: tool.input_schema }
      }),
      fixtures: suite.fixtures.get(task.id) ?? {},
      graders: task.outcome_graders,
      invariants: task.invariants,
    })),
  }
}

/** A promptfoo assertion (the subset this workload uses). */
export interface PromptfooAssertion {
  type: 'icontains' | 'contains' | 'equals' | 'regex' | 'javascript'
  value: string
  config?: Record<string, unknown>
}

/**
 * A task's outcome graders and invariants as promptfoo assertions: contains → (i)contains, exact →
 * equals, regex → regex; numeric, tool_sequence and every invariant → a JavaScript assertion in
 * `assertionsFile` (numeric, toolSequence, invariant) given the grader's settings as its config.
 * Throws on a grader this mapping does not know (the smoke suite needs none other).
 */
export function promptfooAssertions(task: PeerTask, assertionsFile: string, invariantsModule: string): PromptfooAssertion[] {
  const fn = (name: string): string => `file://${assertionsFile}:${name}`
  const graders = task.graders.map((spec): PromptfooAssertion => {
    const config = spec as Record<string, unknown>
    switch (spec.type) {
      case 'contains': {
        const expected = config['expected']
        if (typeof expected !== 'string') throw new Error(`task ${task.id}: contains with a list of strings is not mapped onto promptfoo`)
        return { type: config['case_sensitive'] === true ? 'contains' : 'icontains', value: expected }
      }
      case 'exact':
        if (config['case_sensitive'] === false || config['trim'] === false || config['field'] !== undefined) throw new Error(`task ${task.id}: exact with case_sensitive/trim/field settings is not mapped onto promptfoo`)
        return { type: 'equals', value: String(config['expected']) }
      case 'regex':
        if (config['flags'] !== undefined || config['field'] !== undefined) throw new Error(`task ${task.id}: regex with flags or field is not mapped onto promptfoo`)
        return { type: 'regex', value: String(config['pattern']) }
      case 'numeric':
        return { type: 'javascript', value: fn('numeric'), config: { expected: config['expected'], tolerance: config['tolerance'] ?? 0, relative_tolerance: config['relative_tolerance'] ?? 0 } }
      case 'tool_sequence':
        return { type: 'javascript', value: fn('toolSequence'), config: { sequence: config['sequence'], mode: config['mode'] ?? 'ordered' } }
      default:
        throw new Error(`task ${task.id}: grader type "${spec.type}" is not mapped onto promptfoo`)
    }
  })
  const invariants = task.invariants.map((name): PromptfooAssertion => ({ type: 'javascript', value: fn('invariant'), config: { module: invariantsModule, name } }))
  return [...graders, ...invariants]
}

/**
 * promptfoo's config for the workload: one prompt (the instruction), the custom provider (the mock
 * agent, `providerFile`, given the workload file and the suite's tools module), one test per task
 * with its assertions; `--repeat attempts` and `-j concurrency` on the command line make the attempts.
 */
export function promptfooConfig(
  workload: PeerWorkload,
  files: { provider: string; assertions: string; workload: string; toolsModule: string; invariantsModule: string },
): Record<string, unknown> {
  return {
    description: `forge peer bench: ${workload.suite} × ${workload.attempts}`,
    prompts: ['{{instruction}}'],
    providers: [{ id: `file://${files.provider}`, label: 'forge-mock-agent', config: { workload: files.workload, tools_module: files.toolsModule } }],
    tests: workload.tasks.map((task) => ({
      description: task.id,
      vars: { task_id: task.id, instruction: task.instruction },
      assert: promptfooAssertions(task, files.assertions, files.invariantsModule),
    })),
  }
}

/** promptfoo's own run time from its summary line ("Duration: 1m 5s (concurrency: 100)", "Duration: 12s", "Duration: 950ms"), in ms */
export function promptfooDuration(output: string): number | undefined {
  const line = /Duration:\s*([^(\n]*)/.exec(output)?.[1]
  if (line === undefined) return undefined
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 }
  let ms: number | undefined
  for (const [, value, unit] of line.matchAll(/(\d+(?:\.\d+)?)\s*(ms|h|m|s)(?![a-z])/g)) ms = (ms ?? 0) + Number(value) * units[unit!]!
  return ms
}
