import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ConfigError } from '../../stack/errors.js'
import { temporalConnectOptions } from '../../stack/temporal-connection.js'

describe('Temporal connection options', () => {
  const dir = mkdtempSync(join(tmpdir(), 'forge-tls-'))
  for (const name of ['ca.pem', 'tls.crt', 'tls.key']) writeFileSync(join(dir, name), `-- ${name} --`)

  it('is plaintext with nothing set (the local dev server)', () => {
    expect(temporalConnectOptions('localhost:7233', {})).toEqual({ address: 'localhost:7233' })
  })

  it('reads the CA and the client pair from files (Secrets mounted in the pod) for mTLS', () => {
    const opts = temporalConnectOptions('temporal:7233', {
      FORGE_TEMPORAL_TLS_CA_FILE: join(dir, 'ca.pem'),
      FORGE_TEMPORAL_TLS_CERT_FILE: join(dir, 'tls.crt'),
      FORGE_TEMPORAL_TLS_KEY_FILE: join(dir, 'tls.key'),
      FORGE_TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
    })
    expect(opts).toEqual({
      address: 'temporal:7233',
      tls: {
        serverNameOverride: 'temporal.internal',
        serverRootCACertificate: Buffer.from('-- ca.pem --'),
        clientCertPair: { crt: Buffer.from('-- tls.crt --'), key: Buffer.from('-- tls.key --') },
      },
    })
  })

  it('turns TLS on with an API key (Temporal Cloud), unless told not to', () => {
    expect(temporalConnectOptions('ns.tmprl.cloud:7233', { FORGE_TEMPORAL_API_KEY: 'k' })).toEqual({ address: 'ns.tmprl.cloud:7233', tls: true, apiKey: 'k' })
    expect(temporalConnectOptions('proxy:7233', { FORGE_TEMPORAL_API_KEY: 'k', FORGE_TEMPORAL_TLS: '0' })).toEqual({ address: 'proxy:7233', apiKey: 'k' })
    expect(temporalConnectOptions('t:7233', { FORGE_TEMPORAL_TLS: '1' })).toEqual({ address: 't:7233', tls: true })
  })

  it('names the setting and the file that is wrong', () => {
    expect(() => temporalConnectOptions('t:7233', { FORGE_TEMPORAL_TLS_CA_FILE: join(dir, 'missing.pem') })).toThrow(ConfigError)
    expect(() => temporalConnectOptions('t:7233', { FORGE_TEMPORAL_TLS_CA_FILE: join(dir, 'missing.pem') })).toThrow(`FORGE_TEMPORAL_TLS_CA_FILE: cannot read ${join(dir, 'missing.pem')}`)
    expect(() => temporalConnectOptions('t:7233', { FORGE_TEMPORAL_TLS_CERT_FILE: join(dir, 'tls.crt') })).toThrow('FORGE_TEMPORAL_TLS_CERT_FILE and FORGE_TEMPORAL_TLS_KEY_FILE go together')
    expect(() => temporalConnectOptions('t:7233', { FORGE_TEMPORAL_TLS: 'maybe' })).toThrow('FORGE_TEMPORAL_TLS must be 1 or 0 (or true/false, yes/no, on/off), got "maybe"')
  })
})
