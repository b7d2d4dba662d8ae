/**
 * A suite's files without their contents' meaning: where a suite reference resolves to, the package's
 * own root, which files a suite holds and their content hash, and the suites this process has loaded.
 * Split from suite-loader.ts (which parses YAML and validates) so that what needs only these — planning
 * a suite it finds in its cache, the sandbox, the adapters — does not load the YAML parser and the
 * suite validation (issue 15: ~20 ms of every `forge run`'s start-up).
 */
import { createHash } from 'node:crypto'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { readFile, readdir, readlink, realpath, stat } from 'node:fs/promises'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { SuiteProblem } from '../core/suite-validation.js'
import { SuiteLoadError } from './errors.js'

/** the file that makes a directory a suite */
export const MANIFEST_FILE = 'suite.yaml'

/**
 * The root of the forge package: the nearest ancestor of this file holding package.json (and a
 * `suites/` directory). Works from the TS sources (engine/) and from the build (dist/engine/).
 */
export function packageRoot(from: string = path.dirname(fileURLToPath(import.meta.url))): string {
  let firstWithPackageJson: string | undefined
  for (let dir = path.resolve(from); ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) {
      firstWithPackageJson ??= dir
      if (isDirectory(path.join(dir, 'suites'))) return dir
    }
    if (path.dirname(dir) === dir) break
  }
  if (firstWithPackageJson === undefined) throw new Error(`no package.json above ${from}`)
  return firstWithPackageJson
}

/** The directory of the suites that ship with forge. */
export function builtinSuitesDir(): string {
  return path.join(packageRoot(), 'suites')
}

const PACKAGE_NAME = /^(?:@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*$/i

/**
 * Resolves a suite reference to an absolute directory: a bare name of a built-in suite (`smoke`),
 * a relative or absolute path, or an npm package resolvable from `cwd` whose package.json has
 * `"forge": { "suite": "<dir>" }`. Throws SuiteLoadError when a name resolves nowhere.
 */
export function resolveSuitePath(ref: string, cwd: string = process.cwd()): string {
  if (ref.trim() === '') {
    throw new SuiteLoadError(ref, [{ file: '(suite reference)', path: '', message: 'the suite reference is empty' }])
  }
  const looksLikePath = path.isAbsolute(ref) || ref.startsWith('.') || ref.includes('\\') || !PACKAGE_NAME.test(ref)
  const asPath = path.resolve(cwd, ref)
  if (looksLikePath) return asPath

  const tried: string[] = []
  if (!ref.includes('/')) {
    const builtin = path.join(builtinSuitesDir(), ref)
    if (existsSync(path.join(builtin, MANIFEST_FILE))) return builtin
    tried.push(`built-in suite ${builtin}`)
  }
  if (existsSync(path.join(asPath, MANIFEST_FILE))) return asPath
  tried.push(`directory ${asPath}`)

  const packageDir = findPackageDir(ref, cwd)
  if (packageDir !== undefined) {
    const manifestPath = path.join(packageDir, 'package.json')
    let suiteDir: unknown
    try {
      const pkg: unknown = JSON.parse(readFileSync(manifestPath, 'utf8'))
      suiteDir = isRecord(pkg) && isRecord(pkg['forge']) ? pkg['forge']['suite'] : undefined
    } catch (error) {
      throw new SuiteLoadError(packageDir, [{ file: 'package.json', path: '', message: `cannot read: ${errorMessage(error)}` }], { cause: error })
    }
    if (typeof suiteDir !== 'string' || suiteDir === '') {
      throw new SuiteLoadError(packageDir, [
        { file: 'package.json', path: 'forge.suite', message: `package "${ref}" does not declare a suite directory ("forge": { "suite": "<dir>" })` },
      ])
    }
    return path.resolve(packageDir, suiteDir)
  }
  tried.push(`npm package "${ref}" from ${cwd}`)
  throw new SuiteLoadError(ref, [{ file: '(suite reference)', path: '', message: `no suite "${ref}": tried ${tried.join('; ')}` }])
}

function findPackageDir(name: string, cwd: string): string | undefined {
  try {
    const require = createRequire(path.join(cwd, 'noop.js'))
    return path.dirname(require.resolve(`${name}/package.json`))
  } catch {
    // packages with an `exports` map may hide package.json: look in node_modules ourselves
  }
  for (let dir = path.resolve(cwd); ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', name)
    if (existsSync(path.join(candidate, 'package.json'))) return candidate
    if (path.dirname(dir) === dir) return undefined
  }
}

const loadedSuites = new Set<string>()

/** Notes a suite directory (its real path) as loaded by this process. */
export function noteLoadedSuite(realPath: string): void {
  loadedSuites.add(realPath)
}

/** Every suite directory this process has loaded (real paths): agent sandboxes hide them all. */
export function loadedSuitePaths(): string[] {
  return [...loadedSuites]
}

/** Names never part of a suite's content: VCS metadata and installed packages (workspace copies skip them too). */
const NOT_SUITE_CONTENT = new Set(['.git', '.hg', '.svn', '.DS_Store', 'node_modules'])

/**
 * Every file of the suite, relative with `/`, sorted — symlinks followed when they stay inside the
 * suite, each one that leads outside it a problem naming the link and its target.
 */
export async function suiteFiles(root: string): Promise<{ files: string[]; problems: SuiteProblem[] }> {
  const realRoot = await realpath(root)
  const files: string[] = []
  const problems: SuiteProblem[] = []
  const visited = new Set<string>([realRoot])
  const walk = async (dir: string, prefix: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true })
    for (const entry of entries) {
      if (NOT_SUITE_CONTENT.has(entry.name)) continue
      const relative = prefix === '' ? entry.name : `${prefix}/${entry.name}`
      const absolute = path.join(dir, entry.name)
      if (entry.isSymbolicLink()) {
        const target = await realpath(absolute).catch(() => undefined)
        if (target === undefined) {
          problems.push({ file: relative, path: '', message: `a symlink to ${await readlink(absolute)}, which does not exist` })
          continue
        }
        if (target !== realRoot && !target.startsWith(`${realRoot}${path.sep}`)) {
          problems.push({ file: relative, path: '', message: `a symlink to ${target}, outside the suite directory ${realRoot}: every file a suite uses must lie inside it` })
          continue
        }
        const info = await stat(target)
        if (info.isFile()) files.push(relative)
        else if (info.isDirectory() && !visited.has(target)) {
          visited.add(target)
          await walk(absolute, relative)
        }
      } else if (entry.isDirectory()) await walk(absolute, relative)
      else if (entry.isFile()) files.push(relative)
    }
  }
  await walk(root, '')
  return { files: files.sort(), problems }
}

/**
 * The content hash `loadSuite` gives the suite at `suitePath` (LoadedSuite.contentHash), without
 * parsing or validating it; undefined when a file of it lies outside it (loadSuite refuses those).
 */
export async function suiteContentHash(suitePath: string): Promise<string | undefined> {
  const contained = await suiteFiles(suitePath)
  return contained.problems.length > 0 ? undefined : hashFiles(suitePath, contained.files)
}

export async function hashFiles(root: string, files: readonly string[]): Promise<string> {
  const hash = createHash('sha256')
  for (const file of files) {
    hash.update(file).update('\0').update(await readFile(path.join(root, file))).update('\0')
  }
  return hash.digest('hex')
}

export function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory()
  } catch {
    return false
  }
}

/** A JSON object (not an array or null); the suite loader checks documents with it too. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
