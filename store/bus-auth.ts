/**
 * Who may use the bus, and how results are authenticated (issue 10).
 *
 * - The embedded nats-server starts with generated credentials — one user per role, kept with the
 *   results key in `FORGE_HOME/secrets/bus.json` (0600, directory 0700) — and per-role permissions:
 *   workers publish results and progress, the ingester consumes the results stream and answers
 *   store queries, the CLI asks queries and writes baselines, regrades, review resolutions and audit seals; no
 *   role but the ingester may consume the stream or answer queries.
 *   Nobody else can connect. Fleet mode reads a role's credentials (and TLS files) from the
 *   environment (FORGE_NATS_USER / FORGE_NATS_PASSWORD, FORGE_NATS_TLS_*), e.g. a mounted secret.
 * - Every message on the results stream carries `Forge-Signature`: an HMAC-SHA256 of its subject and
 *   body under a per-run key derived from the results key (FORGE_RESULTS_KEY, else the secrets
 *   file), which only workers, the ingester and the CLI hold. The ingester rejects a message
 *   without a valid one. Its JetStream msg id carries a keyed tag too, so a forged message sent
 *   first cannot make JetStream drop the genuine one as its duplicate.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { readSetting, settingsEnv } from '../config/index.js'

export type BusRole = 'worker' | 'ingester' | 'cli'
export const BUS_ROLES: readonly BusRole[] = ['worker', 'ingester', 'cli']

/** What the stack generates once per FORGE_HOME. */
export interface BusSecrets {
  users: Record<BusRole, { user: string; password: string }>
  /** hex; the root of every per-run signing key */
  results_key: string
}

export const SIGNATURE_HEADER = 'Forge-Signature'

/** The secrets file of a FORGE_HOME. */
export function secretsFile(home: string): string {
  return path.join(home, 'secrets', 'bus.json')
}

/** Reads FORGE_HOME's bus secrets, generating them (0600) the first time. */
export function ensureBusSecrets(home: string): BusSecrets {
  const file = secretsFile(home)
  const existing = readBusSecrets(home)
  if (existing !== undefined) return existing
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
  chmodSync(path.dirname(file), 0o700)
  const secret = () => randomBytes(24).toString('base64url')
  const secrets: BusSecrets = {
    users: Object.fromEntries(BUS_ROLES.map((role) => [role, { user: `forge-${role}`, password: secret() }])) as BusSecrets['users'],
    results_key: randomBytes(32).toString('hex'),
  }
  writeFileSync(file, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600 })
  chmodSync(file, 0o600)
  return secrets
}

/** FORGE_HOME's bus secrets, or undefined when it has none. */
export function readBusSecrets(home: string): BusSecrets | undefined {
  const file = secretsFile(home)
  if (!existsSync(file)) return undefined
  return JSON.parse(readFileSync(file, 'utf8')) as BusSecrets
}

/**
 * How many messages the ingester may send in answer to one request: a store query's answer comes
 * in parts of at most max_payload (store/bus-reader.ts respondInParts); nats-server allows one
 * unless told.
 */
export const MAX_REPLY_PARTS = 1000

