import { describe, expect, it } from 'vitest'
import { graders } from '../../core/graders/index.js'
import { taskJsonSchema } from '../../core/task-json-schema.js'

type Json = Record<string, any>

describe('taskJsonSchema', () => {
  const schema = taskJsonSchema() as Json

  it('is a draft-07 object schema of the task file as written', () => {
    expect(schema['$schema']).toBe('http://json-schema.org/draft-07/schema#')
    expect(schema['type']).toBe('object')
    expect(schema['additionalProperties']).toBe(false)
    expect(schema['required']).toEqual(['id', 'instruction'])
    expect(Object.keys(schema['properties']).sort()).toEqual(
      ['$schema', 'budget', 'category', 'disallowed_tools', 'fixtures', 'golden', 'graders', 'id', 'input', 'instruction', 'invariants', 'outcome_graders', 'tags', 'tools'],
    )
  })
  it('requires exactly one of outcome_graders and its alias graders', () => {
    expect(schema['oneOf']).toEqual([{ required: ['outcome_graders'] }, { required: ['graders'] }])
  })
  it('shows defaults, as written in the file (input side)', () => {
    expect(schema['properties']['budget']['properties']['max_tool_calls']['default']).toBe(20)
    expect(schema['properties']['category']['default']).toBe('general')
  })
  it('spells out each grader config for completion, under both grader keys', () => {
    const items = schema['properties']['outcome_graders']['items']
    expect(schema['properties']['graders']['items']).toEqual(items)
    const regex = items['anyOf'].find((variant: Json) => variant['properties']['type']['const'] === 'regex')
    expect(regex).toEqual({
      type: 'object',
      description: graders.get('regex')?.description,
      properties: {
        type: { const: 'regex' },
        name: { type: 'string', minLength: 1 },
        field: { type: 'string', minLength: 1 },
        pattern: { type: 'string', minLength: 1 },
        flags: { type: 'string' },
      },
      required: ['type', 'pattern'],
      additionalProperties: false,
    })
    expect(items['anyOf'].map((variant: Json) => variant['properties']['type']['const']).sort()).toEqual([
      'contains',
      'exact',
      'file',
      'json_schema',
      'judge',
      'numeric',
      'regex',
      'sql',
      'state_diff',
      'tool_sequence',
    ])
  })
})
