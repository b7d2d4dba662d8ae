/**
 * Loads versioned price tables (YAML) for the worker: `prices/default.yaml` unless the run names
 * another (RunPlan.price_table, `forge run --price-table`). Parsed once per file and cached. Planning
 * (app/plan-run.ts) also keeps a table it validated under FORGE_HOME/cache/prices, keyed by the file's
 * path and content (engine/plan-cache.ts): a `forge run` with an unchanged table neither loads the
 * YAML parser nor validates the table again (issue 15: ~10 ms of every run's start-up).
 */
import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { PriceTable } from '../../core/pricing.js'
import { cacheFilePath, readCacheFile, writeCacheFile } from '../plan-cache.js'
import { packageRoot } from '../suite-files.js'
import { PriceTableError } from './errors.js'

const cache = new Map<string, Promise<PriceTable>>()

let defaultPath: string | undefined

/** The price table shipped with Forge (found once: every attempt asks, and finding the package root reads the disk). */
export function defaultPriceTablePath(): string {
  return (defaultPath ??= path.join(packageRoot(), 'prices', 'default.yaml'))
}

/** Forgets every table this process loaded (tests). */
export function forgetPriceTables(): void {
  cache.clear()
}

/** Where planning keeps the price tables it validated, under a FORGE_HOME. */
export function priceTableCacheDir(home: string): string {
  return path.join(home, 'cache', 'prices')
}

/** price tables kept at most; the least recently written go first */
const MAX_CACHED_TABLES = 16

/** the layout of a cache file: another one is not read */
const FORMAT = 1

interface CacheFile {
  format: number
  file: string
  content_hash: string
  table: PriceTable
}

/**
 * The price table at `file` (default: Forge's own), validated; throws PriceTableError naming the problem.
 * With `cacheDir`, a table of the same path and content validated before is read from there, and one
 * validated now is kept there unless `readOnly`.
 */
export function loadPriceTable(file: string = defaultPriceTablePath(), opts: { cacheDir?: string; readOnly?: boolean } = {}): Promise<PriceTable> {
  const absolute = path.resolve(file)
  let table = cache.get(absolute)
  if (table === undefined) {
    table = readPriceTable(absolute, opts)
    cache.set(absolute, table)
    // a failed read is not cached: the file may be fixed before the next attempt
    table.catch(() => cache.delete(absolute))
  }
  return table
}

async function readPriceTable(file: string, opts: { cacheDir?: string; readOnly?: boolean }): Promise<PriceTable> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (error) {
    throw new PriceTableError(file, `cannot be read: ${(error as Error).message}`, { cause: error })
  }
  const { cacheDir } = opts
  if (cacheDir === undefined) return parsePriceTable(file, text)
  const contentHash = createHash('sha256').update(text).digest('hex')
  const cacheFile = cacheFilePath(cacheDir, [FORMAT, file, contentHash])
  const cached = readCacheFile(cacheFile) as Partial<CacheFile> | null | undefined
  // a file of another layout, or not written by this module whole: validated again
  if (cached?.format === FORMAT && cached.file === file && cached.content_hash === contentHash && typeof cached.table === 'object' && cached.table !== null) return cached.table
  const table = await parsePriceTable(file, text)
  if (opts.readOnly !== true) writeCacheFile(cacheDir, cacheFile, { format: FORMAT, file, content_hash: contentHash, table } satisfies CacheFile, MAX_CACHED_TABLES)
  return table
}

async function parsePriceTable(file: string, text: string): Promise<PriceTable> {
  // the YAML parser loads only when a table is parsed (not when planning finds it in its cache)
  const { parse: parseYaml } = await import('yaml')
  let raw: unknown
  try {
    raw = parseYaml(text)
  } catch (error) {
    throw new PriceTableError(file, `is not valid YAML: ${(error as Error).message}`, { cause: error })
  }
  const parsed = PriceTable.safeParse(raw)
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.map(String).join('.') || '(table)'}: ${i.message}`)
    throw new PriceTableError(file, problems.join('; '))
  }
  return parsed.data
}