/** Subjects each role may publish and subscribe to (nats-server permissions). */
export function rolePermissions(role: BusRole): { publish: string[]; subscribe: string[]; maxResponses?: number } {
  // reading the stream, and how far the ingester got (the completeness check waits for its backlog)
  const readStream = [
    '$JS.API.INFO', '$JS.API.STREAM.INFO.FORGE_RESULTS', '$JS.API.STREAM.MSG.GET.FORGE_RESULTS', '$JS.API.DIRECT.GET.FORGE_RESULTS', '$JS.API.DIRECT.GET.FORGE_RESULTS.>',
    '$JS.API.CONSUMER.INFO.FORGE_RESULTS.forge-ingester',
  ]
  switch (role) {
    case 'worker':
      return {
        // sweep activities also run on workers: they read the store, record sweeps and promote baselines
        publish: [
          'forge.results.attempt', 'forge.results.attempt.>', 'forge.results.run', 'forge.results.judge', 'forge.results.trace.>', 'forge.results.sweep', 'forge.results.baseline',
          'forge.progress.>', 'forge.ingester.ping', 'forge.ingester.flush', 'forge.store.query', ...readStream,
          // a warm worker's JIT warm-up publishes there: a stream nobody reads (store/bus.ts WARMUP_STREAM)
          'forge.warmup.>',
        ],
        subscribe: ['_INBOX.>'],
      }
    case 'ingester':
      return { publish: ['$JS.API.>', '$JS.ACK.FORGE_RESULTS.>'], subscribe: ['forge.store.query', 'forge.ingester.ping', 'forge.ingester.flush', '_INBOX.>'], maxResponses: MAX_REPLY_PARTS }
    case 'cli':
      return {
        // audit seals: the chain's links and the run record carrying its new head (app/audit.ts)
        publish: ['forge.store.query', 'forge.ingester.ping', 'forge.ingester.flush', 'forge.results.baseline', 'forge.results.regrade', 'forge.results.review', 'forge.results.audit', 'forge.results.run', ...readStream],
        // forge run's live step logs read attempts' results and traces as they are published (app/progress.ts); reading only
        subscribe: ['forge.progress.>', 'forge.results.attempt', 'forge.results.attempt.>', 'forge.results.trace.>', '_INBOX.>'],
      }
  }
}

/** The `authorization` block of nats.conf: one user per role with its permissions. */
export function natsAuthorization(secrets: BusSecrets): string {
  const list = (subjects: string[]) => `[${subjects.map((s) => JSON.stringify(s)).join(', ')}]`
  const users = BUS_ROLES.map((role) => {
    const { user, password } = secrets.users[role]
    const p = rolePermissions(role)
    const responses = p.maxResponses !== undefined ? `, allow_responses: { max: ${p.maxResponses} }` : ''
    return `    { user: ${JSON.stringify(user)}, password: ${JSON.stringify(password)}, permissions: { publish: { allow: ${list(p.publish)} }, subscribe: { allow: ${list(p.subscribe)} }${responses} } }`
  })
  return ['authorization {', '  users = [', users.join(',\n'), '  ]', '}'].join('\n')
}

/** Where a process found what it needs to join a bus. */
export interface BusAccess {
  user?: string
  password?: string
  tls?: { caFile?: string; certFile?: string; keyFile?: string }
  /** hex; undefined: this process cannot sign or verify results */
  resultsKey?: string
}

/** Embedded stacks this process started or found, by NATS URL → FORGE_HOME. */
const localBuses = new Map<string, string>()

/** Remembers that `natsUrl` is the embedded nats-server of `home` (stack/local-stack.ts). */
export function registerLocalBus(natsUrl: string, home: string): void {
  localBuses.set(natsUrl, home)
}

/**
 * A role's access to the bus at `natsUrl`: FORGE_NATS_USER / FORGE_NATS_PASSWORD (and TLS, results
 * key) from the environment when set (fleet); else the credentials of the embedded stack serving
 * that URL (registered, or FORGE_HOME's when its stack.json names that URL) and FORGE_HOME's results key.
 */
