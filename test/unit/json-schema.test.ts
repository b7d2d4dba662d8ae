import { describe, expect, it } from 'vitest'
import { jsonEqual, matchesSchema, schemaProblems, validateJson } from '../../core/json-schema.js'

describe('schemaProblems', () => {
  it('accepts the validation vocabulary answers are shaped with', () => {
    expect(
      schemaProblems({
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        title: 'order',
        type: 'object',
        properties: {
          id: { type: 'integer', minimum: 1 },
          tags: { type: 'array', items: { type: 'string', minLength: 1 }, uniqueItems: true },
          kind: { enum: ['a', 'b'] },
          when: { type: 'string', format: 'date' },
          ref: { $ref: '#/$defs/ref' },
        },
        required: ['id'],
        additionalProperties: false,
        $defs: { ref: { anyOf: [{ type: 'string' }, { type: 'null' }] } },
      }),
    ).toEqual([])
    expect(schemaProblems(true)).toEqual([])
  })
  it('names unknown keywords, malformed keyword values and dangling references, with their place', () => {
    expect(
      schemaProblems({
        type: 'obj',
        properties: { a: { tpye: 'string' }, b: { minLength: -1 }, c: { pattern: '(' } },
        required: 'a',
        items: { $ref: '#/$defs/missing' },
        format: 'colour',
      }),
    ).toEqual([
      '#/type: must be one of null, boolean, object, array, number, integer, string or a list of them',
      '#/required: must be an array of property names',
      '#/format: must be one of date-time, date, time, email, uri, uuid, ipv4, hostname',
      '#/properties/a: unsupported keyword "tpye"',
      '#/properties/b/minLength: must be a non-negative integer',
      expect.stringMatching(/^#\/properties\/c\/pattern: does not compile: /),
      '#/items/$ref: "#/$defs/missing" does not resolve',
    ])
    expect(schemaProblems('string')).toEqual(['#: a schema must be an object or a boolean'])
    expect(schemaProblems({ $ref: 'https://example.com/schema.json' })).toEqual(['#/$ref: only local references (#/...) are supported'])
  })
})

describe('validateJson', () => {
  const order = {
    type: 'object',
    properties: {
      id: { type: 'integer', minimum: 1 },
      total: { type: 'number', exclusiveMinimum: 0, multipleOf: 0.01 },
      status: { enum: ['open', 'closed'] },
      items: { type: 'array', minItems: 1, items: { type: 'object', properties: { sku: { type: 'string', pattern: '^[A-Z]{3}-\\d+$' } }, required: ['sku'] } },
      email: { type: 'string', format: 'email' },
    },
    required: ['id', 'status'],
    additionalProperties: false,
  }

  it('passes a value that matches', () => {
    expect(validateJson(order, { id: 7, total: 19.99, status: 'open', items: [{ sku: 'ABC-1' }], email: 'a@b.io' })).toEqual([])
  })
  it('reports every violation with its path', () => {
    expect(validateJson(order, { id: 0, total: 0.001, status: 'lost', items: [{ sku: 'abc' }, {}], extra: 1, email: 'nope' })).toEqual([
      { path: '$.id', message: '0 is less than the minimum 1' },
      { path: '$.total', message: '0.001 is not a multiple of 0.01' },
      { path: '$.status', message: '"lost" is not one of ["open","closed"]' },
      { path: '$.items[0].sku', message: '"abc" does not match /^[A-Z]{3}-\\d+$/' },
      { path: '$.items[1]', message: 'missing required property "sku"' },
      { path: '$', message: 'unexpected property "extra"' },
      { path: '$.email', message: '"nope" is not a valid email' },
    ])
  })
  it('stops at a wrong type without piling up follow-on errors', () => {
    expect(validateJson(order, [1, 2])).toEqual([{ path: '$', message: 'expected object, got array [1,2]' }])
    expect(validateJson({ type: 'integer' }, 1.5)).toEqual([{ path: '$', message: 'expected integer, got number 1.5' }])
    expect(validateJson({ type: ['string', 'null'] }, null)).toEqual([])
  })
  it('handles combinators, conditionals, tuples, contains and references', () => {
    expect(matchesSchema({ oneOf: [{ type: 'string' }, { type: 'number' }] }, 'x')).toBe(true)
    expect(validateJson({ oneOf: [{ type: 'number' }, { type: 'integer' }] }, 3)).toEqual([{ path: '$', message: 'matches 2 of the oneOf schemas, exactly one must' }])
    expect(matchesSchema({ not: { const: 'x' } }, 'x')).toBe(false)
    // as in JSON Schema: without `required`, an absent `kind` satisfies the `if`
    const conditional = { if: { properties: { kind: { const: 'refund' } }, required: ['kind'] }, then: { required: ['amount'] }, else: { required: ['reason'] } }
    expect([matchesSchema(conditional, { kind: 'refund', amount: 1 }), matchesSchema(conditional, { kind: 'refund' }), matchesSchema(conditional, { reason: 'r' })]).toEqual([true, false, true])
    expect(validateJson({ prefixItems: [{ type: 'string' }, { type: 'number' }], items: false }, ['a', 1, true])).toEqual([{ path: '$', message: 'unexpected item 2' }])
    expect(validateJson({ type: 'array', contains: { const: 5 }, maxContains: 1 }, [5, 5])).toEqual([{ path: '$', message: '2 items match "contains", at most 1 may' }])
    const tree = { $defs: { node: { type: 'object', properties: { children: { type: 'array', items: { $ref: '#/$defs/node' } } } } }, $ref: '#/$defs/node' }
    expect(matchesSchema(tree, { children: [{ children: [] }, { children: [{}] }] })).toBe(true)
    expect(matchesSchema(tree, { children: [{ children: 'no' }] })).toBe(false)
    expect(validateJson({ type: 'array', uniqueItems: true }, [{ a: 1, b: 2 }, { b: 2, a: 1 }])).toEqual([{ path: '$', message: 'items 0 and 1 are equal' }])
  })
  it('counts string length in code points and caps the number of violations', () => {
    expect(matchesSchema({ type: 'string', maxLength: 2 }, '😀😀')).toBe(true)
    expect(validateJson({ type: 'array', items: { type: 'string' } }, Array(50).fill(1), { maxViolations: 3 })).toHaveLength(3)
  })
  it('compares JSON values regardless of key order', () => {
    expect(jsonEqual({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toBe(true)
    expect(jsonEqual({ a: 1 }, { a: 1, b: undefined })).toBe(false)
    expect(jsonEqual([1, 2], [2, 1])).toBe(false)
  })
})
