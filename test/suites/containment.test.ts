/**
 * Issue 10: suites stay inside themselves. Every path suite.yaml names and every file of the suite
 * resolves inside the suite directory after symlinks — anything else is a load error naming the
 * file and field, and a module outside is never imported — and suite_hash covers every file an
 * attempt can be given (dotfiles of a workspace fixture included).
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { SuiteLoadError } from '../../engine/errors.js'
import { loadSuite } from '../../engine/suite-loader.js'
import { BASELINE, makeSuite, removeTempSuites } from './temp-suite.js'

const outside = mkdtempSync(join(tmpdir(), 'forge-outside-'))
afterAll(() => {
  removeTempSuites()
  rmSync(outside, { recursive: true, force: true })
})

/** The problems a load reports, as `file: path: message` lines. */
async function loadProblems(dir: string): Promise<string[]> {
  const error = await loadSuite(dir).then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(SuiteLoadError)
  return (error as SuiteLoadError).problems.map((p) => `${p.file}: ${p.path}: ${p.message}`)
}

/** A module outside every suite that says when it is imported. */
function outsideModule(name: string): string {
  const file = join(outside, name)
  writeFileSync(file, `globalThis.__forgeOutsideImports = (globalThis.__forgeOutsideImports ?? 0) + 1\nexport const tools = []\nexport const invariants = {}\n`)
  return file
}
const outsideImports = (): number => (globalThis as { __forgeOutsideImports?: number }).__forgeOutsideImports ?? 0

describe('suite containment', () => {
  it('refuses a fixture symlinked outside the suite, naming the file and the target', async () => {
    writeFileSync(join(outside, 'notes.txt'), 'outside notes\n')
    const dir = makeSuite({ 'fixtures/notes.txt': null })
    mkdirSync(join(dir, 'fixtures'), { recursive: true })
    symlinkSync(join(outside, 'notes.txt'), join(dir, 'fixtures', 'notes.txt'))
    expect(await loadProblems(dir)).toEqual([
      `fixtures/notes.txt: : a symlink to ${outside}/notes.txt, outside the suite directory ${dir}: every file a suite uses must lie inside it`,
      // it is no file of the suite, so the task's fixture is missing too
      'tasks/alpha.yaml: fixtures[0].path: fixture "notes.txt" not found under fixtures/',
    ])
  })

  it('refuses tools: outside the suite and never imports them', async () => {
    outsideModule('evil-tools.mjs')
    const before = outsideImports()
    const dir = makeSuite({ 'suite.yaml': BASELINE['suite.yaml']!.replace('tools: tools.mjs', `tools: ../${outside.split('/').pop()}/evil-tools.mjs`) })
    const problems = await loadProblems(dir)
    expect(problems[0]).toBe(`suite.yaml: tools: "../${outside.split('/').pop()}/evil-tools.mjs" resolves to ${outside}/evil-tools.mjs, outside the suite directory ${dir}`)
    expect(outsideImports()).toBe(before)
  })

  it('refuses tools and invariants that are symlinks inside the suite to modules outside it, and never imports them', async () => {
    outsideModule('evil-invariants.mjs')
    const before = outsideImports()
    const dir = makeSuite({ 'invariants.mjs': null })
    symlinkSync(join(outside, 'evil-invariants.mjs'), join(dir, 'invariants.mjs'))
    const problems = await loadProblems(dir)
    expect(problems).toContain(`suite.yaml: invariants: "invariants.mjs" leads through a symlink to ${outside}/evil-invariants.mjs, outside the suite directory ${dir}`)
    expect(problems).toContain(`invariants.mjs: : a symlink to ${outside}/evil-invariants.mjs, outside the suite directory ${dir}: every file a suite uses must lie inside it`)
    expect(outsideImports()).toBe(before)
  })

  it('refuses fixtures: ../elsewhere (validated against one directory, copied from another)', async () => {
    const dir = makeSuite({ 'suite.yaml': `${BASELINE['suite.yaml']!}fixtures: ../elsewhere\n` })
    expect(await loadProblems(dir)).toContain(`suite.yaml: fixtures: "../elsewhere" resolves to ${join(dir, '..', 'elsewhere')}, outside the suite directory ${dir}`)
  })

  it('refuses a goldens directory that is a symlink out of the suite', async () => {
    mkdirSync(join(outside, 'goldens'), { recursive: true })
    writeFileSync(join(outside, 'goldens', 'alpha.json'), BASELINE['goldens/alpha.json']!)
    const dir = makeSuite({ 'goldens/alpha.json': null })
    rmSync(join(dir, 'goldens'), { recursive: true, force: true })
    symlinkSync(join(outside, 'goldens'), join(dir, 'goldens'))
    const problems = await loadProblems(dir)
    expect(problems).toContain(`goldens: : a symlink to ${outside}/goldens, outside the suite directory ${dir}: every file a suite uses must lie inside it`)
    expect(problems).toContain(`suite.yaml: goldens: "goldens" leads through a symlink to ${outside}/goldens, outside the suite directory ${dir}`)
  })

  it('follows a symlink that stays inside the suite, and hashes what it leads to', async () => {
    const dir = makeSuite({ 'shared/notes.txt': 'shared notes\n', 'fixtures/notes.txt': null })
    mkdirSync(join(dir, 'fixtures'), { recursive: true })
    symlinkSync(join(dir, 'shared', 'notes.txt'), join(dir, 'fixtures', 'notes.txt'))
    const first = await loadSuite(dir)
    expect(first.fixtures.get('alpha')).toEqual({ 'notes.txt': 'shared notes\n' })
    writeFileSync(join(dir, 'shared', 'notes.txt'), 'changed\n')
    expect((await loadSuite(dir)).contentHash).not.toBe(first.contentHash)
  })

  it('covers every file an attempt can be given in suite_hash, dotfiles of a workspace fixture included', async () => {
    const task = BASELINE['tasks/alpha.yaml']!.replace('fixtures:\n  - path: notes.txt', 'fixtures:\n  - path: notes.txt\n  - kind: workspace\n    from: repo')
    const dir = makeSuite({ 'tasks/alpha.yaml': task, 'fixtures/repo/README.md': '# repo\n', 'fixtures/repo/.env': 'TOKEN=one\n' })
    const first = (await loadSuite(dir)).contentHash
    writeFileSync(join(dir, 'fixtures', 'repo', '.env'), 'TOKEN=two\n')
    expect((await loadSuite(dir)).contentHash).not.toBe(first)
    // VCS metadata is never copied into an attempt, and is no part of the content
    mkdirSync(join(dir, 'fixtures', 'repo', '.git'))
    writeFileSync(join(dir, 'fixtures', 'repo', '.git', 'HEAD'), 'ref: refs/heads/main\n')
    const withGit = (await loadSuite(dir)).contentHash
    writeFileSync(join(dir, 'fixtures', 'repo', '.git', 'HEAD'), 'ref: refs/heads/other\n')
    expect((await loadSuite(dir)).contentHash).toBe(withGit)
  })
})
