import { z } from 'zod'
import type { AgentTrace } from '../contracts/index.js'
import type { GraderDefinition } from '../plugins.js'
import { baseConfigShape, type GradeBody } from './common.js'

export const ToolSequenceConfig = z.strictObject({
  ...baseConfigShape,
  sequence: z.array(z.string().min(1)),
  mode: z.enum(['ordered', 'unordered', 'subset', 'superset']).default('ordered'),
})
export type ToolSequenceConfig = z.output<typeof ToolSequenceConfig>

/** Names of the tool calls that ran and succeeded, in call order (refused and failed calls don't count). */
export function successfulToolNames(trace: AgentTrace): string[] {
  return [...trace.tool_calls]
    .sort((a, b) => a.index - b.index)
    .filter((call) => call.error === undefined && call.refused === undefined)
    .map((call) => call.name)
}

const list = (names: readonly string[]): string => `[${names.join(', ')}]`

/** Removes one occurrence of each of `remove` from `from`: a multiset difference. */
function multisetMinus(from: readonly string[], remove: readonly string[]): string[] {
  const rest = [...from]
  for (const name of remove) {
    const at = rest.indexOf(name)
    if (at >= 0) rest.splice(at, 1)
  }
  return rest
}

function ordered(sequence: readonly string[], called: readonly string[]): GradeBody {
  let matched = 0
  for (const name of called) {
    if (matched < sequence.length && name === sequence[matched]) matched += 1
  }
  const score = sequence.length === 0 ? 1 : matched / sequence.length
  if (matched === sequence.length) return { passed: true, score, detail: `called ${list(sequence)} in order; calls were ${list(called)}` }
  return {
    passed: false,
    score,
    detail: `expected ${list(sequence)} in order, matched ${matched} of ${sequence.length} (next missing: "${sequence[matched]}"); calls were ${list(called)}`,
  }
}

function unordered(sequence: readonly string[], called: readonly string[]): GradeBody {
  const missing = multisetMinus(sequence, called)
  const unexpected = multisetMinus(called, sequence)
  const common = sequence.length - missing.length
  const total = Math.max(sequence.length, called.length)
  const score = total === 0 ? 1 : common / total
  if (missing.length === 0 && unexpected.length === 0) return { passed: true, score, detail: `called exactly ${list(sequence)} (any order)` }
  const problems = [
    ...(missing.length > 0 ? [`missing ${list(missing)}`] : []),
    ...(unexpected.length > 0 ? [`unexpected ${list(unexpected)}`] : []),
  ]
  return { passed: false, score, detail: `expected exactly ${list(sequence)} in any order: ${problems.join(', ')}; calls were ${list(called)}` }
}

function subset(sequence: readonly string[], called: readonly string[]): GradeBody {
  const allowed = new Set(sequence)
  const unexpected = called.filter((name) => !allowed.has(name))
  const score = called.length === 0 ? 1 : (called.length - unexpected.length) / called.length
  if (unexpected.length === 0) return { passed: true, score, detail: `every call was one of ${list(sequence)}; calls were ${list(called)}` }
  return { passed: false, score, detail: `called tools outside ${list(sequence)}: ${list([...new Set(unexpected)])}; calls were ${list(called)}` }
}

function superset(sequence: readonly string[], called: readonly string[]): GradeBody {
  const required = [...new Set(sequence)]
  const made = new Set(called)
  const missing = required.filter((name) => !made.has(name))
  const score = required.length === 0 ? 1 : (required.length - missing.length) / required.length
  if (missing.length === 0) return { passed: true, score, detail: `called every one of ${list(required)}; calls were ${list(called)}` }
  return { passed: false, score, detail: `never called ${list(missing)}; calls were ${list(called)}` }
}

export const toolSequenceGrader: GraderDefinition<ToolSequenceConfig> = {
  name: 'tool_sequence',
  description:
    'Checks the names of successful tool calls against `sequence`. mode ordered: sequence appears in order ' +
    '(other calls may interleave); unordered: same calls, any order; subset: every call is in sequence; ' +
    'superset: every tool in sequence was called.',
  configSchema: ToolSequenceConfig,
  grade(config, trace) {
    const called = successfulToolNames(trace)
    switch (config.mode) {
      case 'ordered':
        return ordered(config.sequence, called)
      case 'unordered':
        return unordered(config.sequence, called)
      case 'subset':
        return subset(config.sequence, called)
      case 'superset':
        return superset(config.sequence, called)
    }
  },
}
