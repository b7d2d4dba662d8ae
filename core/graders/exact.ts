import { z } from 'zod'
import type { GraderDefinition } from '../plugins.js'
import { baseConfigShape, fieldShape, passFail } from './common.js'
import { outputText, quote, selectOutput } from './output.js'

export const ExactConfig = z.strictObject({
  ...baseConfigShape,
  ...fieldShape,
  expected: z.union([z.string(), z.number(), z.boolean()]),
  case_sensitive: z.boolean().default(true),
  trim: z.boolean().default(true),
})
export type ExactConfig = z.output<typeof ExactConfig>

export const exactGrader: GraderDefinition<ExactConfig> = {
  name: 'exact',
  description: 'The output (or `field` of it) equals `expected` as text; trimmed and case-sensitive by default.',
  configSchema: ExactConfig,
  grade(config, trace) {
    const selected = selectOutput(trace.output, config.field)
    if (!selected.ok) return passFail(false, selected.detail)
    const shown = (text: string): string => (config.trim ? text.trim() : text)
    const compared = (text: string): string => (config.case_sensitive ? shown(text) : shown(text).toLowerCase())
    const expected = String(config.expected)
    const actual = outputText(selected.value)
    const passed = compared(actual) === compared(expected)
    return passFail(passed, passed ? `matched ${quote(shown(expected))}` : `expected ${quote(shown(expected))}, got ${quote(shown(actual))}`)
  },
}
