/** Loading price tables in the worker: the shipped default, a table the run names, and clear errors. */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { costOf } from '../../core/pricing.js'
import { PriceTableError } from '../../engine/llm/errors.js'
import { loadPriceTable } from '../../engine/llm/price-table.js'

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
})
