/**
 * Loads versioned price tables (YAML) for the worker: `prices/default.yaml` unless the run names
 * another (RunPlan.price_table, `forge run --price-table`). Parsed once per file and cached.
 */
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { parse as parseYaml } from 'yaml'
import { PriceTable } from '../../core/pricing.js'
import { packageRoot } from '../suite-loader.js'
import { PriceTableError } from './errors.js'

const cache = new Map<string, Promise<PriceTable>>()

let defaultPath: string | undefined

/** The price table shipped with Forge (found once: every attempt asks, and finding the package root reads the disk). */
export function defaultPriceTablePath(): string {
  return (defaultPath ??= path.join(packageRoot(), 'prices', 'default.yaml'))
}

/** The price table at `file` (default: Forge's own), validated; throws PriceTableError naming the problem. */
export function loadPriceTable(file: string = defaultPriceTablePath()): Promise<PriceTable> {
  const absolute = path.resolve(file)
  let table = cache.get(absolute)
  if (table === undefined) {
    table = readPriceTable(absolute)
    cache.set(absolute, table)
    // a failed read is not cached: the file may be fixed before the next attempt
    table.catch(() => cache.delete(absolute))
  }
  return table
}

async function readPriceTable(file: string): Promise<PriceTable> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (error) {
    throw new PriceTableError(file, `cannot be read: ${(error as Error).message}`, { cause: error })
  }
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
