/**
 * Forge's one JSON Schema checker, for every value checked against a suite's schema: outputs (the
 * `json_schema` grader) and tool arguments (the tool proxy, through core/tool-args.ts). It knows the
 * validation vocabulary of draft-07 / 2020-12 that answers and arguments are shaped with — type,
 * enum, const, objects, arrays, strings, numbers, combinators, if/then/else and local `$ref`s. A
 * keyword it does not know is a problem of the schema (reported by `schemaProblems`, which the
 * suite loader turns into a load error), never silently ignored: a checker that skips a rule would
 * pass answers or arguments it should refuse. Pure.
 */
import { patternHazard } from './regex-safety.js'

export type JsonSchema = Record<string, unknown> | boolean

/** One reason a value does not match: where (a JSON pointer–like path, `$` is the root) and why. */
export interface SchemaViolation {
  path: string
  message: string
}

const TYPES = ['null', 'boolean', 'object', 'array', 'number', 'integer', 'string'] as const
/** keywords that only describe (no effect on validity) */
const ANNOTATIONS = new Set([
  '$schema', '$id', '$comment', '$anchor', 'title', 'description', 'default', 'examples', 'readOnly', 'writeOnly', 'deprecated',
  'contentMediaType', 'contentEncoding',
])
const FORMATS: Record<string, RegExp> = {
  'date-time': /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/,
  date: /^\d{4}-\d{2}-\d{2}$/,
  time: /^\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})?$/,
  email: /^[^\s@]+@[^\s@]+\.[^\s@]+$/,
  uri: /^[A-Za-z][A-Za-z0-9+.-]*:[^\s]*$/,
  uuid: /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/,
  ipv4: /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/,
  hostname: /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/,
}

type Check = (value: unknown, keyword: unknown, path: string) => string | undefined

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)
const isSchema = (value: unknown): value is JsonSchema => typeof value === 'boolean' || isObject(value)
const isNonNegativeInteger = (value: unknown): boolean => typeof value === 'number' && Number.isInteger(value) && value >= 0
const codePoints = (text: string): number => [...text].length

function typeOf(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number'
  return typeof value
}

function hasType(value: unknown, type: string): boolean {
  const actual = typeOf(value)
  if (type === 'number') return (actual === 'number' || actual === 'integer') && Number.isFinite(value)
  return actual === type
}

