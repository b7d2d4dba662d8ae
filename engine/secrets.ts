/**
 * Resolves the secrets an adapter config names by reference (core/secret-refs.ts) on the worker,
 * right before the adapter runs: `{"from_env": "MY_KEY"}` becomes the worker's $MY_KEY,
 * `{"from_file": "/run/secrets/key"}` that file's contents. The resolved values are what the
 * attempt's redactor knows as secrets, so they never leave the worker in anything it publishes.
 */
import { readFileSync } from 'node:fs'
import { isSecretRef, type SecretRef } from '../core/secret-refs.js'
import { SecretRefError } from './errors.js'

export interface ResolvedConfig {
  /** the adapter config with every reference replaced by its value */
  config: Record<string, unknown>
  /** the values resolved from references */
  secrets: string[]
}

/** Resolves every `{from_env}` / `{from_file}` in `config`; throws SecretRefError naming the field and the variable or file. */
export function resolveSecretRefs(
  config: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
  readFile: (path: string) => string = (path) => readFileSync(path, 'utf8'),
): ResolvedConfig {
  const secrets: string[] = []
  const resolveRef = (ref: SecretRef, at: string): string => {
    if ('from_env' in ref) {
      const value = env[ref.from_env]
      if (value === undefined || value === '') throw new SecretRefError(`adapter config ${at}: {"from_env": "${ref.from_env}"}: the worker has no ${ref.from_env} in its environment`)
      return value
    }
    try {
      return readFile(ref.from_file).replace(/\r?\n$/, '')
    } catch (error) {
      throw new SecretRefError(`adapter config ${at}: {"from_file": "${ref.from_file}"}: cannot read it on the worker (${(error as NodeJS.ErrnoException).code ?? String(error)})`, { cause: error })
    }
  }
  const walk = (value: unknown, path: string[]): unknown => {
    if (isSecretRef(value)) {
      const resolved = resolveRef(value, path.join('.'))
      secrets.push(resolved)
      return resolved
    }
    if (Array.isArray(value)) return value.map((item, i) => walk(item, [...path, String(i)]))
    if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, [...path, k])]))
    return value
  }
  return { config: walk(config, []) as Record<string, unknown>, secrets }
}

/** What resolving `config`'s references on this machine would fail on, one message per reference. */
export function secretRefsMissing(config: Record<string, unknown>, env: NodeJS.ProcessEnv): string[] {
  const problems: string[] = []
  const walk = (value: unknown, path: string[]): void => {
    if (isSecretRef(value)) {
      try {
        resolveSecretRefs({ ref: value }, env)
      } catch (error) {
        problems.push((error as Error).message.replace('adapter config ref:', `${path.join('.')}:`))
      }
      return
    }
    if (Array.isArray(value)) value.forEach((item, i) => walk(item, [...path, String(i)]))
    else if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) walk(v, [...path, k])
  }
  walk(config, [])
  return problems
}
