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
import { readSetting, SETTINGS } from '../config/index.js'
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
  const read = (name: 'temporalTlsCaFile' | 'temporalTlsCertFile' | 'temporalTlsKeyFile'): Buffer | undefined => {
    const file = readSetting(name, env)
    if (file === undefined) return undefined
    try {
      return readFileSync(file)
    } catch (error) {
      throw new ConfigError(`${SETTINGS[name].variable}: cannot read ${file}: ${(error as Error).message}`, { cause: error })
    }
  }
  const flag = readSetting('temporalTls', env)
  const ca = read('temporalTlsCaFile')
  const crt = read('temporalTlsCertFile')
  const key = read('temporalTlsKeyFile')
  if ((crt === undefined) !== (key === undefined)) {
    throw new ConfigError(`${SETTINGS.temporalTlsCertFile.variable} and ${SETTINGS.temporalTlsKeyFile.variable} go together (mTLS needs both)`)
  }
  const serverName = readSetting('temporalTlsServerName', env)
  const apiKey = readSetting('temporalApiKey', env)
  const tls: TemporalTls = {
    ...(serverName ? { serverNameOverride: serverName } : {}),
    ...(ca ? { serverRootCACertificate: ca } : {}),
    ...(crt && key ? { clientCertPair: { crt, key } } : {}),
  }
  const wanted = flag === true || Object.keys(tls).length > 0 || (apiKey !== undefined && flag === undefined)
  const off = flag === false
  return {
    address,
    ...(wanted && !off ? { tls: Object.keys(tls).length > 0 ? tls : true } : {}),
    ...(apiKey ? { apiKey } : {}),
  }
}
