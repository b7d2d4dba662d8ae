/**
 * Secrets reach agents by reference: an adapter config names where the worker finds a value —
 * `{"from_env": "MY_KEY"}` (the worker's environment) or `{"from_file": "/run/secrets/key"}` — and
 * only the worker resolves it (engine/secrets.ts), so nothing Temporal or NATS carries (the run
 * plan, activity inputs, results) ever holds the value. Pure: the schema, and the check that an
 * adapter config holds no secret by value.
 */
import { z } from 'zod'
import { findSensitive, looksLikeSecretName, PII_KINDS } from './redaction.js'

export const SecretRef = z.union([
  z.strictObject({ from_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name') }).describe('The value of this variable of the worker.'),
  z.strictObject({ from_file: z.string().min(1) }).describe("The contents of this file on the worker (trailing newline removed)."),
])
export type SecretRef = z.infer<typeof SecretRef>

/** A config string that may be given by value or, for a secret, by reference. */
export const StringOrSecretRef = z.union([z.string(), SecretRef])

export function isSecretRef(value: unknown): value is SecretRef {
  // nearly every config value is not an object of one from_env / from_file key: answered without zod (each attempt walks its config)
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false
  const keys = Object.keys(value)
  if (keys.length !== 1 || (keys[0] !== 'from_env' && keys[0] !== 'from_file')) return false
  return SecretRef.safeParse(value).success
}

/** Where a config value sits, as `env.MY_KEY` or `headers.authorization`. */
export type ConfigPath = string

/**
 * Places where an adapter config holds a secret by value: a string under a secret-looking name
 * (`env.OPENAI_API_KEY`, `headers.Authorization`) or any string in a known credential format.
 * Each entry names the field, never the value.
 */
export function secretsByValue(config: unknown, path: string[] = []): ConfigPath[] {
  if (typeof config === 'string') {
    const name = path.at(-1) ?? ''
    // `api_key_env: "OPENAI_API_KEY"` names a variable, it does not hold its value
    if (/_env$/i.test(name)) return []
    const named = config.length > 0 && (looksLikeSecretName(name) || /^(authorization|proxy-authorization|cookie)$/i.test(name))
    const formatted = findSensitive(config).some((f) => !PII_KINDS.has(f.kind))
    return named || formatted ? [path.join('.')] : []
  }
  if (Array.isArray(config)) return config.flatMap((item, i) => secretsByValue(item, [...path, String(i)]))
  if (config !== null && typeof config === 'object') {
    if (isSecretRef(config)) return []
    return Object.entries(config).flatMap(([key, value]) => secretsByValue(value, [...path, key]))
  }
  return []
}

/** `config` with each reference replaced by a placeholder string: what an adapter's config schema checks before a run. */
export function withSecretRefsAsText(config: Record<string, unknown>): Record<string, unknown> {
  const walk = (value: unknown): unknown => {
    if (isSecretRef(value)) return 'from_env' in value ? `<$${value.from_env}>` : `<file ${value.from_file}>`
    if (Array.isArray(value)) return value.map(walk)
    if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v)]))
    return value
  }
  return walk(config) as Record<string, unknown>
}
