/**
 * Suite validation: turns the already-parsed files of a suite into tasks, or into a list of every
 * problem found — YAML/JSON syntax, files that are not task files, schema violations and dangling references (tools, invariants,
 * graders, goldens, fixtures) — so an author fixes them all in one pass. Pure: the loader does the I/O.
 */
import type { z } from 'zod'
import { SuiteManifest, Task } from './contracts/index.js'
import { fixtureRefsOf, validateGraderSpec } from './graders/index.js'
import { schemaProblems } from './json-schema.js'

/** One thing wrong with a suite: the file (relative to the suite directory), the field, what is wrong. */
export interface SuiteProblem {
  file: string
  /** the field inside the file, like `outcome_graders[0].expected`; '' for the whole file */
  path: string
  message: string
}

/** A YAML or JSON file after parsing: its data, or the syntax error that stopped the parser. */
export type SuiteDocument = { file: string; data: unknown } | { file: string; syntaxError: string }

/** The format of a task file by its name: `*.yaml` / `*.yml` or `*.json`; undefined for anything else. */
export function taskFileFormat(file: string): 'yaml' | 'json' | undefined {
  if (/\.ya?ml$/i.test(file)) return 'yaml'
  if (/\.json$/i.test(file)) return 'json'
  return undefined
}

export interface SuiteInventory {
  manifest: SuiteManifest
  /** every task file, in the order tasks should appear */
  taskDocuments: readonly SuiteDocument[]
  /** names of the tools the suite's tools module defines */
  toolNames: Iterable<string>
  /** names of the invariants the suite's invariants module defines */
  invariantNames: Iterable<string>
  /** files present under the goldens directory, relative to it with `/` separators, like `echo.json` */
  goldenFiles: Iterable<string>
  /** paths present under the fixtures directory, relative to it, with `/` separators */
  fixturePaths: Iterable<string>
}

export interface SuiteValidation {
  /** the tasks that parsed; use them only when `problems` is empty */
  tasks: Task[]
  problems: SuiteProblem[]
}

type IssuePath = readonly PropertyKey[]

