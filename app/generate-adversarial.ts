/**
 * `forge generate adversarial`: writes a new, valid suite of seeded mutations of a suite's tasks
 * (core/adversarial.ts). The parent suite is copied under `base/` (tools, invariants, fixtures),
 * wrapped by generated `tools.mjs` / `invariants.mjs` that read `adversarial.json` (provenance and
 * per-task data). Nothing is half-written: the suite is built in a temporary directory, loaded and
 * validated, every task's golden replayed by the oracle (a task it cannot pass is dropped and
 * reported), and only then moved to `--out`.
 */
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { cp, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import YAML from 'yaml'
import {
  FAMILY_LABELS,
  generateAdversarial,
  GENERATOR_VERSION,
  MUTATION_FAMILIES,
  type GeneratedTask,
  type MutationFamily,
  type ParentTask,
  type Provenance,
  type Skipped,
} from '../core/adversarial.js'
import type { LoadedSuite } from '../core/plugins.js'
import { normalizeRelative } from '../core/suite-validation.js'
import { SuiteLoadError } from '../engine/errors.js'
import type { OracleTaskCheck } from '../engine/oracle-check.js'
import { loadSuite } from '../engine/suite-loader.js'
import { ConfigError } from '../stack/errors.js'
import { invariantsModuleSource, toolsModuleSource } from './adversarial-modules.js'
import { PROVENANCE_FILE, type ProvenanceEntry, type ProvenanceManifest } from './provenance.js'

export interface GenerateAdversarialOptions {
  suite: string
  out: string
  seed?: string
  /** mutation families (default: all five) */
  mutations?: string[]
  /** variants per task and family (default 1) */
  perTask?: number
  /** replace a non-empty `out` */
  force?: boolean
  /** replay every golden with the oracle and drop tasks it cannot pass (default true) */
  oracle?: boolean
}

export interface GenerateAdversarialReport {
  suite: string
  out: string
  parent: { name: string; path: string; content_hash: string }
  seed: string
  tasks: number
  by_family: Record<string, number>
  skipped: Skipped[]
  /** tasks whose golden the oracle could not pass: left out of the suite */
  dropped: { task_id: string; problems: string[] }[]
  oracle: { checked: number; passed: number } | null
}

/** Parses `--mutations` names; an unknown one is a ConfigError naming it and the known families. */
export function parseFamilies(names: readonly string[] | undefined): MutationFamily[] {
  if (names === undefined || names.length === 0) return [...MUTATION_FAMILIES]
  const unknown = names.filter((name) => !(MUTATION_FAMILIES as readonly string[]).includes(name))
  if (unknown.length > 0) throw new ConfigError(`--mutations: unknown mutation famil${unknown.length === 1 ? 'y' : 'ies'} ${unknown.map((n) => `"${n}"`).join(', ')} (known: ${MUTATION_FAMILIES.join(', ')})`)
  return [...new Set(names)] as MutationFamily[]
}

export async function generateAdversarialSuite(opts: GenerateAdversarialOptions): Promise<GenerateAdversarialReport> {
  const families = parseFamilies(opts.mutations)
  const perTask = opts.perTask ?? 1
  if (!Number.isInteger(perTask) || perTask < 1 || perTask > 20) throw new ConfigError(`--per-task must be a whole number from 1 to 20, got ${perTask}`)
  const seed = opts.seed ?? '0'
  const out = path.resolve(opts.out)
  await checkOut(out, opts.force === true)

  const parent = await loadSuite(opts.suite)
  if (path.resolve(parent.path) === out || out.startsWith(`${path.resolve(parent.path)}${path.sep}`)) {
    throw new ConfigError(`--out ${out} is inside the suite it mutates (${parent.path}): choose a directory outside it`)
  }
  const parents = await parentTasks(parent)
  const honeypotTool = honeypotName(parent)
  const generated = generateAdversarial(parents, { seed, families, perTask, honeypotTool })
  if (generated.tasks.length === 0) {
    throw new ConfigError(
      `no task of suite ${parent.name} can be mutated with ${families.join(', ')}: ${generated.skipped.map((s) => `${s.parent}/${s.family}: ${s.reason}`).join('; ')}`,
    )
  }
  const manifest: ProvenanceManifest = {
    generator: 'forge generate adversarial',
    generator_version: GENERATOR_VERSION,
    parent: { name: parent.name, path: parent.path, content_hash: parent.contentHash },
    seed,
    families,
    per_task: perTask,
    honeypot_tool: honeypotTool,
    tasks: Object.fromEntries(generated.tasks.map((t) => [t.id, entryOf(t)])),
  }

  const staging = `${out}.tmp-${randomBytes(4).toString('hex')}`
  try {
    await writeSuite(staging, parent, manifest, generated.tasks)
    let suite = await loadGenerated(staging)
    let dropped: { task_id: string; problems: string[] }[] = []
    let oracle: GenerateAdversarialReport['oracle'] = null
    if (opts.oracle !== false) {
      // the oracle runs attempts: the attempt runner loads only here, not with every command that reads provenance (stats, forge run)
      const { checkSuiteWithOracle } = await import('../engine/oracle-check.js')
      const check = await checkSuiteWithOracle(suite)
      dropped = check.tasks.filter((t) => !t.passed).map((t: OracleTaskCheck) => ({ task_id: t.task_id, problems: t.problems }))
      oracle = { checked: check.tasks.length, passed: check.passed }
      if (dropped.length === generated.tasks.length) {
        throw new ConfigError(`the oracle could not pass any generated task: ${dropped.slice(0, 3).map((d) => `${d.task_id}: ${d.problems.join('; ')}`).join(' | ')}`)
      }
      if (dropped.length > 0) {
        const keep = generated.tasks.filter((t) => !dropped.some((d) => d.task_id === t.id))
        for (const d of dropped) delete manifest.tasks[d.task_id]
        await rm(staging, { recursive: true, force: true })
        await writeSuite(staging, parent, manifest, keep)
        suite = await loadGenerated(staging)
      }
    }
    await rm(out, { recursive: true, force: true })
    await rename(staging, out)
    const byFamily: Record<string, number> = {}
    for (const id of Object.keys(manifest.tasks)) {
      const family = manifest.tasks[id]!.family
      byFamily[family] = (byFamily[family] ?? 0) + 1
    }
    return {
      suite: suite.name,
      out,
      parent: manifest.parent,
      seed,
      tasks: Object.keys(manifest.tasks).length,
      by_family: byFamily,
      skipped: generated.skipped,
      dropped,
      oracle,
    }
  } finally {
    await rm(staging, { recursive: true, force: true })
  }
}

function entryOf(task: GeneratedTask): ProvenanceEntry {
  return {
    ...task.provenance,
    ...(task.injection !== undefined ? { injection: task.injection } : {}),
    ...(task.garbage !== undefined ? { garbage: task.garbage } : {}),
  }
}

async function checkOut(out: string, force: boolean): Promise<void> {
  if (!existsSync(out)) return
  const entries = await readdir(out).catch(() => {
    throw new ConfigError(`--out ${out} exists and is not a directory`)
  })
  if (entries.length > 0 && !force) throw new ConfigError(`--out ${out} is not empty: choose a new directory or pass --force to replace it`)
}

/** The parent's task files as written (alias and all), with each task's parsed form and golden. */
async function parentTasks(parent: LoadedSuite): Promise<ParentTask[]> {
  const dir = path.join(parent.path, normalizeRelative(parent.manifest.tasks))
  const docs = new Map<string, Record<string, unknown>>()
  for (const file of await listTaskFiles(dir)) {
    const text = await readFile(file, 'utf8')
    // the loader already validated every file: JSON task files parse as JSON, the rest as YAML
    const data: unknown = file.toLowerCase().endsWith('.json') ? JSON.parse(text.replace(/^\uFEFF/, '')) : YAML.parse(text)
    if (typeof data === 'object' && data !== null && !Array.isArray(data) && typeof (data as Record<string, unknown>)['id'] === 'string') {
      docs.set((data as Record<string, string>)['id']!, data as Record<string, unknown>)
    }
  }
  return parent.tasks.flatMap((task) => {
    const doc = docs.get(task.id)
    if (doc === undefined) return []
    const golden = parent.goldens.get(task.id)
    return [{ doc, task, ...(golden !== undefined ? { golden } : {}) }]
  })
}

async function listTaskFiles(dir: string): Promise<string[]> {
  const out: string[] = []
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) out.push(...(await listTaskFiles(full)))
    else if (/\.(ya?ml|json)$/i.test(entry.name)) out.push(full)
  }
  return out.sort()
}

