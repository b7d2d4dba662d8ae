/**
 * Where Forge's servers are. Each of Temporal, NATS and ClickHouse is external when its variable
 * is set (fleet) and embedded otherwise (a child process or chDB under FORGE_HOME, default ./.forge).
 */
import { resolve } from 'node:path'
import { ConfigError } from './errors.js'

export interface ForgeConfig {
  home: string
  temporal: { address: string | undefined; namespace: string; taskQueue: string }
  natsUrl: string | undefined
  clickhouseUrl: string | undefined
  /** the embedded chDB directory (used when clickhouseUrl is unset) */
  storePath: string
}

export function resolveConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): ForgeConfig {
  const home = resolve(cwd, env['FORGE_HOME'] || '.forge')
  const clickhouseUrl = nonEmpty(env['FORGE_CLICKHOUSE_URL'])
  if (clickhouseUrl && !/^https?:\/\//.test(clickhouseUrl)) {
    throw new ConfigError(`FORGE_CLICKHOUSE_URL must be an http(s) URL, got "${clickhouseUrl}"`)
  }
  const natsUrl = nonEmpty(env['FORGE_NATS_URL'])
  if (natsUrl && !/^(nats|tls|wss?):\/\/|^[\w.-]+:\d+$/.test(natsUrl)) {
    throw new ConfigError(`FORGE_NATS_URL must look like nats://host:port, got "${natsUrl}"`)
  }
  const address = nonEmpty(env['FORGE_TEMPORAL_ADDRESS'])
  if (address && !/^[\w.-]+:\d+$/.test(address)) {
    throw new ConfigError(`FORGE_TEMPORAL_ADDRESS must be host:port, got "${address}"`)
  }
  return {
    home,
    temporal: {
      address,
      namespace: env['FORGE_TEMPORAL_NAMESPACE'] || 'default',
      taskQueue: env['FORGE_TASK_QUEUE'] || 'forge-attempts',
    },
    natsUrl,
    clickhouseUrl,
    storePath: resolve(home, 'store'),
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  return value && value.trim() !== '' ? value.trim() : undefined
}
