import { z } from 'zod'
import type { GraderDefinition } from '../plugins.js'
import { baseConfigShape, fieldShape } from './common.js'
import { outputText, quote, selectOutput } from './output.js'

export const ContainsConfig = z.strictObject({
  ...baseConfigShape,
  ...fieldShape,
  expected: z.union([z.string().min(1, 'expected a non-empty string'), z.array(z.string().min(1, 'expected a non-empty string')).min(1, 'expected at least one string')], {
    error: 'expected a non-empty string or a non-empty list of non-empty strings',
  }),
  case_sensitive: z.boolean().default(false),
})
export type ContainsConfig = z.output<typeof ContainsConfig>

export const containsGrader: GraderDefinition<ContainsConfig> = {
  name: 'contains',
  description: 'The output contains `expected` (every one, when a list); case-insensitive by default. Score: share found.',
  configSchema: ContainsConfig,
  grade(config, trace) {
    const selected = selectOutput(trace.output, config.field)
    if (!selected.ok) return { passed: false, score: 0, detail: selected.detail }
    const fold = (text: string): string => (config.case_sensitive ? text : text.toLowerCase())
    const text = outputText(selected.value)
    const haystack = fold(text)
    const needles = typeof config.expected === 'string' ? [config.expected] : config.expected
    const missing = needles.filter((needle) => !haystack.includes(fold(needle)))
    const found = needles.length - missing.length
    const score = found / needles.length
    if (missing.length === 0) {
      return { passed: true, score, detail: `found ${needles.map((n) => quote(n)).join(', ')}` }
    }
    return {
      passed: false,
      score,
      detail: `missing ${missing.map((n) => quote(n)).join(', ')} (found ${found} of ${needles.length}) in ${quote(text)}`,
    }
  },
}
