import { z } from 'zod'
import type { GraderDefinition } from '../plugins.js'
import { baseConfigShape, fieldShape, passFail } from './common.js'
import { outputText, quote, selectOutput } from './output.js'
import { patternHazard } from '../regex-safety.js'

function compileError(pattern: string, flags: string | undefined): string | null {
  try {
    new RegExp(pattern, flags)
    return null
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
}

export const RegexConfig = z
  .strictObject({
    ...baseConfigShape,
    ...fieldShape,
    pattern: z.string().min(1),
    flags: z.string().optional(),
  })
  .superRefine((config, ctx) => {
    // check the flags alone first so a bad flag is reported on `flags`, not on `pattern`
    const flagsError = config.flags === undefined ? null : compileError('', config.flags)
    if (flagsError !== null) {
      ctx.addIssue({ code: 'custom', path: ['flags'], message: `invalid regex flags: ${flagsError}` })
      return
    }
    const patternError = compileError(config.pattern, config.flags)
    if (patternError !== null) {
      ctx.addIssue({ code: 'custom', path: ['pattern'], message: `pattern does not compile: ${patternError}` })
      return
    }
    const hazard = patternHazard(config.pattern)
    if (hazard !== undefined) ctx.addIssue({ code: 'custom', path: ['pattern'], message: `pattern ${hazard}` })
  })
export type RegexConfig = z.output<typeof RegexConfig>

export const regexGrader: GraderDefinition<RegexConfig> = {
  name: 'regex',
  description: 'The output (or `field` of it) matches the regular expression `pattern` (with optional `flags`).',
  configSchema: RegexConfig,
  grade(config, trace) {
    const selected = selectOutput(trace.output, config.field)
    if (!selected.ok) return passFail(false, selected.detail)
    const text = outputText(selected.value)
    // a fresh RegExp each time: with the g or y flag a shared one would carry lastIndex between attempts
    const shown = `/${config.pattern}/${config.flags ?? ''}`
    const match = new RegExp(config.pattern, config.flags).exec(text)
    return match === null
      ? passFail(false, `${shown} did not match ${quote(text)}`)
      : passFail(true, `${shown} matched ${quote(match[0])}`)
  },
}
