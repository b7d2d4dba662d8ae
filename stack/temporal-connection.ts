/**
 * How Forge connects to a Temporal cluster it did not start: TLS, mTLS and API keys from FORGE_*
 * variables (in Kubernetes, files mounted from Secrets), the same for workers (NativeConnection) and
 * clients (Connection). Nothing set: plaintext, as the local dev server wants.
 *
 *   FORGE_TEMPORAL_TLS=1                 TLS with the system's roots (implied by any setting below)
 *   FORGE_TEMPORAL_TLS_CA_FILE           the server's root CA (PEM)
 *   FORGE_TEMPORAL_TLS_CERT_FILE / _KEY_FILE   the client certificate pair (mTLS)
 *   FORGE_TEMPORAL_TLS_SERVER_NAME       SNI override
 *   FORGE_TEMPORAL_API_KEY               API key (Temporal Cloud); FORGE_TEMPORAL_TLS=0 turns TLS off with it
 */
import { readFileSync } from 'node:fs'
import { ConfigError } from './errors.js'

export interface TemporalTls {
  serverNameOverride?: string
  serverRootCACertificate?: Buffer
  clientCertPair?: { crt: Buffer; key: Buffer }
}

export interface TemporalConnectOptions {
  address: string
  tls?: TemporalTls | boolean
  apiKey?: string
}

export function temporalConnectOptions(address: string, env: NodeJS.ProcessEnv = process.env): TemporalConnectOptions {
  const value = (name: string): string | undefined => env[name]?.trim() || undefined
  const read = (name: string): Buffer | undefined => {
    const file = value(name)
    if (file === undefined) return undefined
    try {
      return readFileSync(file)
    } catch (error) {
      throw new ConfigError(`${name}: cannot read ${file}: ${(error as Error).message}`, { cause: error })
    }
  }
  const flag = value('FORGE_TEMPORAL_TLS')
  if (flag !== undefined && !['0', '1', 'true', 'false'].includes(flag)) {
    throw new ConfigError(`FORGE_TEMPORAL_TLS must be 1 or 0, got "${flag}"`)
  }
  const ca = read('FORGE_TEMPORAL_TLS_CA_FILE')
  const crt = read('FORGE_TEMPORAL_TLS_CERT_FILE')
  const key = read('FORGE_TEMPORAL_TLS_KEY_FILE')
  if ((crt === undefined) !== (key === undefined)) {
    throw new ConfigError('FORGE_TEMPORAL_TLS_CERT_FILE and FORGE_TEMPORAL_TLS_KEY_FILE go together (mTLS needs both)')
  }
  const serverName = value('FORGE_TEMPORAL_TLS_SERVER_NAME')
  const apiKey = value('FORGE_TEMPORAL_API_KEY')
  const tls: TemporalTls = {
    ...(serverName ? { serverNameOverride: serverName } : {}),
    ...(ca ? { serverRootCACertificate: ca } : {}),
    ...(crt && key ? { clientCertPair: { crt, key } } : {}),
  }
  const wanted = flag === '1' || flag === 'true' || Object.keys(tls).length > 0 || (apiKey !== undefined && flag === undefined)
  const off = flag === '0' || flag === 'false'
  return {
    address,
    ...(wanted && !off ? { tls: Object.keys(tls).length > 0 ? tls : true } : {}),
    ...(apiKey ? { apiKey } : {}),
  }
}
