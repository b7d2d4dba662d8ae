/** Small helpers the sandboxed adapters share: which host paths to protect, which ports to bridge. */
import path from 'node:path'
import { readSetting } from '../../config/index.js'

/** FORGE_HOME as the worker resolves it (default ./.forge): never visible to an agent. */
export function forgeHomeOf(env: NodeJS.ProcessEnv, cwd: string = process.cwd()): string {
  return path.resolve(cwd, readSetting('home', env))
}

/** Where the Helm chart mounts a worker's certificates, suites and sweeps (README "Deploy on Kubernetes"). */
export const CHART_CONFIG_DIR = '/etc/forge'

/**
 * The worker's own files an agent must never read, wherever they are: FORGE_HOME (the bus
 * credentials, the results key, the embedded store), a store kept elsewhere (FORGE_STORE_PATH), the
 * TLS client keys and certificates of NATS and Temporal, and the chart's /etc/forge. The system's
 * /etc is readable in the sandbox, so without this a fleet worker's agent read its Temporal mTLS key
 * at /etc/forge/temporal-tls/tls.key and could carry it out in its answer.
 */
export function harnessPaths(env: NodeJS.ProcessEnv, cwd: string = process.cwd()): string[] {
  const files = (['storePath', 'natsTlsCa', 'natsTlsCert', 'natsTlsKey', 'temporalTlsCaFile', 'temporalTlsCertFile', 'temporalTlsKeyFile'] as const)
    .map((name) => readSetting(name, env))
    .filter((value): value is string => typeof value === 'string' && value !== '')
    .map((value) => path.resolve(cwd, value))
  return [forgeHomeOf(env, cwd), ...files, CHART_CONFIG_DIR]
}

/** The port of a 127.0.0.1 URL the harness handed out (the tool endpoint, the LLM gateway). */
export function portOf(url: string): number {
  const parsed = new URL(url)
  if (parsed.hostname !== '127.0.0.1') throw new Error(`sandbox: only 127.0.0.1 endpoints can be bridged into a sandbox, not ${url}`)
  const port = Number(parsed.port)
  if (!Number.isInteger(port) || port <= 0) throw new Error(`sandbox: ${url} names no port`)
  return port
}
