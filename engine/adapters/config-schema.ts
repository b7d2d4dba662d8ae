/**
 * What every adapter's config schema shares: the keys the harness itself reads from an adapter
 * config (whatever the adapter), the keys of the attempt's LLM gateway, and one way of saying what
 * is wrong with a config. Each adapter's schema is strict: a key nobody reads is an error, never
 * silently ignored (a typo like `skil` would otherwise run with the default).
 */
import { z } from 'zod'

/** Keys the harness reads from any adapter's config: app/run.ts, the worker and the attempt runner. */
export const harnessConfigShape = {
  price_table: z
    .string()
    .min(1)
    .optional()
    .describe('Price table file that prices model tokens (what --price-table sets); default: prices/default.yaml.'),
  model: z.string().min(1).optional().describe('Model name stamped on results (what --model sets); default: the models the gateway saw, else the adapter name.'),
  decoding: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('Decoding settings stamped on results; what actually went through the LLM gateway wins.'),
}

/** Keys of the attempt's LLM gateway (engine/llm/gateway.ts), for adapters whose agent reaches a model through it. */
export const gatewayConfigShape = {
  base_url: z
    .string()
    .regex(/^https?:\/\//, 'must be an http(s) URL')
    .optional()
    .describe('OpenAI-compatible server the LLM gateway forwards to; default: $OPENAI_BASE_URL, else https://api.openai.com/v1.'),
  api_key_env: z
    .string()
    .min(1)
    .optional()
    .describe("Environment variable of the worker holding the upstream API key; default: OPENAI_API_KEY."),
}

/**
 * One line per problem of a config against its schema, naming the field: `skill: Too big: …`; an
 * unknown key as `skil: unknown field (known: …)`.
 */
export function configProblems(schema: z.ZodType, error: z.ZodError): string[] {
  const known = schema instanceof z.ZodObject ? Object.keys(schema.shape as Record<string, unknown>).sort() : []
  return error.issues.flatMap((issue) => {
    const at = issue.path.map(String).join('.')
    if (issue.code === 'unrecognized_keys') {
      const hint = issue.path.length === 0 && known.length > 0 ? ` (known: ${known.join(', ')})` : ''
      return issue.keys.map((key) => `${at === '' ? key : `${at}.${key}`}: unknown field${hint}`)
    }
    if (issue.code === 'invalid_type' && /received undefined$/.test(issue.message)) return [`${at}: required field missing (expected ${issue.expected})`]
    return [`${at || '(config)'}: ${issue.message}`]
  })
}

/** Parses `config` with `schema`; throws `make(message)` naming every wrong field (`invalid <adapter> adapter config: …`). */
export function parseAdapterConfig<S extends z.ZodType>(
  adapter: string,
  schema: S,
  config: Record<string, unknown>,
  make: (message: string) => Error = (message) => new Error(message),
): z.output<S> {
  const parsed = schema.safeParse(config)
  if (!parsed.success) throw make(`invalid ${adapter} adapter config: ${configProblems(schema, parsed.error).join('; ')}`)
  return parsed.data
}
