import { z } from 'zod'
import { canonicalJson, looselyEqual, type FileState } from '../env-diff.js'
import type { GraderDefinition } from '../plugins.js'
import { baseConfigShape, passFail, type GradeBody } from './common.js'
import { quote } from './output.js'
import { parseUntrustedJson } from '../untrusted-json.js'
import { patternHazard } from '../regex-safety.js'

const CHECKS = ['exists', 'equals', 'contains', 'regex', 'json'] as const

export const FileConfig = z
  .strictObject({
    ...baseConfigShape,
    /** the workspace fixture to read (default `workspace`) */
    fixture: z.string().min(1).default('workspace'),
    /** the file, relative to the workspace root */
    path: z.string().min(1),
    /** true: the file exists; false: it does not */
    exists: z.boolean().optional(),
    /** the whole content (compared after trimming when `trim`) */
    equals: z.string().optional(),
    /** the content contains this text (every one, when a list) */
    contains: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).optional(),
    /** the content matches this regular expression (flags with `flags`) */
    regex: z.string().min(1).optional(),
    flags: z.string().regex(/^[imsu]*$/, 'flags may only be i, m, s, u').default(''),
    /** the content parses as JSON equal to this (a subset of it when `partial`) */
    json: z.unknown().optional(),
    partial: z.boolean().default(false),
    trim: z.boolean().default(true),
    case_sensitive: z.boolean().default(true),
  })
  .superRefine((config, ctx) => {
    const given = CHECKS.filter((check) => config[check] !== undefined)
    if (given.length !== 1) {
      ctx.addIssue({ code: 'custom', path: [], message: `give exactly one of ${CHECKS.join(', ')} (got ${given.length === 0 ? 'none' : given.join(', ')})` })
    }
    if (config.regex !== undefined) {
      try {
        new RegExp(config.regex, config.flags)
        const hazard = patternHazard(config.regex)
        if (hazard !== undefined) ctx.addIssue({ code: 'custom', path: ['regex'], message: `the regular expression ${hazard}` })
      } catch (error) {
        ctx.addIssue({ code: 'custom', path: ['regex'], message: `not a valid regular expression: ${error instanceof Error ? error.message : String(error)}` })
      }
    }
  })
export type FileConfig = z.output<typeof FileConfig>

/** `actual` holds `expected`: objects by their listed keys, arrays element by element, leaves loosely. */
export function jsonSubset(actual: unknown, expected: unknown): boolean {
  if (Array.isArray(expected)) {
    return Array.isArray(actual) && actual.length === expected.length && expected.every((item, i) => jsonSubset(actual[i], item))
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return false
    return Object.entries(expected).every(([key, value]) => Object.hasOwn(actual, key) && jsonSubset((actual as Record<string, unknown>)[key], value))
  }
  return looselyEqual(actual, expected)
}

function check(config: FileConfig, file: FileState): GradeBody {
  const where = `${config.fixture}:${config.path}`
  if (config.exists !== undefined) return passFail(config.exists, config.exists ? `${where} exists` : `${where} exists but must not`)
  if (file.text === undefined) return passFail(false, `${where} is binary or too large to read (${file.size} bytes)`)
  const text = config.trim ? file.text.trim() : file.text
  const fold = (s: string): string => (config.case_sensitive ? s : s.toLowerCase())
  if (config.equals !== undefined) {
    const expected = config.trim ? config.equals.trim() : config.equals
    return fold(text) === fold(expected) ? passFail(true, `${where} equals ${quote(expected)}`) : passFail(false, `${where} is ${quote(text)}, expected ${quote(expected)}`)
  }
  if (config.contains !== undefined) {
    const needles = typeof config.contains === 'string' ? [config.contains] : config.contains
    const missing = needles.filter((needle) => !fold(text).includes(fold(needle)))
    const score = (needles.length - missing.length) / needles.length
    if (missing.length === 0) return { passed: true, score, detail: `${where} contains ${needles.map((n) => quote(n)).join(', ')}` }
    return { passed: false, score, detail: `${where} lacks ${missing.map((n) => quote(n)).join(', ')}: ${quote(text)}` }
  }
  if (config.regex !== undefined) {
    const pattern = new RegExp(config.regex, config.flags)
    return pattern.test(text) ? passFail(true, `${where} matches /${config.regex}/`) : passFail(false, `${where} does not match /${config.regex}/: ${quote(text)}`)
  }
  let parsed: unknown
  try {
    parsed = parseUntrustedJson(file.text)
  } catch {
    return passFail(false, `${where} is not JSON: ${quote(text)}`)
  }
  const ok = config.partial ? jsonSubset(parsed, config.json) : canonicalJson(parsed) === canonicalJson(config.json)
  return ok
    ? passFail(true, `${where} holds ${config.partial ? 'at least ' : ''}${quote(canonicalJson(config.json))}`)
    : passFail(false, `${where} is ${quote(canonicalJson(parsed))}, expected ${config.partial ? 'at least ' : ''}${quote(canonicalJson(config.json))}`)
}

export const fileGrader: GraderDefinition<FileConfig> = {
  name: 'file',
  description:
    "A workspace file in the attempt's end state: `exists`, `equals` (trimmed), `contains`, `regex` or `json` (`partial` for a subset) — exactly one.",
  configSchema: FileConfig,
  fixtureRefs(config) {
    return [{ name: config.fixture, kind: 'workspace' }]
  },
  grade(config, _trace, ctx) {
    const state = ctx.env?.end[config.fixture]
    if (state === undefined || state.kind !== 'workspace') return passFail(false, `no workspace fixture "${config.fixture}" in this attempt's environment`)
    const file = state.files[config.path.replace(/^\.\//, '')]
    if (file === undefined) {
      if (config.exists === false) return passFail(true, `${config.fixture}:${config.path} does not exist`)
      return passFail(false, `${config.fixture}:${config.path} does not exist`)
    }
    return check(config, file)
  },
}
