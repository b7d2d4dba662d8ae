/**
 * `forge generate keep-failing`: the generated tasks an agent failed in a run, kept as a growing
 * corpus suite. The corpus is itself a generated suite (base/, the generated modules,
 * adversarial.json with every task's provenance plus the run it was kept from). Kept tasks of a
 * different generation whose id is taken get the id's variant suffixed with a hash of their
 * provenance. The corpus is written to a staging copy, validated, then swapped in: never half-written.
 */
import { createHash, randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { cp, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { canonicalJson } from '../core/faults.js'
import { garbageInvariantName } from '../core/adversarial.js'
import type { LoadedSuite } from '../core/plugins.js'
import { SuiteLoadError } from '../engine/errors.js'
import { loadSuite } from '../engine/suite-loader.js'
import { ConfigError } from '../stack/errors.js'
import type { StoreReader } from '../store/clickhouse.js'
import { getRun } from '../store/repositories.js'
import { PROVENANCE_FILE, readProvenance, type ProvenanceEntry, type ProvenanceManifest } from './provenance.js'

export interface KeepFailingReport {
  run_id: string
  corpus: string
  /** tasks added to the corpus, with the id they have there */
  kept: { task_id: string; from: string; passed: number; attempts: number }[]
  /** failing tasks the corpus already held (same provenance) */
  already: string[]
  /** tasks in the corpus now */
  tasks: number
}

export async function keepFailing(reader: StoreReader, opts: { runId: string; into: string }): Promise<KeepFailingReport> {
  const run = await getRun(reader, opts.runId)
  if (run === undefined) throw new ConfigError(`no run "${opts.runId}" is stored (see forge runs list)`)
  const source = await readProvenance(run.suite_path)
  if (source === undefined) {
    throw new ConfigError(`run ${run.run_id} ran suite ${run.suite} (${run.suite_path}), which is not a generated adversarial suite (no ${PROVENANCE_FILE}): nothing to keep`)
  }
  const failing = await reader.query<{ task_id: string; n: string | number; k: string | number }>(
    `SELECT task_id, count() AS n, countIf(outcome = 'pass') AS k FROM attempts FINAL WHERE run_id = {run:String} GROUP BY task_id HAVING k < n ORDER BY task_id`,
    { run: run.run_id },
  )
  const corpus = path.resolve(opts.into)
  if (corpus === path.resolve(run.suite_path)) throw new ConfigError('--into is the generated suite itself: keep failing cases in another directory')
  const existing = existsSync(path.join(corpus, PROVENANCE_FILE)) ? await readProvenance(corpus) : undefined
  if (existing === undefined && existsSync(corpus) && (await readdir(corpus)).length > 0) {
    throw new ConfigError(`--into ${corpus} is neither empty nor a corpus of generated tasks (no ${PROVENANCE_FILE})`)
  }
  if (existing !== undefined && (existing.parent.name !== source.parent.name || existing.parent.content_hash !== source.parent.content_hash || existing.honeypot_tool !== source.honeypot_tool)) {
    throw new ConfigError(
      `--into ${corpus} keeps mutations of suite ${existing.parent.name} (content ${existing.parent.content_hash.slice(0, 12)}); run ${run.run_id} mutated ` +
        `${source.parent.name} (content ${source.parent.content_hash.slice(0, 12)}): start a new corpus for it`,
    )
  }

  const staging = `${corpus}.tmp-${randomBytes(4).toString('hex')}`
  try {
    if (existing !== undefined) await cp(corpus, staging, { recursive: true })
    else await scaffold(run.suite_path, staging, source)
    const manifest: ProvenanceManifest = existing ?? { ...source, tasks: {} }
    const kept: KeepFailingReport['kept'] = []
    const already: string[] = []
    for (const row of failing) {
      const entry = source.tasks[row.task_id]
      if (entry === undefined) continue
      const identity = canonicalJson({ parent: entry.parent, family: entry.family, params: entry.params, seed: entry.seed, variant: entry.variant })
      const same = Object.entries(manifest.tasks).find(([, e]) => canonicalJson({ parent: e.parent, family: e.family, params: e.params, seed: e.seed, variant: e.variant }) === identity)
      if (same !== undefined) {
        already.push(same[0])
        continue
      }
      const id = manifest.tasks[row.task_id] === undefined ? row.task_id : `${row.task_id}-${createHash('sha256').update(identity).digest('hex').slice(0, 8)}`
      const passed = Number(row.k)
      const attempts = Number(row.n)
      await copyTask(run.suite_path, staging, row.task_id, id)
      manifest.tasks[id] = { ...entry, kept_from: { run_id: run.run_id, passed, attempts } } satisfies ProvenanceEntry
      kept.push({ task_id: id, from: row.task_id, passed, attempts })
    }
    await writeFile(path.join(staging, PROVENANCE_FILE), `${JSON.stringify(manifest, null, 2)}\n`)
    if (Object.keys(manifest.tasks).length === 0) {
      throw new ConfigError(`run ${run.run_id} failed no generated task: nothing to keep, and an empty corpus is no suite`)
    }
    let suite: LoadedSuite
    try {
      suite = await loadSuite(staging)
    } catch (error) {
      if (error instanceof SuiteLoadError) throw new Error(`the corpus does not validate after keeping the failing tasks (a bug): ${error.message}`, { cause: error })
      throw error
    }
    // swap the validated staging copy in
    const old = `${corpus}.old-${randomBytes(4).toString('hex')}`
    if (existsSync(corpus)) await rename(corpus, old)
    await rename(staging, corpus)
    await rm(old, { recursive: true, force: true })
    return { run_id: run.run_id, corpus, kept, already, tasks: suite.tasks.length }
  } finally {
    await rm(staging, { recursive: true, force: true })
  }
}

/** A new, empty corpus from a generated suite: its base, modules and manifest (renamed), no tasks. */
async function scaffold(generated: string, dir: string, source: ProvenanceManifest): Promise<void> {
  await mkdir(path.join(dir, 'tasks'), { recursive: true })
  await mkdir(path.join(dir, 'goldens'), { recursive: true })
  await cp(path.join(generated, 'base'), path.join(dir, 'base'), { recursive: true })
  for (const file of ['tools.mjs', 'invariants.mjs']) await cp(path.join(generated, file), path.join(dir, file))
  const manifest = (await readFile(path.join(generated, 'suite.yaml'), 'utf8'))
    .replace(/^name: .*$/m, `name: ${source.parent.name}_adversarial_corpus`.slice(0, 206))
    .replace(/^description: [\s\S]*?(?=^\w)/m, `description: Generated adversarial tasks of suite ${source.parent.name} that an agent failed (forge generate keep-failing); provenance in ${PROVENANCE_FILE}.\n`)
  await writeFile(path.join(dir, 'suite.yaml'), manifest)
}

/** Copies a generated task (and its golden) under a new id, renaming what is keyed by the id. */
async function copyTask(from: string, to: string, oldId: string, newId: string): Promise<void> {
  const rewrite = (text: string): string =>
    oldId === newId ? text : text.split(garbageInvariantName(oldId)).join(garbageInvariantName(newId)).replace(new RegExp(`^(id|golden): ${escape(oldId)}$`, 'gm'), `$1: ${newId}`)
  const task = await readFile(path.join(from, 'tasks', `${oldId}.yaml`), 'utf8')
  await writeFile(path.join(to, 'tasks', `${newId}.yaml`), rewrite(task))
  const golden = path.join(from, 'goldens', `${oldId}.json`)
  if (existsSync(golden)) await cp(golden, path.join(to, 'goldens', `${newId}.json`))
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
