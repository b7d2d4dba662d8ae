/**
 * The CLI oclif loads is the bundle scripts/bundle-cli.mjs builds (dist/cli-bundle): every command
 * and the init hook come from it, a module the hook and a command share is one module there (the
 * hook's forked workers are the ones `forge run` finds), and no bundled code looks for the package's
 * files beside itself — in a chunk, "beside itself" is dist/cli-bundle/chunks.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { distEntry, packageRoot } from '../../stack/paths.js'

const bundle = distEntry('cli-bundle')
const files = readdirSync(bundle, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.js'))

/** The bundle's files an entry loads, directly or through others (static imports only). */
function staticImportsOf(entry: string): Set<string> {
  const seen = new Set<string>()
  const visit = (file: string): void => {
    for (const [, spec] of readFileSync(join(bundle, file), 'utf8').matchAll(/^import (?:.*? from )?"(\.[^"]+)";$/gm)) {
      const target = join(dirname(file), spec!)
      if (!seen.has(target)) {
        seen.add(target)
        visit(target)
      }
    }
  }
  visit(entry)
  return seen
}

describe('the CLI bundle', () => {
  it('is what oclif loads: every command of the manifest and the init hook', () => {
    const pkg = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { oclif: { commands: string; hooks: { init: string } } }
    expect(pkg.oclif.commands).toBe('./dist/cli-bundle/commands')
    expect(pkg.oclif.hooks.init).toBe('./dist/cli-bundle/hooks/init.js')
    const manifest = JSON.parse(readFileSync(join(packageRoot(), 'oclif.manifest.json'), 'utf8')) as { commands: Record<string, { relativePath: string[] }> }
    const ids = Object.keys(manifest.commands)
    expect(ids.length).toBeGreaterThan(40)
    for (const id of ids) {
      expect(manifest.commands[id]!.relativePath.slice(0, 3), id).toEqual(['dist', 'cli-bundle', 'commands'])
      const path = join('commands', ...id.split(':'))
      expect([`${path}.js`, join(path, 'index.js')].some((f) => files.includes(f)), id).toBe(true)
    }
    expect(files).toContain(join('hooks', 'init.js'))
  })

  it('holds oclif: bin/run.js starts the copy every command extends, and nothing loads it from node_modules', () => {
    expect(readFileSync(join(packageRoot(), 'bin', 'run.js'), 'utf8')).toContain("await import('../dist/cli-bundle/oclif.js')")
    expect(files).toContain('oclif.js')
    const external = files.filter((f) => /(from |import\(|require\()"@oclif\//.test(readFileSync(join(bundle, f), 'utf8')))
    expect(external).toEqual([])
    // oclif's Command, which every command extends, is defined once, in the chunk bin/run.js's entry loads
    const defining = files.filter((f) => /\bvar Command = class\b|\bclass Command\b/.test(readFileSync(join(bundle, f), 'utf8')))
    expect(defining).toHaveLength(1)
    expect(staticImportsOf('oclif.js')).toContain(defining[0])
    expect(staticImportsOf(join('commands', 'run.js'))).toContain(defining[0])
  })

  it("defines each of Forge's modules once: the hook and `forge run` share the prefork module", () => {
    const defining = files.filter((f) => /\bfunction preforkWorkers\b/.test(readFileSync(join(bundle, f), 'utf8')))
    expect(defining).toHaveLength(1)
    expect(defining[0]).toMatch(/^chunks\//)
    for (const entry of [join('hooks', 'init.js'), join('commands', 'run.js')]) expect(staticImportsOf(entry), entry).toContain(defining[0])
  })

  it('loads what `forge run` needs before its workflow starts, and the rest later: no YAML parser, JetStream client, statistics, audit trail, sweep or resume; its report nothing of the suite generator', () => {
    // each module is found by the source-path comment the bundler leaves at its start (relative to the
    // build: a node_modules reached through a symlink shows its own path before `node_modules/`)
    const holding = (source: string): string[] => {
      const comment = new RegExp(`^// (?:.*/)?${source.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`, 'm')
      return files.filter((f) => comment.test(readFileSync(join(bundle, f), 'utf8')))
    }
    const deferred = [
      'node_modules/yaml/dist/',
      'node_modules/@nats-io/jetstream/',
      'dist/engine/suite-loader.js',
      'dist/app/run-report.js',
      'dist/app/stats.js',
      'dist/app/audit.js',
      'dist/app/resume.js',
      'dist/app/fault-sweep.js',
      'dist/app/otlp.js',
      'dist/store/migrations.js',
    ]
    const eager = staticImportsOf(join('commands', 'run.js'))
    for (const source of deferred) {
      const chunks = holding(source)
      // in the bundle (a `forge run` on a cache miss, or after its workflow ended, loads it) …
      expect(chunks.length, source).toBeGreaterThan(0)
      // … and not among what the run command loads as it starts
      for (const chunk of chunks) expect(eager.has(chunk), `${source} (${chunk})`).toBe(false)
    }
    // the test can fail: what a run does need at once is among them
    const defining = (definition: string): string[] => files.filter((f) => readFileSync(join(bundle, f), 'utf8').includes(definition))
    for (const fn of ['async function planRun(', 'async function loadSuitePlan(', 'function loadPriceTable(', 'async function connectBus(']) expect(defining(fn).some((chunk) => eager.has(chunk)), fn).toBe(true)
    // the logger module is loaded (the adapters' registry holds the HTTP adapter, which makes one when it
    // first logs) but pino (~15 ms of a start) only once a logger is made: no eager chunk imports it
    expect(defining('function createLogger(').some((chunk) => eager.has(chunk)), 'createLogger').toBe(true)
    for (const chunk of eager) expect(/^import\b[^;]*\bfrom "pino";?$/m.test(readFileSync(join(bundle, chunk), 'utf8')), `${chunk} imports pino`).toBe(false)

    // the report (loaded while the workflow runs, on the cores the run's attempts use) holds what a run's
    // statistics and seal need and nothing of the suite generator: its YAML parser and suite loader were
    // ~270 KiB of every run's report, for one provenance file read as JSON
    const [report, ...others] = holding('dist/app/run-report.js')
    expect(others).toEqual([])
    const reportLoads = new Set([report!, ...staticImportsOf(report!)])
    for (const source of ['node_modules/yaml/dist/', 'dist/engine/suite-loader.js', 'dist/app/generate-adversarial.js']) {
      for (const chunk of holding(source)) expect(reportLoads.has(chunk), `${source} (${chunk})`).toBe(false)
    }
    for (const fn of ['async function getRunStats(', 'async function sealRun(', 'async function readProvenance(']) expect(defining(fn).some((chunk) => reportLoads.has(chunk)), fn).toBe(true)
  })

  it('finds files from the package root, never beside a chunk', () => {
    // each known use: a package-root walk, a require for chDB's CommonJS connection, the worker's
    // bundle-aware path, the ingester's main-module check, code generated for agents' modules, and
    // the suite-plan cache's stamp: when the module itself was built (its own file, found nowhere else)
    const allowed = [
      /let dir = dirname\(fileURLToPath\(import\.meta\.url\)\);/,
      /cannot find Forge's package root above \$\{fileURLToPath\(import\.meta\.url\)\}/,
      /function packageRoot\(from = path\.dirname\(fileURLToPath\(import\.meta\.url\)\)\)/,
      /const here = path\.dirname\(fileURLToPath\(import\.meta\.url\)\);/,
      /createRequire\(import\.meta\.url\)/,
      /import\.meta\.url\.includes\("\/dist\/cli-bundle\/"\) \? distEntry\(relative\)/,
      /if \(import\.meta\.url === `file:\/\/\$\{process\.argv\[1\]\}`\)/,
      /readFileSync\(new URL\('\.\/adversarial\.json', import\.meta\.url\), 'utf8'\)/,
      /statSync\(fileURLToPath\(import\.meta\.url\)\)\.mtimeMs/,
    ]
    const unknown: string[] = []
    for (const f of files) {
      readFileSync(join(bundle, f), 'utf8').split('\n').forEach((line, i) => {
        // a comment's example (oclif's docs of `execute`) runs nothing
        if (/^\s*(\*|\/\/)/.test(line)) return
        if (line.includes('import.meta') && !allowed.some((a) => a.test(line))) unknown.push(`${f}:${i + 1}: ${line.trim()}`)
      })
    }
    expect(unknown).toEqual([])
  })
})
