/**
 * Suite loading: finds a suite directory by name, path or npm package, reads its files (task files
 * in YAML or JSON), imports its tools and invariants modules and hands everything to the pure validator. Every problem found is
 * reported at once in one SuiteLoadError; nothing is returned half-loaded.
 */
import { existsSync, realpathSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import YAML from 'yaml'
import { AgentTrace, ToolSpec, type SuiteManifest } from '../core/contracts/index.js'
import type { InvariantFn, LoadedSuite, ToolDefinition } from '../core/plugins.js'
import {
  goldenFileName,
  normalizeRelative,
  parseManifest,
  taskFileFormat,
  toolSchemaProblems,
  validateSuite,
  zodProblems,
  type SuiteDocument,
  type SuiteProblem,
} from '../core/suite-validation.js'
import { SuiteLoadError } from './errors.js'
import { errorMessage, hashFiles, isDirectory, isRecord, MANIFEST_FILE, noteLoadedSuite, resolveSuitePath, suiteContentHash, suiteFiles } from './suite-files.js'

// where a suite is and what it holds live in suite-files.ts (no YAML); these stay importable from here
export { builtinSuitesDir, loadedSuitePaths, packageRoot, resolveSuitePath, suiteContentHash } from './suite-files.js'

/** Loads and validates a suite; throws SuiteLoadError listing every problem found. */
export async function loadSuite(ref: string, cwd: string = process.cwd()): Promise<LoadedSuite> {
  const suitePath = resolveSuitePath(ref, cwd)
  if (!isDirectory(suitePath)) {
    throw new SuiteLoadError(suitePath, [{ file: suitePath, path: '', message: 'suite directory not found' }])
  }
  const manifestPath = path.join(suitePath, MANIFEST_FILE)
  if (!existsSync(manifestPath)) {
    throw new SuiteLoadError(suitePath, [{ file: MANIFEST_FILE, path: '', message: `missing: ${manifestPath} not found` }])
  }
  const manifestResult = parseManifest(parseYaml(MANIFEST_FILE, await readFile(manifestPath, 'utf8')))
  if (!manifestResult.ok) throw new SuiteLoadError(suitePath, manifestResult.problems)
  const { manifest } = manifestResult

  const problems: SuiteProblem[] = []
  // every path the suite names, and every file in it, stays inside it after symlinks
  const contained = await suiteFiles(suitePath)
  const escaping = manifestPathProblems(suitePath, manifest)
  problems.push(...contained.problems, ...escaping)
  // a module outside the suite is never imported (importing runs it)
  const outside = new Set(escaping.map((p) => p.path))
  const escapingFiles = new Set(contained.problems.map((p) => p.file))
  // the hash covers every file an attempt can be given (workspace copies include dotfiles), not only those validated
  const contentHash = await hashFiles(suitePath, contained.files)
  const allFiles = contained.files.filter((file) => !file.split('/').some((part) => part.startsWith('.')))

  const under = (dir: string): string[] => {
    const prefix = `${normalizeRelative(dir)}/`
    return allFiles.filter((f) => f.startsWith(prefix)).map((f) => f.slice(prefix.length))
  }

  const tasksDir = normalizeRelative(manifest.tasks)
  if (!isDirectory(path.join(suitePath, tasksDir))) {
    problems.push({ file: MANIFEST_FILE, path: 'tasks', message: `tasks directory "${manifest.tasks}" not found` })
  }
  // every file there is a task (YAML or JSON): anything else is an error, never skipped
  const taskDocuments: SuiteDocument[] = []
  for (const relative of under(tasksDir)) {
    const file = `${tasksDir}/${relative}`
    const format = taskFileFormat(file)
    if (format === undefined) {
      problems.push({ file, path: '', message: `not a task file: the tasks directory "${manifest.tasks}" holds only *.yaml, *.yml and *.json task files` })
      continue
    }
    const text = await readFile(path.join(suitePath, file), 'utf8')
    taskDocuments.push(format === 'json' ? parseJson(file, text) : parseYaml(file, text))
  }
  if (taskDocuments.length === 0 && isDirectory(path.join(suitePath, tasksDir))) {
    problems.push({ file: MANIFEST_FILE, path: 'tasks', message: `no task files (*.yaml, *.yml, *.json) under "${manifest.tasks}"` })
  }

  const version = contentHash.slice(0, 16)
  const importable = (field: 'tools' | 'invariants', file: string | undefined): string | undefined =>
    file === undefined || outside.has(field) || escapingFiles.has(normalizeRelative(file)) ? undefined : file
  const tools = await importTools(suitePath, importable('tools', manifest.tools), version, problems)
  const invariants = await importInvariants(suitePath, importable('invariants', manifest.invariants), version, problems)

  const goldensDir = normalizeRelative(manifest.goldens)
  const fixturesDir = normalizeRelative(manifest.fixtures)
  const validation = validateSuite({
    manifest,
    taskDocuments,
    toolNames: tools.keys(),
    invariantNames: invariants.keys(),
    goldenFiles: under(goldensDir),
    fixturePaths: under(fixturesDir),
  })
  problems.push(...validation.problems)

  const goldens = new Map<string, AgentTrace>()
  const fixtures = new Map<string, Record<string, string>>()
  if (problems.length === 0) {
    for (const task of validation.tasks) {
      if (task.golden !== undefined) {
        const file = `${goldensDir}/${normalizeRelative(goldenFileName(task.golden))}`
        const trace = parseGolden(file, await readFile(path.join(suitePath, file), 'utf8'), problems)
        if (trace !== undefined) goldens.set(task.id, trace)
      }
      const contents: Record<string, string> = {}
      for (const fixture of task.fixtures) {
        // directory-backed kinds (workspace, sqlite, http) are seeded per attempt by engine/env
        if (fixture.kind !== 'file') continue
        contents[fixture.path] = await readFile(path.join(suitePath, fixturesDir, normalizeRelative(fixture.path)), 'utf8')
      }
      fixtures.set(task.id, contents)
    }
  }
  if (problems.length > 0) throw new SuiteLoadError(suitePath, problems)

  noteLoadedSuite(realpathSync(suitePath))
  return { name: manifest.name, path: suitePath, manifest, tasks: validation.tasks, tools, invariants, goldens, fixtures, contentHash }
}

/** runs a process keeps its suites loaded for (a fleet worker serves several at once) */
export const SUITE_CACHE_RUNS = 16

/** loaded suites by run, oldest run first, then by absolute path; an entry's content is shared with another of the same path and hash */
const cache = new Map<string, Map<string, Promise<LoadedSuite>>>()

/**
 * loadSuite, memoized per run and absolute suite path: a run's attempts on one process see the suite as
 * it was when that process first needed it for the run, and the next run loads it again, so a task
 * edited between two runs is never served stale by a process that lives on (a fleet worker, a warm
 * worker that serves run after run). A reload with the same content returns the suite already loaded
 * (its tasks, tools and invariants are the same objects), found by hashing the suite's files without
 * parsing them. The last SUITE_CACHE_RUNS runs are kept; a failed load is not.
 */
export function loadSuiteCached(ref: string, runId = '', cwd: string = process.cwd()): Promise<LoadedSuite> {
  const suitePath = resolveSuitePath(ref, cwd)
  let ofRun = cache.get(runId)
  if (ofRun === undefined) {
    cache.set(runId, (ofRun = new Map()))
    // the oldest run's suites go
    if (cache.size > SUITE_CACHE_RUNS) cache.delete(cache.keys().next().value!)
  }
  const cached = ofRun.get(suitePath)
  if (cached !== undefined) return cached
  const others = [...cache.values()].flatMap((suites) => suites.get(suitePath) ?? [])
  const loading = (async () => {
    // content this process has loaded from this path already: that suite, without parsing and
    // validating it again (a warm worker's every run; ~5 ms before its first attempt, issue 15)
    const known = async (hash: string | undefined): Promise<LoadedSuite | undefined> => {
      for (const other of others) {
        const suite = await other.catch(() => undefined)
        if (suite !== undefined && suite.contentHash === hash) return suite
      }
      return undefined
    }
    if (others.length > 0) {
      const same = await known(await suiteContentHash(suitePath).catch(() => undefined))
      if (same !== undefined) return same
    }
    const fresh = await loadSuite(suitePath, cwd)
    return (await known(fresh.contentHash)) ?? fresh
  })()
  const suites = ofRun
  suites.set(suitePath, loading)
  loading.catch(() => suites.delete(suitePath))
  return loading
}

/** Forgets every cached suite (tests). */
export function clearSuiteCache(): void {
  cache.clear()
}

/** Parses one YAML file, turning syntax errors into a message with line and column. */
export function parseYaml(file: string, text: string): SuiteDocument {
  const doc = YAML.parseDocument(text, { prettyErrors: true })
  if (doc.errors.length > 0) {
    const messages = doc.errors.map((e) => (e.message.split('\n')[0] ?? e.message).replace(/:\s*$/, ''))
    return { file, syntaxError: `YAML syntax error: ${messages.join('; ')}` }
  }
  return { file, data: doc.toJS() as unknown }
}

/** Parses one JSON file, turning syntax errors into a message with line and column. */
export function parseJson(file: string, text: string): SuiteDocument {
  // editors on Windows write a byte-order mark that JSON.parse refuses
  const body = text.startsWith('\uFEFF') ? text.slice(1) : text
  try {
    return { file, data: JSON.parse(body) as unknown }
  } catch (error) {
    const message = errorMessage(error)
    const position = /at position (\d+)/.exec(message)?.[1]
    let where = ''
    if (position !== undefined) {
      const before = body.slice(0, Number(position)).split('\n')
      where = ` at line ${before.length}, column ${(before[before.length - 1]?.length ?? 0) + 1}`
    }
    return { file, syntaxError: `JSON syntax error: ${message.replace(/ in JSON at position .*$/s, '')}${where}` }
  }
}

function parseGolden(file: string, text: string, problems: SuiteProblem[]): AgentTrace | undefined {
  let data: unknown
  try {
    data = JSON.parse(text)
  } catch (error) {
    problems.push({ file, path: '', message: `invalid JSON: ${errorMessage(error)}` })
    return undefined
  }
  const parsed = AgentTrace.safeParse(data)
  if (!parsed.success) {
    problems.push(...zodProblems(file, parsed.error))
    return undefined
  }
  return parsed.data
}

async function importModule(
  suitePath: string,
  field: 'tools' | 'invariants',
  file: string,
  version: string,
  problems: SuiteProblem[],
): Promise<Record<string, unknown> | undefined> {
  const absolute = path.resolve(suitePath, file)
  if (!existsSync(absolute)) {
    problems.push({ file: MANIFEST_FILE, path: field, message: `module "${file}" not found` })
    return undefined
  }
  try {
    // the query makes edited suite code load fresh in a long-lived worker
    return (await import(`${pathToFileURL(absolute).href}?v=${version}`)) as Record<string, unknown>
  } catch (error) {
    problems.push({ file: normalizeRelative(file), path: '', message: `cannot import: ${errorMessage(error)}` })
    return undefined
  }
}

async function importTools(
  suitePath: string,
  file: string | undefined,
  version: string,
  problems: SuiteProblem[],
): Promise<Map<string, ToolDefinition>> {
  const tools = new Map<string, ToolDefinition>()
  if (file === undefined) return tools
  const mod = await importModule(suitePath, 'tools', file, version, problems)
  if (mod === undefined) return tools
  const where = normalizeRelative(file)
  const exported = mod['tools'] ?? mod['default']
  const list = Array.isArray(exported) ? exported : isRecord(exported) ? Object.values(exported) : undefined
  if (list === undefined) {
    problems.push({ file: where, path: '', message: 'must export `tools` (or a default export): an array of tool definitions' })
    return tools
  }
  list.forEach((def: unknown, i) => {
    const at = `tools[${i}]`
    if (!isRecord(def)) {
      problems.push({ file: where, path: at, message: 'a tool definition must be an object' })
      return
    }
    const spec = ToolSpec.safeParse({ name: def['name'], description: def['description'], input_schema: def['input_schema'] })
    if (!spec.success) {
      problems.push(...zodProblems(where, spec.error, [`tools`, i]))
      return
    }
    const schemaIssues = toolSchemaProblems(where, i, spec.data.name, spec.data.input_schema)
    if (schemaIssues.length > 0) {
      problems.push(...schemaIssues)
      return
    }
    const run = def['run']
    if (typeof run !== 'function') {
      problems.push({ file: where, path: `${at}.run`, message: 'must be a function (args, ctx) => result' })
      return
    }
    if (tools.has(spec.data.name)) {
      problems.push({ file: where, path: `${at}.name`, message: `duplicate tool name "${spec.data.name}"` })
      return
    }
    tools.set(spec.data.name, { ...spec.data, run: run.bind(def) as ToolDefinition['run'] })
  })
  return tools
}

async function importInvariants(
  suitePath: string,
  file: string | undefined,
  version: string,
  problems: SuiteProblem[],
): Promise<Map<string, InvariantFn>> {
  const invariants = new Map<string, InvariantFn>()
  if (file === undefined) return invariants
  const mod = await importModule(suitePath, 'invariants', file, version, problems)
  if (mod === undefined) return invariants
  const where = normalizeRelative(file)
  const exported = mod['invariants'] ?? mod['default']
  if (!isRecord(exported)) {
    problems.push({ file: where, path: '', message: 'must export `invariants` (or a default export): a record of name → (trace) => { passed, detail? }' })
    return invariants
  }
  for (const [name, fn] of Object.entries(exported)) {
    if (typeof fn !== 'function') {
      problems.push({ file: where, path: `invariants.${name}`, message: 'must be a function (trace) => { passed, detail? }' })
      continue
    }
    invariants.set(name, fn as InvariantFn)
  }
  return invariants
}

/** Each directory or module suite.yaml names must resolve inside the suite, also after symlinks. */
function manifestPathProblems(suitePath: string, manifest: SuiteManifest): SuiteProblem[] {
  const realRoot = realpathSync(suitePath)
  const inside = (p: string): boolean => p === realRoot || p.startsWith(`${realRoot}${path.sep}`)
  const problems: SuiteProblem[] = []
  const fields: Array<[string, string | undefined]> = [
    ['tasks', manifest.tasks],
    ['tools', manifest.tools],
    ['invariants', manifest.invariants],
    ['goldens', manifest.goldens],
    ['fixtures', manifest.fixtures],
  ]
  for (const [field, value] of fields) {
    if (value === undefined) continue
    const resolved = path.resolve(realRoot, value)
    if (!inside(resolved)) {
      problems.push({ file: MANIFEST_FILE, path: field, message: `"${value}" resolves to ${resolved}, outside the suite directory ${realRoot}` })
      continue
    }
    let real: string
    try {
      real = realpathSync(resolved)
    } catch {
      continue // a missing path is reported where it is used
    }
    if (!inside(real)) problems.push({ file: MANIFEST_FILE, path: field, message: `"${value}" leads through a symlink to ${real}, outside the suite directory ${realRoot}` })
  }
  return problems
}
