import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it, vi } from 'vitest'
import YAML from 'yaml'
import { loadSuite, loadSuiteCached, packageRoot, resolveSuitePath, SUITE_CACHE_RUNS } from '../../engine/suite-loader.js'
import { SuiteLoadError } from '../../engine/errors.js'
import { BASELINE, makeSuite, removeTempSuites } from './temp-suite.js'

afterAll(removeTempSuites)

async function loadError(dir: string): Promise<SuiteLoadError> {
  try {
    await loadSuite(dir)
  } catch (error) {
    if (error instanceof SuiteLoadError) return error
    throw error
  }
  throw new Error(`expected ${dir} to fail loading`)
}

const alpha = BASELINE['tasks/alpha.yaml'] as string

describe('loadSuite on a valid suite', () => {
  it('loads tasks, tools, invariants, goldens and fixtures', async () => {
    const dir = makeSuite()
    const suite = await loadSuite(dir)
    expect(suite.name).toBe('tmp_suite')
    expect(suite.path).toBe(dir)
    expect(suite.tasks.map((t) => t.id)).toEqual(['alpha', 'beta'])
    expect([...suite.tools.keys()]).toEqual(['echo', 'shout'])
    expect([...suite.invariants.keys()]).toEqual(['always_ok'])
    expect(suite.goldens.get('alpha')?.output).toBe('hi')
    expect(suite.fixtures.get('alpha')).toEqual({ 'notes.txt': 'some notes\n' })
    expect(suite.fixtures.get('beta')).toEqual({})
    expect(suite.contentHash).toMatch(/^[0-9a-f]{64}$/)
    // beta used the `graders:` alias
    expect(suite.tasks[1]?.outcome_graders).toEqual([{ type: 'contains', expected: 'HEY' }])
  })

  it('gives the same content hash to the same content and a different one to different content', async () => {
    const a = await loadSuite(makeSuite())
    const b = await loadSuite(makeSuite())
    const c = await loadSuite(makeSuite({ 'fixtures/notes.txt': 'other notes\n' }))
    expect(a.contentHash).toBe(b.contentHash)
    expect(c.contentHash).not.toBe(a.contentHash)
  })

  it('caches per run and absolute path', async () => {
    const dir = makeSuite()
    const first = loadSuiteCached(dir, 'run-a')
    expect(loadSuiteCached(path.relative(process.cwd(), dir), 'run-a')).toBe(first)
    expect((await first).name).toBe('tmp_suite')
  })

  it("loads the suite again for the next run: a task edited between two runs is never served stale, unchanged content is shared", async () => {
    const dir = makeSuite()
    const before = await loadSuiteCached(dir, 'run-1')
    // the same content for another run: the very objects already loaded, found by the content's hash
    // without parsing a file again
    const parses = vi.spyOn(YAML, 'parseDocument')
    try {
      expect(await loadSuiteCached(dir, 'run-2')).toBe(before)
      expect(parses).not.toHaveBeenCalled()
      writeFileSync(path.join(dir, 'tasks', 'alpha.yaml'), alpha.replace(/^instruction: .*$/m, 'instruction: Say it twice.'))
      await loadSuiteCached(dir, 'run-3')
      expect(parses).toHaveBeenCalled()
    } finally {
      parses.mockRestore()
    }
    const after = await loadSuiteCached(dir, 'run-3')
    expect(after.contentHash).not.toBe(before.contentHash)
    expect(after.tasks.find((t) => t.id === 'alpha')?.instruction).toBe('Say it twice.')
    // a run already under way keeps the suite it started with
    expect(await loadSuiteCached(dir, 'run-1')).toBe(before)
    expect(before.tasks.find((t) => t.id === 'alpha')?.instruction).not.toBe('Say it twice.')
  })

  it(`keeps the suites of the last ${SUITE_CACHE_RUNS} runs`, async () => {
    const dir = makeSuite()
    const oldest = loadSuiteCached(dir, 'kept-0')
    await oldest
    for (let run = 1; run <= SUITE_CACHE_RUNS; run++) await loadSuiteCached(dir, `kept-${run}`)
    // the first run's entry went; a newer one is still there
    expect(loadSuiteCached(dir, 'kept-0')).not.toBe(oldest)
    const newest = loadSuiteCached(dir, `kept-${SUITE_CACHE_RUNS}`)
    expect(loadSuiteCached(dir, `kept-${SUITE_CACHE_RUNS}`)).toBe(newest)
  })
})

/** tasks/beta.yaml written as JSON */
const betaJson = { id: 'gamma', instruction: 'Shout the message.', input: { message: 'hey' }, tools: ['shout'], graders: [{ type: 'contains', expected: 'HEY' }] }