function honeypotName(parent: LoadedSuite): string {
  for (let i = 0; ; i += 1) {
    const name = i === 0 ? 'notify_admin' : `notify_admin_${i + 1}`
    if (!parent.tools.has(name)) return name
  }
}

/** Writes the generated suite into `dir`: base/ (the parent minus its manifest and tasks), modules, provenance, tasks, goldens. */
async function writeSuite(dir: string, parent: LoadedSuite, manifest: ProvenanceManifest, tasks: readonly GeneratedTask[]): Promise<void> {
  await mkdir(path.join(dir, 'tasks'), { recursive: true })
  await mkdir(path.join(dir, 'goldens'), { recursive: true })
  const skip = new Set(['suite.yaml', normalizeRelative(parent.manifest.tasks)])
  await cp(parent.path, path.join(dir, 'base'), {
    recursive: true,
    filter: (source) => {
      const relative = path.relative(parent.path, source).split(path.sep).join('/')
      if (relative === '') return true
      const first = relative.split('/')[0] ?? ''
      return !skip.has(relative) && !first.startsWith('.') && first !== 'node_modules'
    },
  })
  const manifestYaml = {
    name: `${parent.name}_adversarial`.slice(0, 200),
    description: `Adversarial mutations (${manifest.families.join(', ')}) of suite ${parent.name}, seed ${manifest.seed}; provenance in ${PROVENANCE_FILE}.`,
    version: GENERATOR_VERSION,
    tasks: 'tasks',
    tools: 'tools.mjs',
    invariants: 'invariants.mjs',
    goldens: 'goldens',
    fixtures: `base/${normalizeRelative(parent.manifest.fixtures)}`,
  }
  await writeFile(path.join(dir, 'suite.yaml'), YAML.stringify(manifestYaml))
  await writeFile(path.join(dir, PROVENANCE_FILE), `${JSON.stringify(manifest, null, 2)}\n`)
  await writeFile(path.join(dir, 'tools.mjs'), toolsModuleSource(parent.manifest.tools === undefined ? undefined : normalizeRelative(parent.manifest.tools)))
  await writeFile(path.join(dir, 'invariants.mjs'), invariantsModuleSource(parent.manifest.invariants === undefined ? undefined : normalizeRelative(parent.manifest.invariants)))
  for (const task of tasks) {
    const p = task.provenance
    const header = [
      `# generated by forge generate adversarial v${p.generator_version}: ${FAMILY_LABELS[p.family]}`,
      `# parent ${p.parent}, family ${p.family}, variant ${p.variant}, seed ${JSON.stringify(p.seed)}`,
      `# params ${JSON.stringify(p.params)}`,
    ].join('\n')
    await writeFile(path.join(dir, 'tasks', `${task.id}.yaml`), `${header}\n${YAML.stringify(task.doc)}`)
    if (task.golden !== undefined) await writeFile(path.join(dir, 'goldens', `${task.id}.json`), `${JSON.stringify(task.golden, null, 2)}\n`)
  }
}

async function loadGenerated(dir: string): Promise<LoadedSuite> {
  try {
    return await loadSuite(dir)
  } catch (error) {
    // the generator wrote a suite its own loader rejects: a bug, said as plainly as possible
    if (error instanceof SuiteLoadError) throw new Error(`the generated suite does not validate (a generator bug): ${error.message}`, { cause: error })
    throw error
  }
}
