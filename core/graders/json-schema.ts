import { z } from 'zod'
import { schemaProblems, validateJson, type JsonSchema } from '../json-schema.js'
import type { GraderDefinition } from '../plugins.js'
import { baseConfigShape, fieldShape, passFail } from './common.js'
import { outputText, quote, selectOutput } from './output.js'
import { parseUntrustedJson } from '../untrusted-json.js'

export const JsonSchemaConfig = z
  .strictObject({
    ...baseConfigShape,
    ...fieldShape,
    /** the JSON Schema the output (or `field` of it) must match */
    schema: z.union([z.record(z.string(), z.unknown()), z.boolean()], { error: 'expected a JSON Schema (an object, or true/false)' }),
    /**
     * A string output is parsed as JSON first (default). `false`: the output must already be
     * structured, a string is a string.
     */
    parse_string: z.boolean().default(true),
  })
  .superRefine((config, ctx) => {
    for (const problem of schemaProblems(config.schema)) ctx.addIssue({ code: 'custom', path: ['schema'], message: problem })
  })
export type JsonSchemaConfig = z.output<typeof JsonSchemaConfig>

/** Leading and trailing Markdown code fences an agent puts around JSON (```json … ```). */
const FENCED = /^\s*```(?:json)?\s*\n([\s\S]*?)\n?```\s*$/i

export const jsonSchemaGrader: GraderDefinition<JsonSchemaConfig> = {
  name: 'json_schema',
  description:
    'The output (or `field` of it) is JSON matching `schema` (JSON Schema: type, enum, const, properties, required, items, ' +
    'string/number limits, allOf/anyOf/oneOf/not, if/then/else, local $ref). A string output is parsed as JSON first (a ' +
    'Markdown code fence around it is allowed). Score: 1 when it matches, else 0.',
  configSchema: JsonSchemaConfig,
  grade(config, trace) {
    const selected = selectOutput(trace.output, config.field)
    if (!selected.ok) return passFail(false, selected.detail)
    let value = selected.value
    if (typeof value === 'string' && config.parse_string) {
      const text = FENCED.exec(value)?.[1] ?? value
      try {
        value = parseUntrustedJson(text)
      } catch (error) {
        return passFail(false, `output is not JSON (${error instanceof Error ? error.message : String(error)}): ${quote(outputText(selected.value))}`)
      }
    }
    if (value === undefined) return passFail(false, 'no output to check against the schema')
    const violations = validateJson(config.schema as JsonSchema, value, { maxViolations: 5 })
    if (violations.length === 0) return passFail(true, `matches the schema: ${quote(outputText(value))}`)
    return passFail(false, `does not match the schema: ${violations.map((v) => `${v.path}: ${v.message}`).join('; ')}`)
  },
}