/** Equality of JSON values (object key order does not matter). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a === 'number' && typeof b === 'number') return a === b
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((item, i) => jsonEqual(item, b[i]))
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a)
    return keys.length === Object.keys(b).length && keys.every((key) => Object.hasOwn(b, key) && jsonEqual(a[key], b[key]))
  }
  return false
}

const child = (path: string, key: string | number): string => (typeof key === 'number' ? `${path}[${key}]` : /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`)
const show = (value: unknown): string => {
  const text = JSON.stringify(value) ?? String(value)
  return text.length > 60 ? `${text.slice(0, 57)}...` : text
}

/** Keyword shape checks for `schemaProblems`: each returns why the keyword's value is malformed. */
const KEYWORD_SHAPES: Record<string, Check> = {
  type: (_v, k) =>
    (typeof k === 'string' ? [k] : Array.isArray(k) ? k : [null]).every((t) => typeof t === 'string' && (TYPES as readonly string[]).includes(t))
      ? undefined
      : `must be one of ${TYPES.join(', ')} or a list of them`,
  enum: (_v, k) => (Array.isArray(k) && k.length > 0 ? undefined : 'must be a non-empty array'),
  const: () => undefined,
  properties: (_v, k) => (isObject(k) && Object.values(k).every(isSchema) ? undefined : 'must be an object of schemas'),
  patternProperties: (_v, k) => {
    if (!isObject(k) || !Object.values(k).every(isSchema)) return 'must be an object of schemas'
    for (const pattern of Object.keys(k)) if (regexError(pattern)) return `pattern ${show(pattern)} ${regexError(pattern)}`
    return undefined
  },
  additionalProperties: (_v, k) => (isSchema(k) ? undefined : 'must be a schema or a boolean'),
  propertyNames: (_v, k) => (isSchema(k) ? undefined : 'must be a schema'),
  required: (_v, k) => (Array.isArray(k) && k.every((x) => typeof x === 'string') ? undefined : 'must be an array of property names'),
  dependentRequired: (_v, k) =>
    isObject(k) && Object.values(k).every((list) => Array.isArray(list) && list.every((x) => typeof x === 'string')) ? undefined : 'must map names to arrays of names',
  minProperties: (_v, k) => (isNonNegativeInteger(k) ? undefined : 'must be a non-negative integer'),
  maxProperties: (_v, k) => (isNonNegativeInteger(k) ? undefined : 'must be a non-negative integer'),
  items: (_v, k) => (isSchema(k) || (Array.isArray(k) && k.every(isSchema)) ? undefined : 'must be a schema or an array of schemas'),
  prefixItems: (_v, k) => (Array.isArray(k) && k.every(isSchema) ? undefined : 'must be an array of schemas'),
  additionalItems: (_v, k) => (isSchema(k) ? undefined : 'must be a schema or a boolean'),
  contains: (_v, k) => (isSchema(k) ? undefined : 'must be a schema'),
  minContains: (_v, k) => (isNonNegativeInteger(k) ? undefined : 'must be a non-negative integer'),
  maxContains: (_v, k) => (isNonNegativeInteger(k) ? undefined : 'must be a non-negative integer'),
  minItems: (_v, k) => (isNonNegativeInteger(k) ? undefined : 'must be a non-negative integer'),
  maxItems: (_v, k) => (isNonNegativeInteger(k) ? undefined : 'must be a non-negative integer'),
  uniqueItems: (_v, k) => (typeof k === 'boolean' ? undefined : 'must be a boolean'),
  minLength: (_v, k) => (isNonNegativeInteger(k) ? undefined : 'must be a non-negative integer'),
  maxLength: (_v, k) => (isNonNegativeInteger(k) ? undefined : 'must be a non-negative integer'),
  pattern: (_v, k) => (typeof k !== 'string' ? 'must be a string' : regexError(k)),
  format: (_v, k) => (typeof k === 'string' && Object.hasOwn(FORMATS, k) ? undefined : `must be one of ${Object.keys(FORMATS).join(', ')}`),
  minimum: (_v, k) => (Number.isFinite(k) ? undefined : 'must be a number'),
  maximum: (_v, k) => (Number.isFinite(k) ? undefined : 'must be a number'),
  exclusiveMinimum: (_v, k) => (Number.isFinite(k) ? undefined : 'must be a number'),
  exclusiveMaximum: (_v, k) => (Number.isFinite(k) ? undefined : 'must be a number'),
  multipleOf: (_v, k) => (typeof k === 'number' && k > 0 ? undefined : 'must be a number greater than 0'),
  allOf: (_v, k) => (Array.isArray(k) && k.length > 0 && k.every(isSchema) ? undefined : 'must be a non-empty array of schemas'),
  anyOf: (_v, k) => (Array.isArray(k) && k.length > 0 && k.every(isSchema) ? undefined : 'must be a non-empty array of schemas'),
  oneOf: (_v, k) => (Array.isArray(k) && k.length > 0 && k.every(isSchema) ? undefined : 'must be a non-empty array of schemas'),
  not: (_v, k) => (isSchema(k) ? undefined : 'must be a schema'),
  if: (_v, k) => (isSchema(k) ? undefined : 'must be a schema'),
  then: (_v, k) => (isSchema(k) ? undefined : 'must be a schema'),
  else: (_v, k) => (isSchema(k) ? undefined : 'must be a schema'),
  $ref: (_v, k) => (typeof k === 'string' && (k === '#' || k.startsWith('#/')) ? undefined : 'only local references (#/...) are supported'),
  $defs: (_v, k) => (isObject(k) && Object.values(k).every(isSchema) ? undefined : 'must be an object of schemas'),
  definitions: (_v, k) => (isObject(k) && Object.values(k).every(isSchema) ? undefined : 'must be an object of schemas'),
}

