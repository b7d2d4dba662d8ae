/**
 * engine/suite-plan.ts: planning keeps a suite it loaded under FORGE_HOME/cache/suites, keyed by its
 * path, content and Forge's build, and a later plan of the same content reads it instead of parsing
 * and validating the suite again; another content is loaded whole, with every error loadSuite gives.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it, vi } from 'vitest'
import YAML from 'yaml'
import { SuiteLoadError } from '../../engine/errors.js'
import { builtinSuitesDir, loadSuite } from '../../engine/suite-loader.js'
import { loadSuitePlan, MAX_CACHED_SUITES, planOf } from '../../engine/suite-plan.js'
import { BASELINE, makeSuite, removeTempSuites } from './temp-suite.js'

const homes: string[] = []
function cacheDir(): string {
  const home = mkdtempSync(path.join(os.tmpdir(), 'forge-suite-plan-'))
  homes.push(home)
  return path.join(home, 'cache', 'suites')
}

afterAll(() => {
  removeTempSuites()
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true })
})

/** How many YAML documents `load` parsed. */
async function parsesOf<T>(load: () => Promise<T>): Promise<{ value: T; parses: number }> {
  const spy = vi.spyOn(YAML, 'parseDocument')
  try {
    const value = await load()
    return { value, parses: spy.mock.calls.length }
  } finally {
    spy.mockRestore()
  }
}

describe('a suite as planning needs it', () => {
  it('is what loadSuite validated, tools as their specs, for every bundled suite — and reads back the same from the cache', async () => {
    const dir = cacheDir()
    for (const name of readdirSync(builtinSuitesDir())) {
      const whole = await loadSuite(name)
      const expected = planOf(whole)
      expect([...expected.tools.keys()].sort(), name).toEqual([...whole.tools.keys()].sort())
      for (const spec of expected.tools.values()) expect(spec, name).not.toHaveProperty('run')
      expect(await loadSuitePlan(name), name).toEqual(expected)
      // written, then read: the same plan
      await loadSuitePlan(name, { cacheDir: dir })
      const { value: cached, parses } = await parsesOf(() => loadSuitePlan(name, { cacheDir: dir }))
      expect(parses, name).toBe(0)
      expect(cached, name).toEqual(expected)
    }
    expect(readdirSync(dir).filter((f) => f.endsWith('.json'))).toHaveLength(readdirSync(builtinSuitesDir()).length)
  })

  it('loads a content once: the next plan of it parses nothing; an edit is loaded whole again', async () => {
    const dir = cacheDir()
    const suite = makeSuite()
    const first = await parsesOf(() => loadSuitePlan(suite, { cacheDir: dir }))
    expect(first.parses).toBeGreaterThan(0)
    // private: the cache holds what the tasks expect
    expect(statSync(dir).mode & 0o777).toBe(0o700)
    for (const file of readdirSync(dir)) expect(statSync(path.join(dir, file)).mode & 0o777, file).toBe(0o600)
    const again = await parsesOf(() => loadSuitePlan(suite, { cacheDir: dir }))
    expect(again.parses).toBe(0)
    expect(again.value).toEqual(first.value)
    writeFileSync(path.join(suite, 'tasks', 'alpha.yaml'), BASELINE['tasks/alpha.yaml']!.replace('Echo the message.', 'Echo it twice.'))
    const edited = await parsesOf(() => loadSuitePlan(suite, { cacheDir: dir }))
    expect(edited.parses).toBeGreaterThan(0)
    expect(edited.value.contentHash).not.toBe(first.value.contentHash)
    expect(edited.value.tasks.find((t) => t.id === 'alpha')?.instruction).toBe('Echo it twice.')
  })

  it('never answers from the cache for a content it has not validated: a broken edit is refused as loadSuite refuses it', async () => {
    const dir = cacheDir()
    const suite = makeSuite()
    await loadSuitePlan(suite, { cacheDir: dir })
    // a tool the suite does not define
    writeFileSync(path.join(suite, 'tasks', 'beta.yaml'), BASELINE['tasks/beta.yaml']!.replace('tools: [shout]', 'tools: [whisper]'))
    const error = await loadSuitePlan(suite, { cacheDir: dir }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(SuiteLoadError)
    expect(String((error as Error).message)).toContain('whisper')
    // and the same content back is the valid suite again
    writeFileSync(path.join(suite, 'tasks', 'beta.yaml'), BASELINE['tasks/beta.yaml']!)
    expect((await loadSuitePlan(suite, { cacheDir: dir })).tasks.map((t) => t.id).sort()).toEqual(['alpha', 'beta'])
  })

  it('loads the suite whole when a cache file is damaged or of another layout, and writes nothing when read-only', async () => {
    const dir = cacheDir()
    const suite = makeSuite()
    const expected = await loadSuitePlan(suite, { cacheDir: dir })
    const [file] = readdirSync(dir)
    for (const damaged of ['{"format":1,"suite":{"name":"x"', JSON.stringify({ format: 99, suite: { ...expected, tools: [] } }), 'null']) {
      writeFileSync(path.join(dir, file!), damaged)
      const { value, parses } = await parsesOf(() => loadSuitePlan(suite, { cacheDir: dir, readOnly: true }))
      expect(parses, damaged).toBeGreaterThan(0)
      expect(value, damaged).toEqual(expected)
    }
    // read-only: the damaged file is still there, and no new one
    expect(readdirSync(dir)).toEqual([file])
    const readOnlyDir = path.join(dir, '..', 'other')
    await loadSuitePlan(suite, { cacheDir: readOnlyDir, readOnly: true })
    expect(existsSync(readOnlyDir)).toBe(false)
  })

  it(`keeps at most ${MAX_CACHED_SUITES} suites, the least recently written going first`, async () => {
    const dir = cacheDir()
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    const old = new Date(Date.now() - 3_600_000)
    for (let i = 0; i < MAX_CACHED_SUITES; i++) {
      const name = path.join(dir, `old-${String(i).padStart(2, '0')}.json`)
      writeFileSync(name, '{}')
      utimesSync(name, old, new Date(old.getTime() + i * 1000))
    }
    await loadSuitePlan(makeSuite(), { cacheDir: dir })
    const left = readdirSync(dir)
    expect(left).toHaveLength(MAX_CACHED_SUITES)
    expect(left).not.toContain('old-00.json')
    expect(left).toContain('old-01.json')
  })
})