describe('loadSuite on JSON task files', () => {
  it('loads a .json task file next to the YAML ones, with the same result as its YAML twin', async () => {
    const suite = await loadSuite(makeSuite({ 'tasks/gamma.json': JSON.stringify(betaJson, null, 2) }))
    expect(suite.tasks.map((t) => t.id)).toEqual(['alpha', 'beta', 'gamma'])
    expect(suite.tasks[2]).toEqual({ ...suite.tasks[1], id: 'gamma' })
  })

  it('accepts a top-level "$schema" pointing editors at the task schema, and a byte-order mark', async () => {
    const suite = await loadSuite(makeSuite({ 'tasks/gamma.json': `\uFEFF${JSON.stringify({ $schema: './task.schema.json', ...betaJson })}` }))
    expect(suite.tasks[2]).toEqual({ ...suite.tasks[1], id: 'gamma' })
  })

  it('reports a JSON task file with the same file and field as a YAML one', async () => {
    const asYaml = await loadError(makeSuite({ 'tasks/beta.yaml': (BASELINE['tasks/beta.yaml'] as string).replace('tools: [shout]', 'tools: [shout, teleport]\nbudget: { max_tool_calls: 0 }\nexpected: HEY') }))
    const asJson = await loadError(makeSuite({ 'tasks/beta.yaml': null, 'tasks/beta.json': JSON.stringify({ ...betaJson, id: 'beta', tools: ['shout', 'teleport'], budget: { max_tool_calls: 0 }, expected: 'HEY' }) }))
    const located = (e: SuiteLoadError) => e.problems.map((p) => ({ ...p, file: p.file.replace(/\.(yaml|json)$/, '') }))
    expect(located(asJson)).toEqual(located(asYaml))
    expect(asJson.problems.map((p) => `${p.file} ${p.path}`).sort()).toEqual(['tasks/beta.json budget.max_tool_calls', 'tasks/beta.json expected', 'tasks/beta.json tools[1]'])
  })

  it('reports a JSON syntax error with its line and column, and a JSON document that is not an object', async () => {
    const error = await loadError(makeSuite({ 'tasks/gamma.json': '{\n  "id": "gamma",\n  "instruction": "x",\n}\n', 'tasks/delta.json': '[1, 2]' }))
    expect(error.problems).toEqual([
      { file: 'tasks/delta.json', path: '', message: 'a task file must be a JSON object, got an array' },
      { file: 'tasks/gamma.json', path: '', message: expect.stringMatching(/^JSON syntax error: .+ at line 4, column 1$/) },
    ])
  })

  it('refuses a file in the tasks directory that is neither YAML nor JSON instead of skipping it', async () => {
    const error = await loadError(makeSuite({ 'tasks/notes.txt': 'id: notes\n', 'tasks/old/gamma.yml.bak': 'id: gamma\n' }))
    expect(error.problems).toEqual([
      { file: 'tasks/notes.txt', path: '', message: 'not a task file: the tasks directory "tasks" holds only *.yaml, *.yml and *.json task files' },
      { file: 'tasks/old/gamma.yml.bak', path: '', message: 'not a task file: the tasks directory "tasks" holds only *.yaml, *.yml and *.json task files' },
    ])
  })

  it('says so when the tasks directory holds no task file at all', async () => {
    const error = await loadError(makeSuite({ 'tasks/alpha.yaml': null, 'tasks/beta.yaml': null, 'tasks/README.md': '# tasks\n' }))
    expect(error.problems).toEqual([
      { file: 'tasks/README.md', path: '', message: 'not a task file: the tasks directory "tasks" holds only *.yaml, *.yml and *.json task files' },
      { file: 'suite.yaml', path: 'tasks', message: 'no task files (*.yaml, *.yml, *.json) under "tasks"' },
    ])
  })
})

