/**
 * The two settings a `forge` process reads before it loads the others (./settings.ts loads zod, ~15 ms
 * of a start-up): `bin/run.js` asks whether a warm CLI may run `forge run` (FORGE_WARM_CLI) and
 * where its FORGE_HOME is (stack/warm-cli.ts, cli/warm-cli-client.ts). They are read as the settings
 * read them — trimmed, blank as unset, the same switch words, the same default home — and
 * ./settings.ts takes these constants from here; a value the settings would refuse reads as "no warm
 * CLI" here, and the command, started as usual, refuses it with the settings' clear error.
 */
import { resolve } from 'node:path'

export const SWITCH_ON = ['1', 'true', 'yes', 'on'] as const
export const SWITCH_OFF = ['0', 'false', 'no', 'off'] as const
/** FORGE_HOME when unset, relative to the working directory */
export const HOME_FALLBACK = '.forge'
/** FORGE_WARM_CLI when unset */
export const WARM_CLI_FALLBACK = true

function valueOf(env: NodeJS.ProcessEnv, variable: string): string | undefined {
  const value = env[variable]?.trim()
  return value === undefined || value === '' ? undefined : value
}

/** FORGE_HOME, resolved against `cwd` as resolveConfig resolves it. */
export function earlyHome(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): string {
  return resolve(cwd, valueOf(env, 'FORGE_HOME') ?? HOME_FALLBACK)
}

/** FORGE_WARM_CLI: true or false, or undefined for a value the settings refuse. */
export function earlyWarmCli(env: NodeJS.ProcessEnv = process.env): boolean | undefined {
  const value = valueOf(env, 'FORGE_WARM_CLI')
  if (value === undefined) return WARM_CLI_FALLBACK
  if ((SWITCH_ON as readonly string[]).includes(value)) return true
  if ((SWITCH_OFF as readonly string[]).includes(value)) return false
  return undefined
}
