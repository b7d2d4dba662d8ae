import { z } from 'zod'
import { describeChange, matchesChange, type EnvChange } from '../env-diff.js'
import type { GraderDefinition } from '../plugins.js'
import { baseConfigShape, passFail } from './common.js'

const selectorShape = {
  fixture: z.string().min(1).optional(),
  op: z.enum(['added', 'removed', 'modified', 'any']).optional(),
  /** a workspace file (or http document) path; a glob: `*`, `?`, `**` */
  path: z.string().min(1).optional(),
  table: z.string().min(1).optional(),
  collection: z.string().min(1).optional(),
  key: z.record(z.string(), z.unknown()).optional(),
  before: z.record(z.string(), z.unknown()).optional(),
  after: z.record(z.string(), z.unknown()).optional(),
  /** the state after the change contains this text (a file's text, a row's or record's JSON) */
  contains: z.string().min(1).optional(),
}

const ChangeSelector = z.strictObject(selectorShape)
const ExpectedChange = z.strictObject({
  ...selectorShape,
  /** exactly this many matching changes (default: at least one) */
  count: z.number().int().nonnegative().optional(),
})

export const StateDiffConfig = z
  .strictObject({
    ...baseConfigShape,
    /** changes that must have happened */
    expect: z.array(ExpectedChange).default([]),
    /** Never-rules: a matching change is a violation, even when the task got done */
    must_not_change: z.array(ChangeSelector).default([]),
    /** false: every change must match an `expect` entry */
    allow_other_changes: z.boolean().default(true),
  })
  .superRefine((config, ctx) => {
    if (config.expect.length === 0 && config.must_not_change.length === 0 && config.allow_other_changes) {
      ctx.addIssue({ code: 'custom', path: [], message: 'give `expect`, `must_not_change` or `allow_other_changes: false` (else the grader checks nothing)' })
    }
  })
export type StateDiffConfig = z.output<typeof StateDiffConfig>

function selectorText(selector: Record<string, unknown>): string {
  return JSON.stringify(Object.fromEntries(Object.entries(selector).filter(([, v]) => v !== undefined)))
}

function list(changes: EnvChange[]): string {
  const shown = changes.slice(0, 5).map(describeChange).join('; ')
  return changes.length > 5 ? `${shown}; … ${changes.length - 5} more` : shown
}

export const stateDiffGrader: GraderDefinition<StateDiffConfig> = {
  name: 'state_diff',
  description:
    "What changed in the environment from start to end: every `expect` change happened (exactly `count` when given), no `must_not_change` change did " +
    '(a broken one makes the outcome `violation`), and with `allow_other_changes: false` nothing else changed.',
  configSchema: StateDiffConfig,
  fixtureRefs(config) {
    const names = [...config.expect, ...config.must_not_change].flatMap((selector) => (selector.fixture === undefined ? [] : [selector.fixture]))
    return [...new Set(names)].map((name) => ({ name }))
  },
  grade(config, _trace, ctx) {
    if (ctx.env === undefined) return passFail(false, 'the task has no environment fixtures to diff')
    const diff = ctx.env.diff
    const problems: string[] = []
    let satisfied = 0
    for (const expected of config.expect) {
      const { count, ...selector } = expected
      const matching = diff.filter((change) => matchesChange(selector, change))
      const ok = count === undefined ? matching.length > 0 : matching.length === count
      if (ok) satisfied += 1
      else problems.push(`expected ${count === undefined ? 'a change' : `${count} change(s)`} matching ${selectorText(selector)}, found ${matching.length}`)
    }
    let points = satisfied
    if (!config.allow_other_changes) {
      const others = diff.filter((change) => !config.expect.some(({ count: _count, ...selector }) => matchesChange(selector, change)))
      if (others.length > 0) problems.push(`unexpected change(s): ${list(others)}`)
      else points += 1
    }
    const broken = config.must_not_change.flatMap((selector) => {
      const matching = diff.filter((change) => matchesChange(selector, change))
      return matching.length > 0 ? [`must not change ${selectorText(selector)}, but: ${list(matching)}`] : []
    })
    points += config.must_not_change.length - broken.length
    const total = config.expect.length + (config.allow_other_changes ? 0 : 1) + config.must_not_change.length
    const score = total === 0 ? 1 : points / total
    if (problems.length === 0 && broken.length === 0) {
      return { passed: true, score: 1, detail: diff.length === 0 ? 'no changes, as required' : `as expected: ${list(diff)}` }
    }
    const detail = [...broken, ...problems].join('; ')
    return broken.length > 0 ? { passed: false, score, detail, violation: broken.join('; ') } : { passed: false, score, detail }
  },
}
