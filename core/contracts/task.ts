/**
 * Task-file contracts: one task as written in YAML (Task, Budget, tool and grader specs) and the
 * suite manifest (`suite.yaml`). Fixtures, which tasks also declare, live in fixture.ts.
 */
import { z } from 'zod'
import { FixtureSpec } from './fixture.js'
import { identifier } from './identifier.js'

export const Budget = z
  .object({
    max_tool_calls: z.number().int().positive().default(20),
    max_retries_per_tool: z.number().int().nonnegative().default(3),
    max_duration_ms: z.number().int().positive().default(60_000),
    max_tokens: z.number().int().positive().optional(),
  })
  .strict()
export type Budget = z.infer<typeof Budget>

/** A JSON Schema object describing a tool's arguments (kept as data, checked by the tool proxy). */
export const JsonSchemaObject = z.record(z.string(), z.unknown())

export const ToolSpec = z
  .object({
    name: identifier,
    description: z.string().default(''),
    input_schema: JsonSchemaObject.default({ type: 'object', properties: {} }),
  })
  .strict()
export type ToolSpec = z.infer<typeof ToolSpec>

/** A grader reference in a task file: `type` names a registered grader; the rest is its config. */
export const GraderSpec = z.object({ type: z.string().min(1) }).catchall(z.unknown())
export type GraderSpec = z.infer<typeof GraderSpec>

export const BudgetLimit = z.enum(['max_tool_calls', 'max_retries_per_tool', 'max_duration_ms', 'max_tokens'])
export type BudgetLimit = z.infer<typeof BudgetLimit>

const TaskFields = z
  .object({
    id: identifier,
    instruction: z.string().min(1),
    input: z.record(z.string(), z.unknown()).default({}),
    tools: z.array(identifier).default([]),
    disallowed_tools: z.array(identifier).default([]),
    budget: Budget.default(Budget.parse({})),
    fixtures: z.array(FixtureSpec).default([]),
    outcome_graders: z.array(GraderSpec).min(1, 'a task needs at least one outcome grader').optional(),
    graders: z.array(GraderSpec).min(1, 'a task needs at least one outcome grader').optional(),
    invariants: z.array(identifier).default([]),
    golden: z.string().min(1).optional(),
    tags: z.array(z.string()).default([]),
    category: z.string().default('general'),
  })
  .strict()

/** One task, as written in one YAML file. `graders:` is accepted as an alias of `outcome_graders:`. */
export const Task = TaskFields.superRefine((task, ctx) => {
  if (task.outcome_graders && task.graders) {
    ctx.addIssue({ code: 'custom', path: ['graders'], message: 'give either outcome_graders or its alias graders, not both' })
  }
  if (!task.outcome_graders && !task.graders) {
    ctx.addIssue({ code: 'custom', path: ['outcome_graders'], message: 'a task needs outcome_graders (or graders)' })
  }
}).transform(({ graders, outcome_graders, ...rest }) => ({
  ...rest,
  outcome_graders: outcome_graders ?? graders ?? [],
}))
export type Task = z.output<typeof Task>
export type TaskFile = z.input<typeof Task>

/** `suite.yaml` at the root of a suite directory. */
export const SuiteManifest = z
  .object({
    name: identifier,
    description: z.string().default(''),
    version: z.string().default('0'),
    tasks: z.string().default('tasks'),
    tools: z.string().optional(),
    invariants: z.string().optional(),
    goldens: z.string().default('goldens'),
    fixtures: z.string().default('fixtures'),
  })
  .strict()
export type SuiteManifest = z.infer<typeof SuiteManifest>