/** Why a schema's pattern cannot be used: it does not compile, or it could backtrack exponentially on an agent's argument (core/regex-safety.ts). */
function regexError(pattern: string): string | undefined {
  try {
    new RegExp(pattern, 'u')
  } catch (error) {
    return `does not compile: ${error instanceof Error ? error.message : String(error)}`
  }
  return patternHazard(pattern)
}

/** Subschemas of a schema, with the path segment under which each sits (for schemaProblems and $ref). */
function subschemas(schema: Record<string, unknown>): [string, unknown][] {
  const out: [string, unknown][] = []
  for (const key of ['properties', 'patternProperties', '$defs', 'definitions']) {
    const group = schema[key]
    if (isObject(group)) for (const [name, sub] of Object.entries(group)) out.push([`${key}/${name}`, sub])
  }
  for (const key of ['allOf', 'anyOf', 'oneOf', 'prefixItems']) {
    const list = schema[key]
    if (Array.isArray(list)) list.forEach((sub, i) => out.push([`${key}/${i}`, sub]))
  }
  const items = schema['items']
  if (Array.isArray(items)) items.forEach((sub, i) => out.push([`items/${i}`, sub]))
  else if (items !== undefined) out.push(['items', items])
  for (const key of ['additionalProperties', 'propertyNames', 'additionalItems', 'contains', 'not', 'if', 'then', 'else']) {
    if (schema[key] !== undefined) out.push([key, schema[key]])
  }
  return out
}

function resolvePointer(root: JsonSchema, ref: string): JsonSchema | undefined {
  if (ref === '#') return root
  let current: unknown = root
  for (const raw of ref.slice(2).split('/')) {
    const segment = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~')
    if (Array.isArray(current) && /^\d+$/.test(segment)) current = current[Number(segment)]
    else if (isObject(current) && Object.hasOwn(current, segment)) current = current[segment]
    else return undefined
  }
  return isSchema(current) ? current : undefined
}

/**
 * Why `schema` cannot be used: unknown keywords, malformed keyword values, references that do not
 * resolve. Empty when it is usable. Paths are JSON pointers into the schema (`#/properties/a`).
 */
export function schemaProblems(schema: unknown): string[] {
  if (!isSchema(schema)) return ['#: a schema must be an object or a boolean']
  const problems: string[] = []
  const visit = (node: unknown, pointer: string): void => {
    if (typeof node === 'boolean') return
    if (!isObject(node)) {
      problems.push(`${pointer}: a schema must be an object or a boolean`)
      return
    }
    for (const [keyword, value] of Object.entries(node)) {
      if (ANNOTATIONS.has(keyword)) continue
      const shape = KEYWORD_SHAPES[keyword]
      if (shape === undefined) {
        problems.push(`${pointer}: unsupported keyword "${keyword}"`)
        continue
      }
      const problem = shape(undefined, value, pointer)
      if (problem !== undefined) problems.push(`${pointer}/${keyword}: ${problem}`)
      else if (keyword === '$ref' && resolvePointer(schema, value as string) === undefined) problems.push(`${pointer}/$ref: ${show(value)} does not resolve`)
    }
    for (const [segment, sub] of subschemas(node)) if (isSchema(sub)) visit(sub, `${pointer}/${segment}`)
  }
  visit(schema, '#')
  return problems
}

/**
 * Where `value` breaks `schema` (at most `maxViolations`, default 20); [] when it matches. Paths
 * start at `root` (default `$`). The schema must have passed `schemaProblems`: malformed keywords
 * are skipped here, not reported.
 */
export function validateJson(schema: JsonSchema, value: unknown, opts: { maxViolations?: number; root?: string } = {}): SchemaViolation[] {
  const max = opts.maxViolations ?? 20
  const violations: SchemaViolation[] = []
  const refDepth = { current: 0 }
  check(schema, schema, value, opts.root ?? '$', violations, refDepth)
  return violations.slice(0, max)
}

/** true when `value` matches `schema`. */
export function matchesSchema(schema: JsonSchema, value: unknown): boolean {
  return validateJson(schema, value, { maxViolations: 1 }).length === 0
}