/** `['outcome_graders', 0, 'expected']` → `outcome_graders[0].expected`. */
export function formatIssuePath(path: IssuePath): string {
  let out = ''
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`
    else out += out === '' ? String(key) : `.${String(key)}`
  }
  return out
}

/** The file a task's `golden:` names, relative to the goldens directory (`.json` is implied). */
export function goldenFileName(golden: string): string {
  return /\.json$/i.test(golden) ? golden : `${golden}.json`
}

/** One problem per zod issue; an unknown key becomes one problem naming that key. */
export function zodProblems(file: string, error: z.ZodError, prefix: IssuePath = []): SuiteProblem[] {
  const problems: SuiteProblem[] = []
  for (const issue of error.issues) {
    const path = [...prefix, ...issue.path]
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        problems.push({ file, path: formatIssuePath([...path, key]), message: 'unknown field' })
      }
      continue
    }
    const missing = issue.code === 'invalid_type' && /received undefined$/.test(issue.message)
    problems.push({ file, path: formatIssuePath(path), message: missing ? `required field missing (expected ${issue.expected})` : issue.message })
  }
  return problems
}

/**
 * Problems of one tool's `input_schema` (the tool `tools[index]` of the tools module `file`): an
 * unknown keyword or a malformed one would otherwise be skipped when arguments are checked.
 */
export function toolSchemaProblems(file: string, index: number, name: string, schema: unknown): SuiteProblem[] {
  return schemaProblems(schema).map((problem) => ({ file, path: `tools[${index}].input_schema`, message: `tool "${name}": ${problem}` }))
}

/** Parses `suite.yaml`; the loader cannot find anything else without it, so it is checked first. */
export function parseManifest(
  doc: SuiteDocument,
): { ok: true; manifest: SuiteManifest } | { ok: false; problems: SuiteProblem[] } {
  if ('syntaxError' in doc) return { ok: false, problems: [{ file: doc.file, path: '', message: doc.syntaxError }] }
  const parsed = SuiteManifest.safeParse(doc.data ?? {})
  if (!parsed.success) return { ok: false, problems: zodProblems(doc.file, parsed.error) }
  return { ok: true, manifest: parsed.data }
}

/** Validates every task document against the schema and against what the suite provides. */
export function validateSuite(inventory: SuiteInventory): SuiteValidation {
  const suite = suiteProvisions(inventory)
  const problems: SuiteProblem[] = []
  const tasks: Task[] = []
  const fileById = new Map<string, string>()

  for (const doc of inventory.taskDocuments) {
    if ('syntaxError' in doc) {
      problems.push({ file: doc.file, path: '', message: doc.syntaxError })
      continue
    }
    const { file } = doc
    if (!isRecord(doc.data)) {
      const json = taskFileFormat(file) === 'json'
      problems.push({ file, path: '', message: `a task file must be a ${json ? 'JSON object' : 'YAML mapping'}, got ${describe(doc.data, json)}` })
      continue
    }
    // `$schema` only points editors at `forge tasks schema`; it is no part of the task
    const { $schema, ...rest } = doc.data
    const data = typeof $schema === 'string' ? rest : doc.data

    const parsed = Task.safeParse(data)
    if (!parsed.success) problems.push(...zodProblems(file, parsed.error))

    // cross-references are checked on the raw document too, so a schema error elsewhere in the
    // file does not hide them
    const report: Report = (path, message) => problems.push({ file, path, message })
    checkUniqueId(data, file, fileById, report)
    checkToolReferences(data, suite.toolNames, report)
    checkInvariantReferences(data, suite.invariantNames, report)
    const graders = graderSpecsOf(data)
    checkGraderConfigs(graders, report)
    checkGolden(data, suite, report)
    const environment = checkFixtures(data, suite, report)
    checkGraderFixtureReads(graders, environment, report)

    if (parsed.success) tasks.push(parsed.data)
  }

  return { tasks, problems }
}

/** What a suite offers its tasks to refer to, as sets. */
interface SuiteProvisions {
  manifest: SuiteManifest
  toolNames: Set<string>
  invariantNames: Set<string>
  goldenFiles: Set<string>
  fixturePaths: Set<string>
}

/** Records one problem of the task file being checked: the field and what is wrong. */
type Report = (path: string, message: string) => void

function suiteProvisions(inventory: SuiteInventory): SuiteProvisions {
  return {
    manifest: inventory.manifest,
    toolNames: new Set(inventory.toolNames),
    invariantNames: new Set(inventory.invariantNames),
    goldenFiles: new Set(inventory.goldenFiles),
    fixturePaths: new Set(inventory.fixturePaths),
  }
}

/** A task id may be defined once per suite; `fileById` remembers where each was first seen. */
function checkUniqueId(data: Record<string, unknown>, file: string, fileById: Map<string, string>, report: Report): void {
  const id = data['id']
  if (typeof id !== 'string') return
  const first = fileById.get(id)
  if (first !== undefined) report('id', `duplicate task id "${id}": also defined in ${first}`)
  else fileById.set(id, file)
}

/** Allowed and disallowed tools must exist in the suite, and no tool may be both. */
function checkToolReferences(data: Record<string, unknown>, toolNames: Set<string>, report: Report): void {
  for (const field of ['tools', 'disallowed_tools'] as const) {
    forEachString(data[field], (name, i) => {
      if (!toolNames.has(name)) report(`${field}[${i}]`, `unknown tool "${name}" (${available('tools', toolNames)})`)
    })
  }
  const allowed = new Set(stringsOf(data['tools']))
  forEachString(data['disallowed_tools'], (name, i) => {
    if (allowed.has(name)) report(`disallowed_tools[${i}]`, `tool "${name}" is both allowed and disallowed`)
  })
}

function checkInvariantReferences(data: Record<string, unknown>, invariantNames: Set<string>, report: Report): void {
  forEachString(data['invariants'], (name, i) => {
    if (!invariantNames.has(name)) report(`invariants[${i}]`, `unknown invariant "${name}" (${available('invariants', invariantNames)})`)
  })
}

/** A task's grader entries that name a type (the schema reports the others), with their index. */
interface GraderEntries {
  /** `outcome_graders`, or its alias `graders` when the task uses that */
  field: 'outcome_graders' | 'graders'
  specs: { index: number; spec: Record<string, unknown> & { type: string } }[]
}

function graderSpecsOf(data: Record<string, unknown>): GraderEntries {
  const field = 'outcome_graders' in data ? 'outcome_graders' : 'graders'
  const raw = data[field]
  const specs: GraderEntries['specs'] = []
  if (Array.isArray(raw)) {
    raw.forEach((spec: unknown, index) => {
      if (isRecord(spec) && typeof spec['type'] === 'string') specs.push({ index, spec: { ...spec, type: spec['type'] } })
    })
  }
  return { field, specs }
}

/** Each grader's config against its registered schema (an unknown type gets a did-you-mean hint). */
function checkGraderConfigs(graders: GraderEntries, report: Report): void {
  for (const { index, spec } of graders.specs) {
    const at = `${graders.field}[${index}]`
    const checked = validateGraderSpec(spec)
    if (checked.ok) continue
    for (const p of checked.problems) {
      const path = formatIssuePath(p.path)
      report(path === '' ? at : path.startsWith('[') ? `${at}${path}` : `${at}.${path}`, p.message)
    }
  }
}

/** `golden:` must name a file inside the goldens directory that exists. */
function checkGolden(data: Record<string, unknown>, suite: SuiteProvisions, report: Report): void {
  const golden = data['golden']
  if (typeof golden !== 'string' || golden.length === 0) return
  const name = goldenFileName(golden)
  if (!isInside(name)) report('golden', `golden "${golden}" must name a file inside ${suite.manifest.goldens}/`)
  else if (!suite.goldenFiles.has(normalizeRelative(name))) report('golden', `golden "${golden}" not found: expected ${suite.manifest.goldens}/${name}`)
}

/**
 * Every fixture's names and files: environment fixtures need distinct names, and every path a
 * fixture names must exist inside the fixtures directory. Returns the environment fixtures by
 * name → kind, for the grader references.
 */
function checkFixtures(data: Record<string, unknown>, suite: SuiteProvisions, report: Report): Map<string, string> {
  const environment = new Map<string, string>()
  const fixtures = data['fixtures']
  if (!Array.isArray(fixtures)) return environment
  fixtures.forEach((fixture: unknown, i) => {
    if (!isRecord(fixture)) return
    registerEnvironmentFixture(fixture, i, environment, report)
    checkFixtureFiles(fixture, i, suite, report)
  })
  return environment
}

function registerEnvironmentFixture(fixture: Record<string, unknown>, i: number, environment: Map<string, string>, report: Report): void {
  const kind = fixture['kind'] ?? 'file'
  if (kind === 'file' || typeof kind !== 'string') return
  const name = typeof fixture['name'] === 'string' ? fixture['name'] : DEFAULT_FIXTURE_NAMES[kind]
  if (name === undefined) return
  if (environment.has(name)) report(`fixtures[${i}].name`, `duplicate fixture name "${name}": give each fixture its own \`name\``)
  else environment.set(name, kind)
}

