/**
 * bin/run.js, before oclif: Forge checks the Node.js version itself, as package.json's engines say,
 * and stops with a clear error on an older one; oclif's own check (a warning that loads semver on
 * every start, ~20 ms of a `forge run`, issue 15) is off, and oclif comes from the CLI bundle.
 */
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { packageRoot } from '../../stack/paths.js'

const bin = join(packageRoot(), 'bin', 'run.js')

/** Runs bin/run.js with `args` in a node that reports `nodeVersion` (when given), and lists what it loaded from node_modules. */
function start(args: string[], opts: { nodeVersion?: string } = {}) {
  const script = [
    "import { createRequire } from 'node:module'",
    'const require = createRequire(import.meta.url)',
    "process.on('exit', () => process.stderr.write(`\\nloaded: ${JSON.stringify(Object.keys(require.cache).filter((k) => k.includes('/node_modules/')))}\\n`))",
    opts.nodeVersion === undefined ? '' : `Object.defineProperty(process, 'versions', { value: { ...process.versions, node: ${JSON.stringify(opts.nodeVersion)} } })`,
    `process.argv = [process.argv[0], ${JSON.stringify(bin)}, ...${JSON.stringify(args)}]`,
    `await import(${JSON.stringify(bin)})`,
  ].join('\n')
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', cwd: packageRoot() })
  const loaded = JSON.parse(/\nloaded: (.*)\n/.exec(r.stderr)?.[1] ?? 'null') as string[] | null
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, loaded }
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

  it("starts oclif from the CLI bundle, without oclif's engine check, loading nothing of oclif's from node_modules", () => {
    const r = start(['--version'])
    expect(r.status).toBe(0)
    expect(r.stdout).toMatch(/^forge-eval\/\d+\.\d+\.\d+ /)
    expect(r.loaded).not.toBeNull()
    expect(r.loaded!.filter((file) => /\/node_modules\/(@oclif|semver|debug|ejs|ansis)\//.test(file))).toEqual([])
    // a command's help, rendered by the bundled oclif
    const help = start(['run', '--help'])
    expect(help.status).toBe(0)
    expect(help.stdout).toContain('USAGE\n  $ forge run')
    expect(help.loaded!.filter((file) => file.includes('/node_modules/@oclif/'))).toEqual([])
  })
})
