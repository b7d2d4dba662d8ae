/** Loading price tables in the worker: the shipped default, a table the run names, and clear errors. */
import { existsSync, mkdtempSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { costOf } from '../../core/pricing.js'
import { PriceTableError } from '../../engine/llm/errors.js'
import { forgetPriceTables, loadPriceTable, priceTableCacheDir } from '../../engine/llm/price-table.js'
import { pruneCacheDir, STALE_TEMP_MS } from '../../engine/plan-cache.js'

const dir = mkdtempSync(path.join(tmpdir(), 'forge-prices-'))
function file(name: string, text: string): string {
  const at = path.join(dir, name)
  writeFileSync(at, text)
  return at
}

describe('price tables', () => {
  it('loads the shipped default, where local and scripted models cost zero and unknown ones are unavailable', async () => {
    const table = await loadPriceTable()
    expect(table).toBe(await loadPriceTable(undefined))
    expect(table.version).toBe('2026-11-default.2')
    expect(costOf(table, 'smollm2-135m-instruct', { input_tokens: 1000, output_tokens: 1000 })).toBe(0)
    // --model local: the stack's model server
    expect(costOf(table, 'local', { input_tokens: 1000, output_tokens: 1000 })).toBe(0)
    expect(costOf(table, 'local:smollm2-135m-instruct', { input_tokens: 1000, output_tokens: 1000 })).toBe(0)
    expect(costOf(table, 'scripted-e2e', { input_tokens: 1000, output_tokens: 1000 })).toBe(0)
    expect(costOf(table, 'gpt-4o-mini-2024-07-18', { input_tokens: 1_000_000, output_tokens: 0 })).toBe(0.15)
    expect(costOf(table, 'mystery', { input_tokens: 1, output_tokens: 1 })).toBeNull()
  })

  it('loads the table a run names', async () => {
    const at = file('mine.yaml', 'version: mine-1\ndate: "2026-12-01"\nmodels:\n  m: { input_per_mtok: 1, output_per_mtok: 2 }\n')
    expect(await loadPriceTable(at)).toEqual({ version: 'mine-1', date: '2026-12-01', currency: 'USD', models: { m: { input_per_mtok: 1, output_per_mtok: 2 } } })
  })

  it('names the file and every bad field', async () => {
    const bad = file('bad.yaml', 'version: v\ndate: 30/11/2026\nmodels:\n  m: { input_per_mtok: -1, output_per_mtok: 2 }\n')
    await expect(loadPriceTable(bad)).rejects.toThrow(
      new PriceTableError(bad, 'date: must be YYYY-MM-DD; models.m.input_per_mtok: Too small: expected number to be >=0'),
    )
    const missing = path.join(dir, 'nope.yaml')
    await expect(loadPriceTable(missing)).rejects.toThrow(`price table ${missing}: cannot be read`)
    await expect(loadPriceTable(file('notyaml.yaml', 'a: [1'))).rejects.toThrow('is not valid YAML')
  })

  it("is kept where planning keeps it, under its path and content: read back as validated, an edit validated again, a damaged file replaced", async () => {
    const home = mkdtempSync(path.join(tmpdir(), 'forge-prices-home-'))
    const cacheDir = priceTableCacheDir(home)
    const at = file('planned.yaml', 'version: p-1\ndate: "2026-12-01"\nmodels:\n  m: { input_per_mtok: 1, output_per_mtok: 2 }\n')
    const load = (opts: { readOnly?: boolean } = {}) => {
      // each load as a new `forge run` makes it: nothing remembered in this process
      forgetPriceTables()
      return loadPriceTable(at, { cacheDir, ...opts })
    }
    // a dry run reads the cache and writes nothing
    expect((await load({ readOnly: true })).version).toBe('p-1')
    expect(existsSync(cacheDir)).toBe(false)
    expect((await load()).version).toBe('p-1')
    const [cached] = readdirSync(cacheDir)
    expect(readdirSync(cacheDir)).toEqual([cached])
    const cachedPath = path.join(cacheDir, cached!)
    // what the next plan reads is the file, not the YAML: marked there, the mark comes back
    const body = JSON.parse(readFileSync(cachedPath, 'utf8')) as { table: { version: string } }
    writeFileSync(cachedPath, JSON.stringify({ ...body, table: { ...body.table, version: 'from-the-cache' } }))
    expect((await load()).version).toBe('from-the-cache')
    // an edit is another content: parsed and validated again, and a bad one refused as ever
    writeFileSync(at, 'version: p-2\ndate: "2026-12-02"\nmodels:\n  m: { input_per_mtok: 1, output_per_mtok: 2 }\n')
    expect((await load()).version).toBe('p-2')
    writeFileSync(at, 'version: p-3\ndate: 2/12/2026\nmodels: {}\n')
    await expect(load()).rejects.toThrow(PriceTableError)
    // a damaged cache file is validated again and written over
    writeFileSync(at, 'version: p-1\ndate: "2026-12-01"\nmodels:\n  m: { input_per_mtok: 1, output_per_mtok: 2 }\n')
    writeFileSync(cachedPath, '{"format": 1, "tab')
    expect((await load()).version).toBe('p-1')
    expect((JSON.parse(readFileSync(cachedPath, 'utf8')) as { table: { version: string } }).table.version).toBe('p-1')
  })

  it("leaves no writer's temp file behind for long: one older than a minute goes with the next write", () => {
    const cacheDir = mkdtempSync(path.join(tmpdir(), 'forge-plan-cache-'))
    const stale = path.join(cacheDir, 'a.json.123.tmp')
    const fresh = path.join(cacheDir, 'b.json.456.tmp')
    for (const f of [stale, fresh, path.join(cacheDir, 'c.json')]) writeFileSync(f, '{}')
    const now = Date.now()
    utimesSync(stale, new Date(now - STALE_TEMP_MS - 1_000), new Date(now - STALE_TEMP_MS - 1_000))
    pruneCacheDir(cacheDir, 8, now)
    // a writer may still be writing the fresh one; the killed one's is gone; the cache itself stays
    expect(readdirSync(cacheDir).sort()).toEqual(['b.json.456.tmp', 'c.json'])
  })
})
