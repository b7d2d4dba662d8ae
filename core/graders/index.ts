/**
 * The tier-0 outcome graders, registered by name. A task's `outcome_graders` entries name one by
 * `type`; the rest of the entry is that grader's config, checked by its strict zod schema.
 */
import { z } from 'zod'
import type { AgentTrace, Grade, GraderSpec } from '../contracts/index.js'
import type { JudgeGraderReply } from '../judge/grader-prompt.js'
import type { JudgeRequest } from '../judge/protocol.js'
import { envQueryKey, type EnvQuery } from '../env-diff.js'
import type { GradeContext, GraderDefinition } from '../plugins.js'
import { containsGrader } from './contains.js'
import { GraderConfigError } from './errors.js'
import { exactGrader } from './exact.js'
import { fileGrader } from './file.js'
import { jsonSchemaGrader } from './json-schema.js'
import { judgeGrader } from './judge.js'
import { numericGrader } from './numeric.js'
import { regexGrader } from './regex.js'
import { sqlGrader } from './sql.js'
import { stateDiffGrader } from './state-diff.js'
import { toolSequenceGrader } from './tool-sequence.js'

export { GraderConfigError } from './errors.js'
export { extractNumber, outputText, selectOutput } from './output.js'
export { successfulToolNames } from './tool-sequence.js'
export { judgeGraderKey, type JudgeGraderVerdict } from './judge.js'

const all: GraderDefinition<any>[] = [
  exactGrader,
  containsGrader,
  regexGrader,
  numericGrader,
  toolSequenceGrader,
  fileGrader,
  sqlGrader,
  stateDiffGrader,
  jsonSchemaGrader,
  judgeGrader,
]

/** Every registered grader by its `type` name. */
export const graders: ReadonlyMap<string, GraderDefinition<any>> = new Map(all.map((grader) => [grader.name, grader]))

export interface GraderSpecProblem {
  path: (string | number)[]
  message: string
}

export type GraderSpecValidation = { ok: true } | { ok: false; problems: GraderSpecProblem[] }

/** Edit distance, for "did you mean" hints on misspelt keys and types. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i]
    for (let j = 1; j <= b.length; j += 1) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1)
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution))
    }
    previous = current
  }
  return previous[b.length] ?? 0
}

function closest(word: string, candidates: readonly string[]): string | undefined {
  let best: { candidate: string; distance: number } | undefined
  for (const candidate of candidates) {
    const distance = editDistance(word.toLowerCase(), candidate.toLowerCase())
    if (distance <= Math.max(2, Math.floor(candidate.length / 3)) && (best === undefined || distance < best.distance)) {
      best = { candidate, distance }
    }
  }
  return best?.candidate
}

function knownKeys(schema: z.ZodType): string[] {
  return schema instanceof z.ZodObject ? ['type', ...Object.keys(schema.shape)] : ['type']
}

function readPath(value: unknown, path: readonly PropertyKey[]): unknown {
  let current = value
  for (const segment of path) {
    if (current === null || typeof current !== 'object') return undefined
    current = (current as Record<PropertyKey, unknown>)[segment]
  }
  return current
}

function toPath(path: readonly PropertyKey[]): (string | number)[] {
  return path.map((segment) => (typeof segment === 'number' ? segment : String(segment)))
}

type ParsedConfig = { ok: true; grader: GraderDefinition<any>; config: unknown } | { ok: false; problems: GraderSpecProblem[] }

/** A suite's specs are parsed once, not on every attempt (they are the loaded suite's objects, never changed after loading). */
const parsedConfigs = new WeakMap<GraderSpec, ParsedConfig>()

function parseConfig(spec: GraderSpec): ParsedConfig {
  let parsed = parsedConfigs.get(spec)
  if (parsed === undefined) parsedConfigs.set(spec, (parsed = parseConfigOnce(spec)))
  return parsed
}

function parseConfigOnce(spec: GraderSpec): ParsedConfig {
  const { type, ...config } = spec
  const grader = graders.get(type)
  if (grader === undefined) {
    const known = [...graders.keys()].sort()
    const hint = closest(type, known)
    return {
      ok: false,
      problems: [
        { path: ['type'], message: `unknown grader type "${type}"${hint ? ` (did you mean "${hint}"?)` : ''}; known types: ${known.join(', ')}` },
      ],
    }
  }
  const parsed = grader.configSchema.safeParse(config)
  if (parsed.success) return { ok: true, grader, config: parsed.data }
  const keys = knownKeys(grader.configSchema)
  const problems = parsed.error.issues.flatMap((issue): GraderSpecProblem[] => {
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => {
        const hint = closest(key, keys)
        return {
          path: [...toPath(issue.path), key],
          message: `unknown key "${key}" for the ${type} grader${hint ? ` (did you mean "${hint}"?)` : ''}; known keys: ${keys.join(', ')}`,
        }
      })
    }
    const missing = issue.path.length > 0 && readPath(config, issue.path) === undefined
    return [{ path: toPath(issue.path), message: missing ? `required key missing for the ${type} grader` : issue.message }]
  })
  return { ok: false, problems }
}