function check(root: JsonSchema, schema: JsonSchema, value: unknown, path: string, out: SchemaViolation[], refDepth: { current: number }): void {
  if (schema === true) return
  if (schema === false) {
    out.push({ path, message: 'no value is allowed here' })
    return
  }
  const fail = (message: string): void => {
    out.push({ path, message })
  }
  const sub = (s: unknown, v: unknown, p: string, into: SchemaViolation[] = out): void => {
    if (isSchema(s)) check(root, s, v, p, into, refDepth)
  }
  const passes = (s: unknown, v: unknown, p = path): boolean => {
    const local: SchemaViolation[] = []
    sub(s, v, p, local)
    return local.length === 0
  }

  const ref = schema['$ref']
  if (typeof ref === 'string') {
    const target = resolvePointer(root, ref)
    // a self-referencing schema over a deep value is fine; a cycle that consumes no input is not
    if (target !== undefined && refDepth.current < 200) {
      refDepth.current++
      check(root, target, value, path, out, refDepth)
      refDepth.current--
    }
  }

  const type = schema['type']
  if (type !== undefined) {
    const types = typeof type === 'string' ? [type] : Array.isArray(type) ? (type as string[]) : []
    if (types.length > 0 && !types.some((t) => hasType(value, t))) {
      const actual = typeOf(value) === 'integer' ? 'number' : typeOf(value)
      fail(`expected ${types.join(' or ')}, got ${value === null ? 'null' : `${actual} ${show(value)}`}`)
      return
    }
  }
  if (Array.isArray(schema['enum']) && !schema['enum'].some((option) => jsonEqual(option, value))) {
    fail(`${show(value)} is not one of ${show(schema['enum'])}`)
  }
  if (Object.hasOwn(schema, 'const') && !jsonEqual(schema['const'], value)) fail(`expected ${show(schema['const'])}, got ${show(value)}`)

  if (typeof value === 'string') {
    const length = codePoints(value)
    if (typeof schema['minLength'] === 'number' && length < schema['minLength']) fail(`shorter than ${schema['minLength']} characters (${length})`)
    if (typeof schema['maxLength'] === 'number' && length > schema['maxLength']) fail(`longer than ${schema['maxLength']} characters (${length})`)
    if (typeof schema['pattern'] === 'string' && regexError(schema['pattern']) === undefined && !new RegExp(schema['pattern'], 'u').test(value)) {
      fail(`${show(value)} does not match /${schema['pattern']}/`)
    }
    const format = typeof schema['format'] === 'string' ? FORMATS[schema['format']] : undefined
    if (format !== undefined && !format.test(value)) fail(`${show(value)} is not a valid ${String(schema['format'])}`)
  }

  if (typeof value === 'number') {
    const n = (key: string): number | undefined => (typeof schema[key] === 'number' ? (schema[key] as number) : undefined)
    const minimum = n('minimum')
    const maximum = n('maximum')
    const exclusiveMinimum = n('exclusiveMinimum')
    const exclusiveMaximum = n('exclusiveMaximum')
    const multipleOf = n('multipleOf')
    if (minimum !== undefined && value < minimum) fail(`${value} is less than the minimum ${minimum}`)
    if (maximum !== undefined && value > maximum) fail(`${value} is greater than the maximum ${maximum}`)
    if (exclusiveMinimum !== undefined && value <= exclusiveMinimum) fail(`${value} is not greater than ${exclusiveMinimum}`)
    if (exclusiveMaximum !== undefined && value >= exclusiveMaximum) fail(`${value} is not less than ${exclusiveMaximum}`)
    if (multipleOf !== undefined && multipleOf > 0) {
      const quotient = value / multipleOf
      // floating point: 0.3 / 0.1 is 2.9999999999999996
      if (Math.abs(quotient - Math.round(quotient)) > 1e-9) fail(`${value} is not a multiple of ${multipleOf}`)
    }
  }

  if (isObject(value)) {
    const keys = Object.keys(value)
    const required = Array.isArray(schema['required']) ? (schema['required'] as string[]) : []
    for (const name of required) if (!Object.hasOwn(value, name)) fail(`missing required property "${name}"`)
    const dependent = isObject(schema['dependentRequired']) ? schema['dependentRequired'] : {}
    for (const [name, needs] of Object.entries(dependent)) {
      if (!Object.hasOwn(value, name) || !Array.isArray(needs)) continue
      for (const other of needs as string[]) if (!Object.hasOwn(value, other)) fail(`property "${name}" requires "${other}"`)
    }
    if (typeof schema['minProperties'] === 'number' && keys.length < schema['minProperties']) fail(`fewer than ${schema['minProperties']} properties`)
    if (typeof schema['maxProperties'] === 'number' && keys.length > schema['maxProperties']) fail(`more than ${schema['maxProperties']} properties`)
    const properties = isObject(schema['properties']) ? schema['properties'] : {}
    const patterns = isObject(schema['patternProperties']) ? Object.entries(schema['patternProperties']).map(([p, s]) => [new RegExp(p, 'u'), s] as const) : []
    for (const key of keys) {
      const at = child(path, key)
      let matched = false
      if (Object.hasOwn(properties, key)) {
        matched = true
        sub(properties[key], value[key], at)
      }
      for (const [pattern, s] of patterns) {
        if (pattern.test(key)) {
          matched = true
          sub(s, value[key], at)
        }
      }
      if (!matched && schema['additionalProperties'] !== undefined) {
        if (schema['additionalProperties'] === false) fail(`unexpected property "${key}"`)
        else sub(schema['additionalProperties'], value[key], at)
      }
      if (schema['propertyNames'] !== undefined && !passes(schema['propertyNames'], key, at)) fail(`property name "${key}" is not allowed`)
    }
  }

  if (Array.isArray(value)) {
    if (typeof schema['minItems'] === 'number' && value.length < schema['minItems']) fail(`fewer than ${schema['minItems']} items (${value.length})`)
    if (typeof schema['maxItems'] === 'number' && value.length > schema['maxItems']) fail(`more than ${schema['maxItems']} items (${value.length})`)
    if (schema['uniqueItems'] === true) {
      for (let i = 0; i < value.length; i++) {
        const j = value.findIndex((other, index) => index > i && jsonEqual(value[i], other))
        if (j > i) {
          fail(`items ${i} and ${j} are equal`)
          break
        }
      }
    }
    // draft-07 tuples (`items: [...]` + additionalItems) and 2020-12 tuples (`prefixItems` + items)
    const tuple = Array.isArray(schema['prefixItems']) ? schema['prefixItems'] : Array.isArray(schema['items']) ? schema['items'] : undefined
    const rest = Array.isArray(schema['items']) ? schema['additionalItems'] : tuple !== undefined || schema['items'] !== undefined ? schema['items'] : undefined
    value.forEach((item, i) => {
      if (tuple !== undefined && i < tuple.length) sub(tuple[i], item, child(path, i))
      else if (rest === false) fail(`unexpected item ${i}`)
      else if (rest !== undefined) sub(rest, item, child(path, i))
    })
    if (schema['contains'] !== undefined) {
      const count = value.filter((item, i) => passes(schema['contains'], item, child(path, i))).length
      const min = typeof schema['minContains'] === 'number' ? schema['minContains'] : 1
      const maxContains = typeof schema['maxContains'] === 'number' ? schema['maxContains'] : Infinity
      if (count < min) fail(`${count} item(s) match "contains", at least ${min} must`)
      if (count > maxContains) fail(`${count} items match "contains", at most ${maxContains} may`)
    }
  }

  if (Array.isArray(schema['allOf'])) for (const s of schema['allOf']) sub(s, value, path)
  if (Array.isArray(schema['anyOf']) && !schema['anyOf'].some((s) => passes(s, value))) fail('matches none of the anyOf schemas')
  if (Array.isArray(schema['oneOf'])) {
    const matching = schema['oneOf'].filter((s) => passes(s, value)).length
    if (matching !== 1) fail(`matches ${matching} of the oneOf schemas, exactly one must`)
  }
  if (schema['not'] !== undefined && passes(schema['not'], value)) fail('matches the schema under "not"')
  if (schema['if'] !== undefined) {
    if (passes(schema['if'], value)) {
      if (schema['then'] !== undefined) sub(schema['then'], value, path)
    } else if (schema['else'] !== undefined) sub(schema['else'], value, path)
  }
}
