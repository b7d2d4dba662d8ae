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
  it('names the path and both types of a mismatch', () => {
    expect(validateToolArgs(addSchema, { a: '1', b: 2 })).toEqual(['args.a: expected number, got string'])
  })
  it('reports missing required and unexpected properties', () => {
    expect(validateToolArgs(addSchema, { a: 1, c: 3 })).toEqual(['args.b: required property missing', 'args.c: unexpected property'])
  })
  it('allows extra properties unless additionalProperties is false', () => {
    expect(validateToolArgs({ type: 'object', properties: { a: { type: 'number' } } }, { a: 1, extra: true })).toEqual([])
  })
  it('checks extra properties against an additionalProperties schema', () => {
    expect(validateToolArgs({ type: 'object', additionalProperties: { type: 'string' } }, { x: 'ok', y: 2 })).toEqual(['args.y: expected string, got number'])
  })
  it('rejects a non-object where an object is expected', () => {
    expect([validateToolArgs(addSchema, null), validateToolArgs(addSchema, [1, 2]), validateToolArgs(addSchema, 'a=1')]).toEqual([
      ['args: expected object, got null'],
      ['args: expected object, got array'],
      ['args: expected object, got string'],
    ])
  })
  it('tells integers from other numbers', () => {
    const schema = { type: 'object', properties: { n: { type: 'integer' } } }
    expect(validateToolArgs(schema, { n: 3 })).toEqual([])
    expect(validateToolArgs(schema, { n: 3.5 })).toEqual(['args.n: expected integer, got number'])
  })
  it('checks booleans', () => {
    expect(validateToolArgs({ type: 'object', properties: { f: { type: 'boolean' } } }, { f: 'true' })).toEqual(['args.f: expected boolean, got string'])
  })
  it('checks enums', () => {
    const schema = { type: 'object', properties: { unit: { type: 'string', enum: ['c', 'f'] } } }
    expect(validateToolArgs(schema, { unit: 'f' })).toEqual([])
    expect(validateToolArgs(schema, { unit: 'k' })).toEqual(['args.unit: expected one of "c", "f", got "k"'])
  })
  it('checks array items with their index', () => {
    const schema = { type: 'object', properties: { ids: { type: 'array', items: { type: 'integer' } } } }
    expect(validateToolArgs(schema, { ids: [1, 2] })).toEqual([])
    expect(validateToolArgs(schema, { ids: [1, 'two', 3, null] })).toEqual(['args.ids[1]: expected integer, got string', 'args.ids[3]: expected integer, got null'])
  })
  it('checks nested objects and quotes awkward keys', () => {
    const schema = {
      type: 'object',
      properties: { filter: { type: 'object', properties: { 'max-age': { type: 'number' } }, required: ['max-age'] } },
    }
    expect(validateToolArgs(schema, { filter: {} })).toEqual(['args.filter["max-age"]: required property missing'])
  })
  it('accepts a list of types', () => {
    const schema = { type: 'object', properties: { v: { type: ['string', 'null'] } } }
    expect(validateToolArgs(schema, { v: null })).toEqual([])
    expect(validateToolArgs(schema, { v: 1 })).toEqual(['args.v: expected string or null, got number'])
  })
  it('collects every problem, not just the first', () => {
    expect(validateToolArgs(addSchema, { a: true, b: 'x', z: 0 })).toEqual([
      'args.a: expected number, got boolean',
      'args.b: expected number, got string',
      'args.z: unexpected property',
    ])
  })
  it('accepts anything under an empty schema', () => {
    expect(validateToolArgs({}, { anything: [1, 'x'] })).toEqual([])
  })
  it('does not take inherited names as declared properties', () => {
    expect(validateToolArgs(addSchema, JSON.parse('{"a":1,"b":2,"toString":1}'))).toEqual(['args.toString: unexpected property'])
  })
})