export function busAccess(natsUrl: string, role: BusRole, env: NodeJS.ProcessEnv = process.env): BusAccess {
  const access: BusAccess = {}
  const tls = { caFile: readSetting('natsTlsCa', env), certFile: readSetting('natsTlsCert', env), keyFile: readSetting('natsTlsKey', env) }
  if (tls.caFile !== undefined || tls.certFile !== undefined || tls.keyFile !== undefined) {
    access.tls = Object.fromEntries(Object.entries(tls).filter(([, v]) => v !== undefined)) as BusAccess['tls'] & object
  }
  const envUser = readSetting('natsUser', env)
  const envKey = readSetting('resultsKey', env)
  const home = localBuses.get(natsUrl) ?? homeServing(natsUrl, env)
  const secrets = home === undefined ? undefined : readBusSecrets(home)
  if (envUser !== undefined) {
    access.user = envUser
    const password = readSetting('natsPassword', env)
    if (password !== undefined) access.password = password
  } else if (secrets !== undefined) {
    access.user = secrets.users[role].user
    access.password = secrets.users[role].password
  }
  // the results key does not depend on the NATS server: FORGE_HOME's, when nothing else names one
  const key = envKey ?? secrets?.results_key ?? readBusSecrets(path.resolve(readSetting('home', env)))?.results_key
  if (key !== undefined) access.resultsKey = key
  return access
}

/** The results key of this machine's CLI without a bus at hand: FORGE_RESULTS_KEY, else FORGE_HOME's (undefined when neither). */
export function homeResultsKey(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return readSetting('resultsKey', env) ?? readBusSecrets(path.resolve(readSetting('home', env)))?.results_key
}

/** FORGE_HOME, when its embedded stack's nats-server is the one at `natsUrl`. */
function homeServing(natsUrl: string, env: NodeJS.ProcessEnv): string | undefined {
  const home = path.resolve(readSetting('home', env))
  try {
    const state = JSON.parse(readFileSync(path.join(home, 'stack.json'), 'utf8')) as { nats?: { url?: string } }
    return state.nats?.url === natsUrl ? home : undefined
  } catch {
    return undefined
  }
}

/** The key that signs and checks one run's messages. */
export function runKey(resultsKey: string, runId: string): Buffer {
  return derivedKey(resultsKey, `forge-results-v1/${runId}`)
}

/**
 * A key derived from the results key for one use (a run's messages, a kind of grant: store/grants.ts),
 * computed once: a worker signs and tags two messages per attempt, the ingester checks each (issue 15).
 */
export function derivedKey(resultsKey: string, label: string): Buffer {
  const cacheKey = `${resultsKey}/${label}`
  let key = derivedKeys.get(cacheKey)
  if (key === undefined) {
    key = createHmac('sha256', Buffer.from(resultsKey, 'hex')).update(label).digest()
    if (derivedKeys.size >= 1024) derivedKeys.clear()
    derivedKeys.set(cacheKey, key)
  }
  return key
}

const derivedKeys = new Map<string, Buffer>()

/** The signature of one message: HMAC-SHA256 of subject and body under the run's key, hex. */
export function signMessage(resultsKey: string, runId: string, subject: string, body: Uint8Array): string {
  return createHmac('sha256', runKey(resultsKey, runId)).update(subject).update('\n').update(body).digest('hex')
}

/** Whether `signature` is the valid signature of the message (constant time). */
export function verifyMessage(resultsKey: string, runId: string, subject: string, body: Uint8Array, signature: string | undefined): boolean {
  if (signature === undefined || !/^[0-9a-f]{64}$/.test(signature)) return false
  const expected = Buffer.from(signMessage(resultsKey, runId, subject, body), 'hex')
  return timingSafeEqual(expected, Buffer.from(signature, 'hex'))
}

/** A JetStream msg id nobody without the key can produce: `<id>#<tag>`. */
export function taggedMsgId(resultsKey: string, runId: string, id: string): string {
  return `${id}#${createHmac('sha256', runKey(resultsKey, runId)).update(`msgid/${id}`).digest('base64url').slice(0, 22)}`
}

/** A child process's environment for `role` on the bus at `natsUrl`: its credentials, TLS files and results key. */
export function busAccessEnv(natsUrl: string, role: BusRole, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const access = busAccess(natsUrl, role, env)
  return settingsEnv({
    natsUser: access.user,
    natsPassword: access.password,
    natsTlsCa: access.tls?.caFile,
    natsTlsCert: access.tls?.certFile,
    natsTlsKey: access.tls?.keyFile,
    resultsKey: access.resultsKey,
  })
}