describe('loadSuite reports each kind of problem, naming the file and the field', () => {
  const cases: { name: string; overrides: Record<string, string | null>; file: string; path: string; message: RegExp }[] = [
    {
      name: 'a YAML syntax error, with its line',
      overrides: { 'tasks/alpha.yaml': 'id: alpha\ninstruction: [unclosed\ntools: [echo]\n' },
      file: 'tasks/alpha.yaml',
      path: '',
      message: /YAML syntax error: .*line 3/,
    },
    {
      name: 'a schema violation',
      overrides: { 'tasks/alpha.yaml': alpha.replace('instruction: Echo the message.', 'instruction: 42') },
      file: 'tasks/alpha.yaml',
      path: 'instruction',
      message: /expected string/i,
    },
    {
      name: 'an unknown field',
      overrides: { 'tasks/alpha.yaml': `${alpha}expected_answer: hi\n` },
      file: 'tasks/alpha.yaml',
      path: 'expected_answer',
      message: /unknown field/,
    },
    {
      name: 'an unknown tool',
      overrides: { 'tasks/alpha.yaml': alpha.replace('tools: [echo]', 'tools: [echo, teleport]') },
      file: 'tasks/alpha.yaml',
      path: 'tools[1]',
      message: /unknown tool "teleport" \(this suite has: echo, shout\)/,
    },
    {
      name: 'an unknown disallowed tool',
      overrides: { 'tasks/alpha.yaml': alpha.replace('tools: [echo]', 'tools: [echo]\ndisallowed_tools: [rm_rf]') },
      file: 'tasks/alpha.yaml',
      path: 'disallowed_tools[0]',
      message: /unknown tool "rm_rf"/,
    },
    {
      name: 'an unknown invariant',
      overrides: { 'tasks/alpha.yaml': alpha.replace('invariants: [always_ok]', 'invariants: [always_ok, never_lies]') },
      file: 'tasks/alpha.yaml',
      path: 'invariants[1]',
      message: /unknown invariant "never_lies" \(this suite has: always_ok\)/,
    },
    {
      name: 'an unknown grader type',
      overrides: { 'tasks/alpha.yaml': alpha.replace('type: exact', 'type: exactly') },
      file: 'tasks/alpha.yaml',
      path: 'outcome_graders[0].type',
      message: /unknown grader type "exactly"/,
    },
    {
      name: 'a grader config that does not validate',
      overrides: { 'tasks/beta.yaml': (BASELINE['tasks/beta.yaml'] as string).replace('expected: HEY', 'expected: { nested: true }') },
      file: 'tasks/beta.yaml',
      path: 'graders[0].expected',
      message: /./,
    },
    {
      name: 'a duplicate task id, naming both files',
      overrides: { 'tasks/gamma.yaml': (BASELINE['tasks/beta.yaml'] as string).replace('id: beta', 'id: alpha') },
      file: 'tasks/gamma.yaml',
      path: 'id',
      message: /duplicate task id "alpha": also defined in tasks\/alpha\.yaml/,
    },
    {
      name: 'a missing golden',
      overrides: { 'goldens/alpha.json': null },
      file: 'tasks/alpha.yaml',
      path: 'golden',
      message: /golden "alpha" not found: expected goldens\/alpha\.json/,
    },
    {
      name: 'a missing fixture',
      overrides: { 'fixtures/notes.txt': null },
      file: 'tasks/alpha.yaml',
      path: 'fixtures[0].path',
      message: /fixture "notes\.txt" not found under fixtures\//,
    },
    {
      name: 'a golden that is not an AgentTrace',
      overrides: { 'goldens/alpha.json': JSON.stringify({ output: 'hi', duration_ms: -1 }) },
      file: 'goldens/alpha.json',
      path: 'duration_ms',
      message: /./,
    },
    {
      name: 'a manifest violation',
      overrides: { 'suite.yaml': 'name: tmp_suite\ntools: tools.mjs\ninvariants: invariants.mjs\nowner: me\n' },
      file: 'suite.yaml',
      path: 'owner',
      message: /unknown field/,
    },
    {
      name: 'a missing tools module',
      overrides: { 'tools.mjs': null },
      file: 'suite.yaml',
      path: 'tools',
      message: /module "tools\.mjs" not found/,
    },
    {
      name: 'a tools module that does not import',
      overrides: { 'tools.mjs': 'export const tools = [ this is not javascript' },
      file: 'tools.mjs',
      path: '',
      message: /cannot import/,
    },
    {
      name: 'a tool input_schema keyword the checker does not know',
      overrides: { 'tools.mjs': (BASELINE['tools.mjs'] as string).replace("message: { type: 'string' } }, required: ['message'], additionalProperties", "message: { type: 'string', minLenght: 1 } }, required: ['message'], additionalProperties") },
      file: 'tools.mjs',
      path: 'tools[0].input_schema',
      message: /^tool "echo": #\/properties\/message: unsupported keyword "minLenght"$/,
    },
    {
      name: 'a tool input_schema pattern that does not compile',
      overrides: { 'tools.mjs': (BASELINE['tools.mjs'] as string).replace("message: { type: 'string' } }, required: ['message'] }", "message: { type: 'string', pattern: '([a-z' } }, required: ['message'] }") },
      file: 'tools.mjs',
      path: 'tools[1].input_schema',
      message: /^tool "shout": #\/properties\/message\/pattern: does not compile: /,
    },
    {
      name: 'a json_schema grader keyword the checker does not know',
      overrides: { 'tasks/beta.yaml': (BASELINE['tasks/beta.yaml'] as string).replace('  - type: contains\n    expected: HEY', '  - type: json_schema\n    schema: { type: string, maxLenght: 3 }') },
      file: 'tasks/beta.yaml',
      path: 'graders[0].schema',
      message: /^#: unsupported keyword "maxLenght"$/,
    },
  ]

  for (const c of cases) {
    it(c.name, async () => {
      const dir = makeSuite(c.overrides)
      const error = await loadError(dir)
      expect(error.problems).toContainEqual({ file: c.file, path: c.path, message: expect.stringMatching(c.message) })
      const line = c.path === '' ? `  ${c.file}: ` : `  ${c.file}: ${c.path}: `
      expect(error.message).toContain(`suite ${dir} has ${error.problems.length} problem(s):\n`)
      expect(error.message).toContain(line)
    })
  }

  it('reports every problem of a suite at once', async () => {
    const dir = makeSuite({
      'tasks/alpha.yaml': alpha
        .replace('tools: [echo]', 'tools: [echo, teleport]')
        .replace('invariants: [always_ok]', 'invariants: [never_lies]')
        .replace('type: exact', 'type: exactly'),
      'tasks/beta.yaml': 'id: beta\ninstruction: [oops\n',
      'tasks/gamma.yaml': (BASELINE['tasks/beta.yaml'] as string).replace('id: beta', 'id: alpha'),
      'tasks/delta.yaml': 'id: delta\ninput: {}\ntools: [shout]\ngraders:\n  - type: regex\n    pattern: 7\n',
      'goldens/alpha.json': null,
      'fixtures/notes.txt': null,
    })
    const error = await loadError(dir)
    const located = error.problems.map((p) => `${p.file} ${p.path}`)
    expect(located).toEqual(
      expect.arrayContaining([
        'tasks/alpha.yaml tools[1]',
        'tasks/alpha.yaml invariants[0]',
        'tasks/alpha.yaml outcome_graders[0].type',
        'tasks/alpha.yaml golden',
        'tasks/alpha.yaml fixtures[0].path',
        'tasks/beta.yaml ',
        'tasks/delta.yaml instruction',
        'tasks/delta.yaml graders[0].pattern',
        'tasks/gamma.yaml id',
      ]),
    )
    expect(error.problems.length).toBeGreaterThanOrEqual(9)
    expect(error.message.split('\n')).toHaveLength(error.problems.length + 1)
  })

  it('names the path of a missing suite directory or suite.yaml', async () => {
    const missing = path.join(os.tmpdir(), 'forge-no-such-suite-dir')
    await expect(loadSuite(missing)).rejects.toThrow(`suite ${missing} has 1 problem(s)`)
    const dir = makeSuite({ 'suite.yaml': null })
    const error = await loadError(dir)
    expect(error.problems).toEqual([{ file: 'suite.yaml', path: '', message: `missing: ${path.join(dir, 'suite.yaml')} not found` }])
  })
})

