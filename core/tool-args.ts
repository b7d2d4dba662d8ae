/**
 * Tool arguments against a tool's input schema, by the one JSON Schema checker (core/json-schema.ts)
 * that also checks outputs: a suite's `minimum`, `pattern` or `enum` binds arguments exactly as it
 * binds answers. The suite loader has refused schemas with keywords the checker does not know.
 */
import { validateJson, type JsonSchema } from './json-schema.js'

/** Problems with `args` against a tool's input schema, each naming its path (`args.a: expected number, got string "1"`); [] = valid. */
export function validateToolArgs(schema: JsonSchema, args: unknown): string[] {
  return validateJson(schema, args, { root: 'args', maxViolations: 20 }).map((v) => `${v.path}: ${v.message}`)
}
