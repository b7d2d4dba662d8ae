/**
 * Every key and id of an attempt, derived from one `AttemptKey` (the zod schema in core/contracts):
 * its `attempt_uid` (NATS msg id, ClickHouse key), the seed of the mock agent and of every seeded
 * decision, and the run and config ids it is minted under. Pure: the clock and the entropy of a new
 * run id are arguments; no runtime import of zod or the contracts, so workflows may import it.
 */
import type { z } from 'zod'
import type { AttemptKey as AttemptKeySchema } from './contracts/index.js'
import { seedFromString } from './random.js'

/** The fields that locate one attempt; every per-attempt message and row starts with them. */
export type AttemptKey = z.infer<typeof AttemptKeySchema>

/** An attempt named by its coordinates, before its uid is derived from them. */
export type AttemptCoordinates = Omit<AttemptKey, 'attempt_uid'>

/** `run_id/config_id/task_id/attempt` — the business key: NATS msg id, ClickHouse key, seed source. */
export function attemptUidOf(key: Pick<AttemptKey, 'run_id' | 'config_id' | 'task_id' | 'attempt'>): string {
  return `${key.run_id}/${key.config_id}/${key.task_id}/${key.attempt}`
}

/** The key of an attempt named by its coordinates (extra fields of `of` are left out). */
export function attemptKeyFor(of: AttemptCoordinates): AttemptKey {
  return { attempt_uid: attemptUidOf(of), run_id: of.run_id, config_id: of.config_id, suite: of.suite, task_id: of.task_id, attempt: of.attempt }
}

/** The key fields of anything that carries a key (a result, a stored trace, a row), in key order and nothing else. */
export function attemptKeyOf(of: AttemptKey): AttemptKey {
  return { attempt_uid: of.attempt_uid, run_id: of.run_id, config_id: of.config_id, suite: of.suite, task_id: of.task_id, attempt: of.attempt }
}

/**
 * What an attempt's seed is drawn from: the run seed, config, task and attempt. The run id is left
 * out on purpose: the same `--seed` must reproduce an attempt's behaviour in a new run.
 */
export function seedKeyOf(key: Pick<AttemptKey, 'config_id' | 'task_id' | 'attempt'>, runSeed: string): string {
  return `${runSeed}:${key.config_id}/${key.task_id}/${key.attempt}`
}

/** The attempt's seed (unsigned 32-bit): what the mock agent, adapters and fault decisions draw from. */
export function attemptSeedOf(key: Pick<AttemptKey, 'config_id' | 'task_id' | 'attempt'>, runSeed: string): number {
  return seedFromString(seedKeyOf(key, runSeed))
}

/**
 * A new run's id: `r` + the UTC time to the second (`YYYYMMDDhhmmss`) + `-` + entropy, e.g.
 * `r20240506070809-a069b8`. The caller reads the clock and draws the entropy (hex).
 */
export function mintRunId(atMs: number, entropy: string): string {
  const stamp = new Date(atMs).toISOString().replace(/[-:T]/g, '').slice(0, 14)
  return `r${stamp}-${entropy}`
}

/**
 * A configuration's identity: the same adapter and settings give the same id across runs
 * (`<adapter>-<first 8 hex of sha256>`). The price table is left out: it changes what an attempt
 * costs, not what the agent does.
 */
export function configIdOf(adapter: string, adapterConfig: Record<string, unknown>): string {
  const { price_table: _priceTable, ...settings } = adapterConfig
  return `${adapter}-${sha256Hex(JSON.stringify({ adapter, adapterConfig: settings })).slice(0, 8)}`
}

// sha-256 (FIPS 180-4) in plain code: node:crypto cannot enter the workflow bundle, which imports this module
const K = Uint32Array.from([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74,
  0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d,
  0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e,
  0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5,
  0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
])
const utf8 = new TextEncoder()

/** The SHA-256 digest of a string's UTF-8 bytes, as lowercase hex. */
export function sha256Hex(text: string): string {
  const bytes = utf8.encode(text)
  // message + 0x80 + zero padding + 64-bit big-endian bit length, to a multiple of 64 bytes
  const padded = new Uint8Array(Math.ceil((bytes.length + 9) / 64) * 64)
  padded.set(bytes)
  padded[bytes.length] = 0x80
  const view = new DataView(padded.buffer)
  view.setUint32(padded.length - 8, Math.floor(bytes.length / 0x20000000))
  view.setUint32(padded.length - 4, (bytes.length * 8) >>> 0)
  const h = Uint32Array.from([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19])
  const w = new Uint32Array(64)
  const rotr = (x: number, n: number): number => (x >>> n) | (x << (32 - n))
  for (let offset = 0; offset < padded.length; offset += 64) {
    for (let i = 0; i < 16; i++) w[i] = view.getUint32(offset + i * 4)
    for (let i = 16; i < 64; i++) {
      const w15 = w[i - 15]!
      const w2 = w[i - 2]!
      const s0 = rotr(w15, 7) ^ rotr(w15, 18) ^ (w15 >>> 3)
      const s1 = rotr(w2, 17) ^ rotr(w2, 19) ^ (w2 >>> 10)
      w[i] = (w[i - 16]! + s0 + w[i - 7]! + s1) >>> 0
    }
    let [a, b, c, d, e, f, g, hh] = [h[0]!, h[1]!, h[2]!, h[3]!, h[4]!, h[5]!, h[6]!, h[7]!]
    for (let i = 0; i < 64; i++) {
      const t1 = (hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i]! + w[i]!) >>> 0
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) >>> 0
      hh = g
      g = f
      f = e
      e = (d + t1) >>> 0
      d = c
      c = b
      b = a
      a = (t1 + t2) >>> 0
    }
    for (const [i, v] of [a, b, c, d, e, f, g, hh].entries()) h[i] = (h[i]! + v) >>> 0
  }
  return Array.from(h, (word) => word.toString(16).padStart(8, '0')).join('')
}
