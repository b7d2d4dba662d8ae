/**
 * bin/run.js, before oclif: Forge checks the Node.js version itself, as package.json's engines say,
 * and stops with a clear error on an older one; oclif's own check (a warning that loads semver on
 * every start, ~20 ms of a `forge run`, issue 15) is off.
 */
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { packageRoot } from '../../stack/paths.js'

const bin = join(packageRoot(), 'bin', 'run.js')

/** Runs bin/run.js with `args` in a node that reports `nodeVersion` (when given), and says whether semver was loaded. */
function start(args: string[], opts: { nodeVersion?: string; env?: NodeJS.ProcessEnv } = {}) {
  const script = [
    "import { createRequire } from 'node:module'",
    'const require = createRequire(import.meta.url)',
    "process.on('exit', () => process.stderr.write(`\\nsemver loaded: ${Object.keys(require.cache).some((k) => k.includes('/node_modules/semver/'))}\\n`))",
    opts.nodeVersion === undefined ? '' : `Object.defineProperty(process, 'versions', { value: { ...process.versions, node: ${JSON.stringify(opts.nodeVersion)} } })`,
    `process.argv = [process.argv[0], ${JSON.stringify(bin)}, ...${JSON.stringify(args)}]`,
    `await import(${JSON.stringify(bin)})`,
  ].join('\n')
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env: { ...process.env, ...opts.env }, cwd: packageRoot() })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, semver: /semver loaded: true/.test(r.stderr) }
}

describe('bin/run.js', () => {
  it("requires the Node.js major version package.json's engines name", () => {
    const pkg = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { engines: { node: string } }
    const min = /^>=(\d+)$/.exec(pkg.engines.node)?.[1]
    expect(min, `engines.node ${pkg.engines.node}`).toBeDefined()
    expect(readFileSync(bin, 'utf8')).toContain(`const MIN_NODE_MAJOR = ${min}\n`)
  })

  it('stops on an older Node.js with an error naming both versions, before oclif loads', () => {
    const r = start(['--version'], { nodeVersion: '18.19.0' })
    expect(r.status).toBe(1)
    expect(r.stderr).toContain('forge needs Node.js 20 or newer; this is Node.js 18.19.0')
    expect(r.stdout).toBe('')
  })

  it("starts without oclif's engine check (no semver), unless OCLIF_DISABLE_ENGINE_WARNING says otherwise", () => {
    const quick = start(['--version'])
    expect(quick.status).toBe(0)
    expect(quick.stdout).toMatch(/^forge-eval\/\d+\.\d+\.\d+ /)
    expect(quick.semver).toBe(false)
    // the user's own setting wins: oclif's check is back, and loads semver
    const checked = start(['--version'], { env: { OCLIF_DISABLE_ENGINE_WARNING: 'false' } })
    expect(checked.status).toBe(0)
    expect(checked.semver).toBe(true)
  })
})
