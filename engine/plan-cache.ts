/**
 * Files planning keeps under FORGE_HOME/cache (issue 15): what a `forge run` read and validated once —
 * a suite (engine/suite-plan.ts), a price table (engine/llm/price-table.ts) — as JSON, keyed by what it
 * was made from and by this build of Forge, so that a later run reads it instead of parsing and
 * validating it again. Files are 0600 in a 0700 directory and written whole (temp + rename); a
 * directory keeps at most `max` of them (the least recently written go first, and with them the temp
 * files of a writer that was killed). Best effort throughout: a cache that cannot be read or written
 * costs a run the work it would have saved, never its result.
 */
import { createHash } from 'node:crypto'
import { readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ensurePrivateDir } from '../store/private-dir.js'
import { packageRoot } from './suite-files.js'

/** a temp file older than this is a killed writer's: pruned with the directory */
export const STALE_TEMP_MS = 60_000

/** The cache file in `dir` of what `key` names (every input it was made from), for this build. */
export function cacheFilePath(dir: string, key: readonly unknown[]): string {
  const name = createHash('sha256')
    .update(JSON.stringify([buildStamp(), ...key]))
    .digest('hex')
    .slice(0, 40)
  return join(dir, `${name}.json`)
}

/** The parsed content of a cache file; undefined when it is missing or not JSON. */
export function readCacheFile(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as unknown
  } catch {
    return undefined
  }
}

/** Writes `body` as `file` (in `dir`) whole, then keeps at most `max` files in `dir`; never throws. */
export function writeCacheFile(dir: string, file: string, body: unknown, max: number): void {
  try {
    ensurePrivateDir(dir)
    // written whole or not at all: a reader never sees half a file
    const temporary = `${file}.${process.pid}.tmp`
    writeFileSync(temporary, JSON.stringify(body), { mode: 0o600 })
    renameSync(temporary, file)
    pruneCacheDir(dir, max)
  } catch {
    // best effort: the next run does the work again
  }
}

/** Keeps the `max` most recently written files of `dir`, and no temp file older than STALE_TEMP_MS. */
export function pruneCacheDir(dir: string, max: number, now: number = Date.now()): void {
  const entries = readdirSync(dir).map((name) => ({ name, at: statSync(join(dir, name)).mtimeMs }))
  for (const { name, at } of entries) if (name.endsWith('.tmp') && now - at > STALE_TEMP_MS) rmSync(join(dir, name), { force: true })
  const files = entries.filter(({ name }) => name.endsWith('.json')).sort((a, b) => a.at - b.at)
  for (const { name } of files.slice(0, Math.max(0, files.length - max))) rmSync(join(dir, name), { force: true })
}

let stamp: string | undefined

/** This build of Forge: its package version and when this module was built (a rebuild makes every cached file another's). */
function buildStamp(): string {
  stamp ??= (() => {
    try {
      const version = String((JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version?: unknown }).version)
      const built = statSync(fileURLToPath(import.meta.url)).mtimeMs
      return `${version}/${built}`
    } catch {
      // no stamp: every file keyed by it is this process's own
      return `unstamped-${process.pid}-${Date.now()}`
    }
  })()
  return stamp
}
