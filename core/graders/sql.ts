import { z } from 'zod'
import { canonicalJson, envQueryKey, looselyEqual } from '../env-diff.js'
import type { GraderDefinition } from '../plugins.js'
import { baseConfigShape, passFail } from './common.js'
import { quote } from './output.js'

const CHECKS = ['rows', 'value', 'count'] as const

export const SqlConfig = z
  .strictObject({
    ...baseConfigShape,
    /** the sqlite fixture to query (default `db`) */
    fixture: z.string().min(1).default('db'),
    /** a read-only query, run on the end state after the agent stopped */
    query: z.string().min(1),
    /** the rows the query returns, compared on the columns given; any order unless `ordered` */
    rows: z.array(z.record(z.string(), z.unknown())).optional(),
    ordered: z.boolean().default(false),
    /** the first column of the single row the query returns */
    value: z.union([z.string(), z.number(), z.boolean(), z.null()]).optional(),
    /** numeric `value`s may differ by this much */
    tolerance: z.number().nonnegative().default(0),
    /** how many rows the query returns */
    count: z.number().int().nonnegative().optional(),
  })
  .superRefine((config, ctx) => {
    const given = CHECKS.filter((check) => config[check] !== undefined)
    if (given.length !== 1) {
      ctx.addIssue({ code: 'custom', path: [], message: `give exactly one of ${CHECKS.join(', ')} (got ${given.length === 0 ? 'none' : given.join(', ')})` })
    }
  })
export type SqlConfig = z.output<typeof SqlConfig>

function rowMatches(actual: Record<string, unknown>, expected: Record<string, unknown>): boolean {
  return Object.entries(expected).every(([column, value]) => Object.hasOwn(actual, column) && looselyEqual(actual[column], value))
}

function sameRows(actual: Record<string, unknown>[], expected: Record<string, unknown>[], ordered: boolean): boolean {
  if (actual.length !== expected.length) return false
  if (ordered) return expected.every((row, i) => rowMatches(actual[i] as Record<string, unknown>, row))
  const left = [...actual]
  for (const row of expected) {
    const at = left.findIndex((candidate) => rowMatches(candidate, row))
    if (at < 0) return false
    left.splice(at, 1)
  }
  return true
}

export const sqlGrader: GraderDefinition<SqlConfig> = {
  name: 'sql',
  description:
    "A read-only query against the end state of a sqlite fixture returns `rows` (on the columns given, any order unless `ordered`), a single `value` (± `tolerance`) or `count` rows — exactly one.",
  configSchema: SqlConfig,
  fixtureRefs(config) {
    return [{ name: config.fixture, kind: 'sqlite' }]
  },
  envQueries(config) {
    return [{ fixture: config.fixture, sql: config.query }]
  },
  grade(config, _trace, ctx) {
    const answer = ctx.env?.queries[envQueryKey({ fixture: config.fixture, sql: config.query })]
    if (ctx.env === undefined || ctx.env.end[config.fixture]?.kind !== 'sqlite') {
      return passFail(false, `no sqlite fixture "${config.fixture}" in this attempt's environment`)
    }
    if (answer === undefined) return passFail(false, `the query was not run against "${config.fixture}"`)
    // a query that fails only on the end state means the agent broke the schema it needs
    if (!answer.ok) return passFail(false, `the query failed on the end state: ${answer.error}`)
    const rows = answer.rows
    const shown = quote(canonicalJson(rows), 200)
    if (config.count !== undefined) {
      return passFail(rows.length === config.count, `${rows.length} row(s), expected ${config.count}: ${shown}`)
    }
    if (config.rows !== undefined) {
      const ok = sameRows(rows, config.rows, config.ordered)
      return passFail(ok, ok ? `rows match ${quote(canonicalJson(config.rows), 200)}` : `rows are ${shown}, expected ${quote(canonicalJson(config.rows), 200)}${config.ordered ? ' in order' : ''}`)
    }
    const first = rows[0]
    if (rows.length !== 1 || first === undefined) return passFail(false, `expected one row, got ${rows.length}: ${shown}`)
    const value = Object.values(first)[0]
    const expected = config.value
    const ok =
      typeof expected === 'number' && (typeof value === 'number' || (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))))
        ? Math.abs(Number(value) - expected) <= config.tolerance
        : looselyEqual(value, expected)
    return passFail(ok, `value ${quote(canonicalJson(value))}, expected ${quote(canonicalJson(expected))}${config.tolerance > 0 ? ` ± ${config.tolerance}` : ''}`)
  },
}