/** Checks a grader spec from a task file: a known `type` and a config its grader accepts. */
export function validateGraderSpec(spec: GraderSpec): GraderSpecValidation {
  const result = parseConfig(spec)
  return result.ok ? { ok: true } : { ok: false, problems: result.problems }
}

/**
 * Runs every grader spec against one trace. Each grade is named by the spec's `name`, else its
 * `type`. Throws GraderConfigError for a spec `validateGraderSpec` rejects: a broken grader is
 * the harness's fault, so it must not be recorded as the agent failing.
 */
export function gradeAll(specs: GraderSpec[], trace: AgentTrace, ctx: GradeContext): Grade[] {
  return specs.map((spec) => {
    const parsed = parseConfig(spec)
    if (!parsed.ok) throw new GraderConfigError(spec.type, parsed.problems)
    const body = parsed.grader.grade(parsed.config, trace, ctx)
    const name = typeof spec['name'] === 'string' && spec['name'] !== '' ? spec['name'] : spec.type
    const grade: Grade = { grader: name, passed: body.passed, score: body.score, detail: body.detail }
    if (body.violation !== undefined) grade.violation = body.violation
    if (body.judge !== undefined) grade.judge = body.judge
    return grade
  })
}

/**
 * The read-only queries a task's graders need answered against the end state of its fixtures,
 * without duplicates; specs that do not validate are skipped (gradeAll reports them).
 */
export function envQueriesOf(specs: GraderSpec[]): EnvQuery[] {
  const seen = new Set<string>()
  const queries: EnvQuery[] = []
  for (const spec of specs) {
    const parsed = parseConfig(spec)
    if (!parsed.ok || parsed.grader.envQueries === undefined) continue
    for (const query of parsed.grader.envQueries(parsed.config)) {
      const key = envQueryKey(query)
      if (seen.has(key)) continue
      seen.add(key)
      queries.push(query)
    }
  }
  return queries
}

/** The environment fixtures a grader spec reads (name and, when it needs one, kind); [] for a spec that does not validate. */
export function fixtureRefsOf(spec: GraderSpec): { name: string; kind?: 'workspace' | 'sqlite' | 'http' }[] {
  const parsed = parseConfig(spec)
  if (!parsed.ok || parsed.grader.fixtureRefs === undefined) return []
  return parsed.grader.fixtureRefs(parsed.config)
}

/** A judge question a task's LLM-backed grader needs answered for one attempt (see GraderDefinition.judge). */
export interface PendingJudgeGrade {
  /** where the answer goes in GradeContext.judgements */
  key: string
  /** the grade's name (the spec's `name`, else its type) */
  grader: string
  /** the model the grader config names; undefined: the run's judge model */
  model: string | undefined
  request: JudgeRequest<JudgeGraderReply>
}

/** true when the spec names an LLM-backed grader (one that needs a judge call). */
export function isJudgeSpec(spec: GraderSpec): boolean {
  return graders.get(spec.type)?.judge !== undefined
}

/**
 * The judge questions of a task's LLM-backed graders for one trace, one per distinct config;
 * specs that do not validate are skipped (gradeAll reports them).
 */
export function judgeRequestsOf(specs: GraderSpec[], trace: AgentTrace, ctx: GradeContext, opts: { maxChars: number }): PendingJudgeGrade[] {
  const pending = new Map<string, PendingJudgeGrade>()
  for (const spec of specs) {
    const parsed = parseConfig(spec)
    if (!parsed.ok || parsed.grader.judge === undefined) continue
    const key = parsed.grader.judge.key(parsed.config)
    if (pending.has(key)) continue
    const name = typeof spec['name'] === 'string' && spec['name'] !== '' ? spec['name'] : spec.type
    pending.set(key, { key, grader: name, model: parsed.grader.judge.model(parsed.config), request: parsed.grader.judge.request(parsed.config, trace, ctx, opts) })
  }
  return [...pending.values()]
}
