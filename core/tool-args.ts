/**
 * A small JSON Schema subset checker for tool arguments: type (object, string, number, integer,
 * boolean, array, null, or a list of them), properties, required, additionalProperties (false or
 * a schema), enum and items. Other keywords are ignored.
 */

type Schema = Record<string, unknown>

function isSchema(value: unknown): value is Schema {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}

function typeOf(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : Number.isNaN(value) ? 'NaN' : 'number'
  return typeof value
}

function matchesType(value: unknown, type: string): boolean {
  const actual = typeOf(value)
  switch (type) {
    case 'number':
      return (actual === 'number' || actual === 'integer') && Number.isFinite(value)
    case 'integer':
      return actual === 'integer'
    default:
      return actual === type
  }
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/
const childPath = (path: string, key: string): string => (IDENTIFIER.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`)

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  return JSON.stringify(a) === JSON.stringify(b)
}

function show(value: unknown): string {
  return value === undefined ? 'undefined' : JSON.stringify(value)
}

function check(schema: Schema, value: unknown, path: string, problems: string[]): void {
  const { type } = schema
  const types = typeof type === 'string' ? [type] : Array.isArray(type) ? type.filter((t): t is string => typeof t === 'string') : []
  if (types.length > 0 && !types.some((t) => matchesType(value, t))) {
    // an integer is a number too; say "number" unless the schema asked for an integer specifically
    const actual = typeOf(value) === 'integer' ? 'number' : typeOf(value)
    problems.push(`${path}: expected ${types.join(' or ')}, got ${actual}`)
    return
  }
  if (Array.isArray(schema['enum']) && !schema['enum'].some((option) => sameValue(option, value))) {
    problems.push(`${path}: expected one of ${schema['enum'].map(show).join(', ')}, got ${show(value)}`)
  }
  if (isSchema(value)) checkObject(schema, value, path, problems)
  if (Array.isArray(value) && isSchema(schema['items'])) {
    const items = schema['items']
    value.forEach((item, i) => check(items, item, `${path}[${i}]`, problems))
  }
}

function checkObject(schema: Schema, value: Record<string, unknown>, path: string, problems: string[]): void {
  const properties = isSchema(schema['properties']) ? schema['properties'] : {}
  const required = Array.isArray(schema['required']) ? schema['required'].filter((r): r is string => typeof r === 'string') : []
  for (const key of required) {
    if (!Object.hasOwn(value, key)) problems.push(`${childPath(path, key)}: required property missing`)
  }
  const additional = schema['additionalProperties']
  for (const [key, child] of Object.entries(value)) {
    const propertySchema = Object.hasOwn(properties, key) ? properties[key] : undefined
    if (isSchema(propertySchema)) check(propertySchema, child, childPath(path, key), problems)
    else if (propertySchema !== undefined) continue
    else if (additional === false) problems.push(`${childPath(path, key)}: unexpected property`)
    else if (isSchema(additional)) check(additional, child, childPath(path, key), problems)
  }
}

/** Problems with `args` against a tool's input schema, each naming its path (`args.a: expected number, got string`); [] = valid. */
export function validateToolArgs(schema: Record<string, unknown>, args: unknown): string[] {
  const problems: string[] = []
  check(schema, args, 'args', problems)
  return problems
}