function checkFixtureFiles(fixture: Record<string, unknown>, i: number, suite: SuiteProvisions, report: Report): void {
  for (const ref of fixtureReferences(fixture)) {
    const at = `fixtures[${i}].${ref.field}`
    if (!isInside(ref.path)) {
      report(at, `fixture "${ref.path}" must stay inside ${suite.manifest.fixtures}/`)
      continue
    }
    if (!fixtureExists(ref, suite.fixturePaths)) report(at, `fixture ${ref.directory ? 'directory ' : ''}"${ref.path}" not found under ${suite.manifest.fixtures}/`)
  }
}

function fixtureExists(ref: FixtureReference, fixturePaths: Set<string>): boolean {
  const wanted = normalizeRelative(ref.path)
  const hasFilesUnder = (): boolean => [...fixturePaths].some((p) => p.startsWith(`${wanted}/`))
  if (ref.directory) return hasFilesUnder()
  return fixturePaths.has(wanted) || (ref.orDirectory === true && hasFilesUnder())
}

/** Graders that read environment fixtures must find them in this task, of the kind they read. */
function checkGraderFixtureReads(graders: GraderEntries, environment: Map<string, string>, report: Report): void {
  for (const { index, spec } of graders.specs) {
    const at = `${graders.field}[${index}]`
    for (const ref of fixtureRefsOf(spec)) {
      const kind = environment.get(ref.name)
      const have = environment.size === 0 ? 'it has no workspace, sqlite or http fixtures' : `it has: ${[...environment].map(([n, k]) => `${n} (${k})`).join(', ')}`
      if (kind === undefined) report(at, `reads fixture "${ref.name}", which this task does not have (${have})`)
      else if (ref.kind !== undefined && kind !== ref.kind) report(at, `reads fixture "${ref.name}" as ${ref.kind}, but it is a ${kind} fixture`)
    }
  }
}

