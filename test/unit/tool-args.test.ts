import { describe, expect, it } from 'vitest'
import { validateToolArgs } from '../../core/tool-args.js'

const addSchema = {
  type: 'object',
  properties: { a: { type: 'number' }, b: { type: 'number' } },
  required: ['a', 'b'],
  additionalProperties: false,
}

describe('validateToolArgs', () => {
  it('accepts valid args', () => {
    expect(validateToolArgs(addSchema, { a: 1, b: 2.5 })).toEqual([])
  })
  it('names the path, the expected type and the value of a mismatch', () => {
    expect(validateToolArgs(addSchema, { a: '1', b: 2 })).toEqual(['args.a: expected number, got string "1"'])
  })
  it('reports missing required and unexpected properties', () => {
    expect(validateToolArgs(addSchema, { a: 1, c: 3 })).toEqual(['args: missing required property "b"', 'args: unexpected property "c"'])
  })
  it('allows extra properties unless additionalProperties is false', () => {
    expect(validateToolArgs({ type: 'object', properties: { a: { type: 'number' } } }, { a: 1, extra: true })).toEqual([])
  })
  it('checks extra properties against an additionalProperties schema', () => {
    expect(validateToolArgs({ type: 'object', additionalProperties: { type: 'string' } }, { x: 'ok', y: 2 })).toEqual(['args.y: expected string, got number 2'])
  })
  it('rejects a non-object where an object is expected', () => {
    expect([validateToolArgs(addSchema, null), validateToolArgs(addSchema, [1, 2]), validateToolArgs(addSchema, 'a=1')]).toEqual([
      ['args: expected object, got null'],
      ['args: expected object, got array [1,2]'],
      ['args: expected object, got string "a=1"'],
    ])
  })
  it('tells integers from other numbers', () => {
    const schema = { type: 'object', properties: { n: { type: 'integer' } } }
    expect(validateToolArgs(schema, { n: 3 })).toEqual([])
    expect(validateToolArgs(schema, { n: 3.5 })).toEqual(['args.n: expected integer, got number 3.5'])
  })
  it('checks enums', () => {
    const schema = { type: 'object', properties: { unit: { type: 'string', enum: ['c', 'f'] } } }
    expect(validateToolArgs(schema, { unit: 'f' })).toEqual([])
    expect(validateToolArgs(schema, { unit: 'k' })).toEqual(['args.unit: "k" is not one of ["c","f"]'])
  })
  it('checks array items with their index', () => {
    const schema = { type: 'object', properties: { ids: { type: 'array', items: { type: 'integer' } } } }
    expect(validateToolArgs(schema, { ids: [1, 2] })).toEqual([])
    expect(validateToolArgs(schema, { ids: [1, 'two', 3, null] })).toEqual(['args.ids[1]: expected integer, got string "two"', 'args.ids[3]: expected integer, got null'])
  })
  it('checks nested objects and quotes awkward keys', () => {
    const schema = {
      type: 'object',
      properties: { filter: { type: 'object', properties: { 'max-age': { type: 'number', minimum: 0 } }, required: ['max-age'] } },
    }
    expect(validateToolArgs(schema, { filter: {} })).toEqual(['args.filter: missing required property "max-age"'])
    expect(validateToolArgs(schema, { filter: { 'max-age': -1 } })).toEqual(['args.filter["max-age"]: -1 is less than the minimum 0'])
  })
  it('accepts a list of types', () => {
    const schema = { type: 'object', properties: { v: { type: ['string', 'null'] } } }
    expect(validateToolArgs(schema, { v: null })).toEqual([])
    expect(validateToolArgs(schema, { v: 1 })).toEqual(['args.v: expected string or null, got number 1'])
  })
  it('collects every problem, not just the first', () => {
    expect(validateToolArgs(addSchema, { a: true, b: 'x', z: 0 })).toEqual([
      'args.a: expected number, got boolean true',
      'args.b: expected number, got string "x"',
      'args: unexpected property "z"',
    ])
  })
  it('accepts anything under an empty schema', () => {
    expect(validateToolArgs({}, { anything: [1, 'x'] })).toEqual([])
  })
  it('does not take inherited names as declared properties', () => {
    expect(validateToolArgs(addSchema, JSON.parse('{"a":1,"b":2,"toString":1}'))).toEqual(['args: unexpected property "toString"'])
  })

  // the keywords the old tool-argument checker ignored while the json_schema grader enforced them
  const limits = {
    type: 'object',
    properties: {
      qty: { type: 'integer', minimum: 1, maximum: 10 },
      sku: { type: 'string', pattern: '^[A-Z]{3}-\\d+$', maxLength: 8 },
      ratio: { type: 'number', exclusiveMinimum: 0, multipleOf: 0.5 },
      tags: { type: 'array', items: { type: 'string', minLength: 1 }, maxItems: 2, uniqueItems: true },
      email: { type: 'string', format: 'email' },
    },
  }
  it('enforces the same value limits as the json_schema grader', () => {
    expect(validateToolArgs(limits, { qty: 3, sku: 'ABC-12', ratio: 1.5, tags: ['a', 'b'], email: 'a@b.io' })).toEqual([])
    expect(validateToolArgs(limits, { qty: 0, sku: 'abc-1', ratio: 0, tags: ['', 'x', 'x'], email: 'nope' })).toEqual([
      'args.qty: 0 is less than the minimum 1',
      'args.sku: "abc-1" does not match /^[A-Z]{3}-\\d+$/',
      'args.ratio: 0 is not greater than 0',
      'args.tags: more than 2 items (3)',
      'args.tags: items 1 and 2 are equal',
      'args.tags[0]: shorter than 1 characters (0)',
      'args.email: "nope" is not a valid email',
    ])
    expect(validateToolArgs(limits, { qty: 11, sku: 'ABC-123456', ratio: 0.7 })).toEqual([
      'args.qty: 11 is greater than the maximum 10',
      'args.sku: longer than 8 characters (10)',
      'args.ratio: 0.7 is not a multiple of 0.5',
    ])
  })
  it('follows combinators and local references', () => {
    const schema = {
      type: 'object',
      $defs: { id: { type: 'string', pattern: '^T-\\d+$' } },
      properties: { ticket: { $ref: '#/$defs/id' }, action: { oneOf: [{ const: 'close' }, { const: 'reopen' }] } },
    }
    expect(validateToolArgs(schema, { ticket: 'T-1', action: 'close' })).toEqual([])
    expect(validateToolArgs(schema, { ticket: '1', action: 'delete' })).toEqual([
      'args.ticket: "1" does not match /^T-\\d+$/',
      'args.action: matches 0 of the oneOf schemas, exactly one must',
    ])
  })
})
