/**
 * Seeded randomness for pure code: every random choice in the harness derives from a seed
 * (normally the attempt uid plus the run seed), so a rerun makes the same choices.
 */

const FNV_OFFSET_BASIS = 0x811c9dc5
const FNV_PRIME = 0x01000193
const utf8 = new TextEncoder()

/** A stable unsigned 32-bit hash of a string (FNV-1a over its UTF-8 bytes). */
export function seedFromString(s: string): number {
  let hash = FNV_OFFSET_BASIS
  for (const byte of utf8.encode(s)) {
    hash ^= byte
    hash = Math.imul(hash, FNV_PRIME)
  }
  return hash >>> 0
}

/** A mulberry32 generator: the same seed yields the same sequence of numbers in [0, 1). */
export function createRng(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** One item chosen by `rng`; throws a RangeError on an empty list. */
export function pick<T>(rng: () => number, items: readonly T[]): T {
  if (items.length === 0) throw new RangeError('pick: cannot choose from an empty list')
  const index = Math.min(items.length - 1, Math.floor(rng() * items.length))
  return items[index] as T
}