/** The name an environment fixture gets when its task file names none. */
export const DEFAULT_FIXTURE_NAMES: Readonly<Record<string, string>> = { workspace: 'workspace', sqlite: 'db', http: 'api' }

interface FixtureReference {
  /** the field inside the fixture entry, like `from` or `sql[1]` */
  field: string
  path: string
  /** must be a directory with at least one file */
  directory: boolean
  /** may be a file or a directory */
  orDirectory?: boolean
}

/** The files and directories under the fixtures directory that a fixture entry names. */
function fixtureReferences(fixture: Record<string, unknown>): FixtureReference[] {
  const refs: FixtureReference[] = []
  const kind = fixture['kind'] ?? 'file'
  const str = (v: unknown): v is string => typeof v === 'string' && v !== ''
  if (kind === 'file' && str(fixture['path'])) refs.push({ field: 'path', path: fixture['path'], directory: false })
  if ((kind === 'workspace' || kind === 'http') && str(fixture['from'])) {
    const from = fixture['from']
    refs.push({ field: 'from', path: from, directory: true })
    if (kind === 'workspace' && Array.isArray(fixture['conditions'])) {
      fixture['conditions'].forEach((condition: unknown, j) => {
        if (!isRecord(condition) || !Array.isArray(condition['paths'])) return
        condition['paths'].forEach((p: unknown, k) => {
          if (str(p)) refs.push({ field: `conditions[${j}].paths[${k}]`, path: `${from}/${p}`, directory: false, orDirectory: true })
        })
      })
    }
  }
  if (kind === 'sqlite') {
    for (const field of ['sql', 'sql_after'] as const) {
      const sql = fixture[field]
      if (str(sql)) refs.push({ field, path: sql, directory: false })
      if (Array.isArray(sql)) sql.forEach((p: unknown, j) => str(p) && refs.push({ field: `${field}[${j}]`, path: p, directory: false }))
    }
    const csv = fixture['csv']
    if (isRecord(csv)) for (const [table, p] of Object.entries(csv)) if (str(p)) refs.push({ field: `csv.${table}`, path: p, directory: false })
  }
  return refs
}

/** `./a//b.json` → `a/b.json`; the key fixtures are stored and looked up by. */
export function normalizeRelative(path: string): string {
  const parts: string[] = []
  for (const part of path.replace(/\\/g, '/').split('/')) {
    if (part === '' || part === '.') continue
    if (part === '..') parts.pop()
    else parts.push(part)
  }
  return parts.join('/')
}

function isInside(path: string): boolean {
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path)) return false
  let depth = 0
  for (const part of path.replace(/\\/g, '/').split('/')) {
    if (part === '..') depth -= 1
    else if (part !== '' && part !== '.') depth += 1
    if (depth < 0) return false
  }
  return depth > 0
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function stringsOf(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []
}

function forEachString(value: unknown, fn: (s: string, index: number) => void): void {
  if (!Array.isArray(value)) return
  value.forEach((v: unknown, i) => {
    if (typeof v === 'string') fn(v, i)
  })
}

function available(kind: string, names: Set<string>): string {
  return names.size === 0 ? `this suite defines no ${kind}` : `this suite has: ${[...names].sort().join(', ')}`
}

function describe(value: unknown, json = false): string {
  if (json && value === null) return 'null'
  if (value === null || value === undefined) return 'an empty document'
  if (Array.isArray(value)) return json ? 'an array' : 'a list'
  return `a ${typeof value}`
}