describe('resolveSuitePath', () => {
  it('resolves a bare name to the built-in suites of the package', () => {
    expect(packageRoot()).toBe(fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, ''))
    expect(resolveSuitePath('smoke', os.tmpdir())).toBe(path.join(packageRoot(), 'suites', 'smoke'))
  })

  it('finds the package root from a build directory too', () => {
    expect(packageRoot(path.join(packageRoot(), 'dist', 'workers'))).toBe(packageRoot())
  })

  it('resolves relative and absolute paths', () => {
    expect(resolveSuitePath('./suites/toy_math', packageRoot())).toBe(path.join(packageRoot(), 'suites', 'toy_math'))
    expect(resolveSuitePath('/abs/suite', '/')).toBe('/abs/suite')
  })

  it('resolves an npm package that declares its suite directory', async () => {
    const project = mkdtempSync(path.join(os.tmpdir(), 'forge-project-'))
    try {
      const pkg = path.join(project, 'node_modules', '@acme', 'evals')
      mkdirSync(pkg, { recursive: true })
      writeFileSync(path.join(pkg, 'package.json'), JSON.stringify({ name: '@acme/evals', exports: { '.': './index.js' }, forge: { suite: 'suite' } }))
      const source = makeSuite()
      const target = path.join(pkg, 'suite')
      mkdirSync(target)
      for (const [file, content] of Object.entries(BASELINE)) {
        mkdirSync(path.dirname(path.join(target, file)), { recursive: true })
        writeFileSync(path.join(target, file), content)
      }
      expect(resolveSuitePath('@acme/evals', project)).toBe(target)
      expect((await loadSuite('@acme/evals', project)).path).toBe(target)
      expect(source).not.toBe(target)
    } finally {
      rmSync(project, { recursive: true, force: true })
    }
  })

  it('says where it looked when a name resolves nowhere', () => {
    expect(() => resolveSuitePath('no_such_suite_anywhere', os.tmpdir())).toThrow(
      /no suite "no_such_suite_anywhere": tried built-in suite .*suites\/no_such_suite_anywhere; directory .*; npm package "no_such_suite_anywhere"/,
    )
  })
})
