/**
 * A JSON Schema for task files, YAML or JSON, for editor completion (yaml-language-server's
 * `# yaml-language-server: $schema=...` comment, or a `"$schema": "..."` key in a JSON task). Derived from the Task contract, with each known grader's
 * config spelled out so editors can complete grader keys too.
 */
import { z } from 'zod'
import { Task } from './contracts/index.js'
import { graders } from './graders/index.js'

// draft-07: the draft editors' YAML tooling supports most widely
const options = { io: 'input', target: 'draft-7' } as const

function graderSpecSchema(): Record<string, unknown> {
  const variants = [...graders.values()].map((grader) => {
    const { $schema: _ignored, ...config } = z.toJSONSchema(grader.configSchema, options) as Record<string, unknown>
    const properties = (config['properties'] ?? {}) as Record<string, unknown>
    const required = Array.isArray(config['required']) ? (config['required'] as string[]) : []
    return {
      ...config,
      description: grader.description,
      properties: { type: { const: grader.name }, ...properties },
      required: ['type', ...required],
    }
  })
  return { anyOf: variants }
}

/** The JSON Schema (draft-07) of a task file as written: the Task contract's input side. */
export function taskJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(Task, options) as Record<string, unknown>
  const properties: Record<string, Record<string, unknown>> = {
    // the loader drops it: it only points an editor at this schema
    $schema: { type: 'string', description: 'Where this schema is, for editors (JSON task files); not part of the task.' },
    ...(schema['properties'] as Record<string, Record<string, unknown>>),
  }
  const items = graderSpecSchema()
  for (const key of ['outcome_graders', 'graders']) {
    const property = properties[key]
    if (property !== undefined) properties[key] = { ...property, items }
  }
  return {
    ...schema,
    title: 'Forge task',
    properties,
    // the Task contract's refinement: exactly one of outcome_graders and its alias graders
    oneOf: [{ required: ['outcome_graders'] }, { required: ['graders'] }],
  }
}
