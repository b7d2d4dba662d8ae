/**
 * A JSON Schema for fault profile files (`faults.yaml`), for editor completion — the FaultProfile
 * contract's input side, like core/task-json-schema.ts for task files.
 */
import { z } from 'zod'
import { FaultProfile } from './contracts/index.js'
import { FAULT_KINDS } from './faults.js'

const KIND_DESCRIPTIONS: Record<string, string> = {
  timeout: 'the call hangs until timeout_ms, then fails as a timeout',
  '500': 'a server error at once',
  garbage: 'a malformed answer: truncated JSON, wrong types, binary noise or an HTML error page (model: a malformed completion)',
  rate_limit: '429 Too Many Requests with a retry-after of retry_after_ms',
  slow: 'slow_ms of latency added; the answer is still correct',
}

/** The JSON Schema (draft-07) of a fault profile file. */
export function faultProfileJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(FaultProfile, { io: 'input', target: 'draft-7' }) as Record<string, any>
  // YAML reads `500` unquoted as a number: both spellings are a kind
  const kind = { enum: [...FAULT_KINDS, 500], description: FAULT_KINDS.map((k) => `${k}: ${KIND_DESCRIPTIONS[k]}`).join('; ') }
  const rule = schema['properties']['rules']['items']
  rule['properties']['kinds'] = {
    description: 'the kinds a hit call gets: a list (equal weights) or kind → weight (default: every kind equally)',
    anyOf: [
      { type: 'array', minItems: 1, items: kind },
      { type: 'object', propertyNames: { enum: [...FAULT_KINDS] }, additionalProperties: { type: 'number', exclusiveMinimum: 0 } },
    ],
  }
  rule['properties']['rate']['description'] = 'the long-run fraction of the calls in scope that fail'
  rule['properties']['window']['description'] = 'burst: how many consecutive calls of a tool one outage lasts (default 5)'
  rule['properties']['tasks']['description'] = 'only these task ids (* matches any run of characters)'
  return { ...schema, title: 'Forge fault profile' }
}
