import { z } from 'zod'
import type { GraderDefinition } from '../plugins.js'
import { baseConfigShape, fieldShape, passFail } from './common.js'
import { extractNumber, outputText, quote, selectOutput } from './output.js'

export const NumericConfig = z.strictObject({
  ...baseConfigShape,
  ...fieldShape,
  expected: z.number(),
  tolerance: z.number().nonnegative().default(0),
  relative_tolerance: z.number().nonnegative().optional(),
})
export type NumericConfig = z.output<typeof NumericConfig>

export const numericGrader: GraderDefinition<NumericConfig> = {
  name: 'numeric',
  description:
    'The number in the output (a number, a numeric string, or the last number in the text) is within ' +
    '`tolerance` (absolute) or `relative_tolerance` × |expected| of `expected`, whichever is wider.',
  configSchema: NumericConfig,
  grade(config, trace) {
    const selected = selectOutput(trace.output, config.field)
    if (!selected.ok) return passFail(false, selected.detail)
    const actual = extractNumber(selected.value)
    if (actual === null) return passFail(false, `expected ${config.expected}, no number found in ${quote(outputText(selected.value))}`)
    const allowed = Math.max(config.tolerance, (config.relative_tolerance ?? 0) * Math.abs(config.expected))
    const difference = Math.abs(actual - config.expected)
    const target = allowed > 0 ? `${config.expected} ± ${allowed}` : `${config.expected}`
    return difference <= allowed
      ? passFail(true, `got ${actual}, within ${target}`)
      : passFail(false, `expected ${target}, got ${actual} (off by ${difference})`)
  },
}
