/**
 * A suite as planning a run needs it (app/plan-run.ts): its name, path, manifest, validated tasks,
 * content hash and its tools' specs — none of its modules' code. Loading a suite whole (loadSuite:
 * YAML parsed, every document validated, the tools and invariants modules imported) took ~40 ms of
 * each `forge run` in a fresh process for the 5 small tasks of `smoke` (issue 15). So planning loads
 * a content once and keeps what it needs under FORGE_HOME/cache/suites, keyed by the suite's path, its
 * content hash (every file of it: loadSuite's own) and this build of Forge; a later run of the same
 * content hashes the files and reads that. Another content, or another build, loads the suite whole
 * again, with every check and error loadSuite gives. The workers load the suite themselves
 * (engine/suite-loader.ts loadSuiteCached): what an attempt runs never comes from this cache.
 */
import { join } from 'node:path'
import type { SuiteManifest, Task, ToolSpec } from '../core/contracts/index.js'
import type { LoadedSuite } from '../core/plugins.js'
import { cacheFilePath, readCacheFile, writeCacheFile } from './plan-cache.js'
import { resolveSuitePath, suiteContentHash } from './suite-files.js'

export interface SuitePlan {
  name: string
  /** absolute path of the suite directory */
  path: string
  manifest: SuiteManifest
  tasks: Task[]
  /** the specs of the suite's tools (what an agent is shown), by name */
  tools: Map<string, ToolSpec>
  contentHash: string
}

/** Where planning keeps the suites it loaded, under a FORGE_HOME. */
export function suitePlanCacheDir(home: string): string {
  return join(home, 'cache', 'suites')
}

/** suites kept at most; the least recently written go first */
export const MAX_CACHED_SUITES = 64

/** the layout of a cache file: another one is not read */
const FORMAT = 1

/**
 * The suite at `ref` as planning needs it. With `cacheDir`, one of the same path, content and build
 * loaded before is read from there, and one loaded now is kept there unless `readOnly` (best effort:
 * a cache it cannot read or write costs the next run its load, never this one its plan).
 */
export async function loadSuitePlan(ref: string, opts: { cacheDir?: string; readOnly?: boolean; cwd?: string } = {}): Promise<SuitePlan> {
  const cwd = opts.cwd ?? process.cwd()
  const suitePath = resolveSuitePath(ref, cwd)
  const file = opts.cacheDir === undefined ? undefined : await cacheFileOf(opts.cacheDir, suitePath)
  if (file !== undefined) {
    const cached = readCached(file.path, suitePath, file.contentHash)
    if (cached !== undefined) return cached
  }
  // the loader (the YAML parser, the suite validation) is loaded only when the cache cannot answer
  const { loadSuite } = await import('./suite-loader.js')
  const plan = planOf(await loadSuite(suitePath, cwd))
  // kept under the hash of what was loaded: the files may have changed since they were hashed above
  if (opts.cacheDir !== undefined && opts.readOnly !== true) writeCached(opts.cacheDir, await cacheFileOf(opts.cacheDir, suitePath, plan.contentHash), plan)
  return plan
}

/** What planning keeps of a loaded suite. */
export function planOf(suite: LoadedSuite): SuitePlan {
  const tools = new Map<string, ToolSpec>()
  for (const [name, tool] of suite.tools) tools.set(name, { name: tool.name, description: tool.description, input_schema: tool.input_schema })
  return { name: suite.name, path: suite.path, manifest: suite.manifest, tasks: suite.tasks, tools, contentHash: suite.contentHash }
}

/** The cache file of the suite at `suitePath` as its files are now (or as `contentHash` says); undefined when they cannot be hashed. */
async function cacheFileOf(cacheDir: string, suitePath: string, contentHash?: string): Promise<{ path: string; contentHash: string } | undefined> {
  const hash = contentHash ?? (await suiteContentHash(suitePath).catch(() => undefined))
  if (hash === undefined) return undefined
  return { path: cacheFilePath(cacheDir, [FORMAT, suitePath, hash]), contentHash: hash }
}

interface CacheFile {
  format: number
  suite: Omit<SuitePlan, 'tools'> & { tools: ToolSpec[] }
}

function readCached(file: string, suitePath: string, contentHash: string): SuitePlan | undefined {
  const parsed = readCacheFile(file) as Partial<CacheFile> | null | undefined
  const suite = parsed?.suite
  // a file of another layout, or not written by this module whole: loaded again
  if (parsed?.format !== FORMAT || suite?.path !== suitePath || suite.contentHash !== contentHash || !Array.isArray(suite.tasks) || !Array.isArray(suite.tools) || typeof suite.name !== 'string') return undefined
  return { name: suite.name, path: suite.path, manifest: suite.manifest, tasks: suite.tasks, tools: new Map(suite.tools.map((t) => [t.name, t])), contentHash: suite.contentHash }
}

function writeCached(cacheDir: string, file: { path: string } | undefined, plan: SuitePlan): void {
  if (file === undefined) return
  const body: CacheFile = { format: FORMAT, suite: { ...plan, tools: [...plan.tools.values()] } }
  writeCacheFile(cacheDir, file.path, body, MAX_CACHED_SUITES)
}
