/**
 * An OTLP collector's traces URL and what a worker needs to export spans live: the part of
 * app/otlp.ts that `forge run` and `forge worker` use, without the export's store reads and trace
 * views (issue 15: a run's start-up loads no more than it needs).
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { otlpTracesUrl } from '../core/otlp.js'
import { ConfigError } from '../stack/errors.js'
import { packageRoot } from '../stack/paths.js'

/** The traces URL of an OTLP/HTTP endpoint; a ConfigError naming the value when it is not an http(s) URL. */
export function tracesUrl(endpoint: string, what = '--endpoint'): string {
  const parsed = otlpTracesUrl(endpoint, what)
  if (!parsed.ok) throw new ConfigError(parsed.problem)
  return parsed.url
}

/** Forge's version as its package.json says (the OTLP scope version). */
export function forgeVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version
}

/** What a worker needs to export spans live (FORGE_OTLP_URL): the collector's traces URL and Forge's version; undefined when unset. */
export function liveOtlpOf(otlpUrl: string | undefined): { url: string; version: string } | undefined {
  return otlpUrl === undefined ? undefined : { url: tracesUrl(otlpUrl, 'FORGE_OTLP_URL'), version: forgeVersion() }
}
