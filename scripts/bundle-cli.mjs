// Bundles the CLI's commands and hooks (dist/cli) with Forge's own modules, the pure-ESM packages
// they load on every start (zod, yaml, @nats-io) and oclif itself with every package it loads into
// dist/cli-bundle, which oclif loads (package.json) and bin/run.js starts oclif from (its `oclif`
// entry). A CLI start loaded ~500 modules, one file system round of resolving, reading and compiling
// each: ~0.26 s of `forge run`'s ~0.42 s before it planned anything; oclif's own ~170 files were ~25 ms
// more (issue 15). Shared modules go into shared chunks, so a module has one instance per process
// whichever command and hook load it — oclif's too. Packages with native parts, their own file loading
// or many optional parts (Temporal's SDK, chDB, ClickHouse's client, the model and agent SDKs) stay
// external and load from node_modules as before.
import { build } from 'rolldown'
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const dist = fileURLToPath(new URL('../dist/', import.meta.url))
const out = join(dist, 'cli-bundle')
const root = fileURLToPath(new URL('../', import.meta.url))

/** `name` and every package it depends on, as installed (nested copies included), by name. */
function dependencyTree(name) {
  const names = new Set()
  const visit = (pkg, from) => {
    // node's resolution: the nearest node_modules up from the package that depends on it
    for (let dir = from; ; dir = join(dir, '..')) {
      const manifest = join(dir, 'node_modules', pkg, 'package.json')
      if (existsSync(manifest)) {
        if (names.has(pkg)) return
        names.add(pkg)
        const deps = JSON.parse(readFileSync(manifest, 'utf8')).dependencies ?? {}
        for (const dep of Object.keys(deps)) visit(dep, join(dir, 'node_modules', pkg))
        return
      }
      if (dir === root || join(dir, '..') === dir) throw new Error(`bundle-cli: ${pkg} is not installed (a dependency of ${name})`)
    }
  }
  visit(name, root)
  return names
}

const OCLIF = dependencyTree('@oclif/core')
const BUNDLED_PACKAGES = [/^zod(\/|$)/, /^yaml(\/|$)/, /^@nats-io\//]
const bundled = (id) => BUNDLED_PACKAGES.some((p) => p.test(id)) || OCLIF.has(id.startsWith('@') ? id.split('/').slice(0, 2).join('/') : id.split('/')[0])

function entriesUnder(dir) {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.js'))
    .map((e) => join(e.parentPath ?? e.path, e.name))
}

const input = {}
for (const file of [...entriesUnder(join(dist, 'cli', 'commands')), join(dist, 'cli', 'hooks', 'init.js')]) {
  input[relative(join(dist, 'cli'), file).replace(/\.js$/, '')] = file
}
// bin/run.js loads oclif from here: the copy the commands extend
input['oclif'] = join(dist, 'cli', 'oclif.js')
// the warm CLI (stack/warm-cli.ts): the same modules, loaded ahead of the next forge run
input['warm-cli'] = join(dist, 'cli', 'warm-cli.js')
if (Object.keys(input).length < 3) throw new Error('bundle-cli: no commands under dist/cli/commands (run tsc first)')

rmSync(out, { recursive: true, force: true })
const started = Date.now()
await build({
  input,
  platform: 'node',
  logLevel: 'warn',
  // a bare specifier stays an import unless it is one of the bundled packages; relative ones are Forge's own
  external: (id) => !id.startsWith('.') && !id.startsWith('/') && !id.startsWith('\0') && !bundled(id),
  output: { dir: out, format: 'esm', entryFileNames: '[name].js', chunkFileNames: 'chunks/[name]-[hash].js' },
})
// what bin/run.js loads first for `forge run` (cli/warm-cli-client.ts): one file of its own, no chunk shared
await build({
  input: { 'warm-cli-client': join(dist, 'cli', 'warm-cli-client.js') },
  platform: 'node',
  logLevel: 'warn',
  external: (id) => id.startsWith('node:'),
  output: { dir: out, format: 'esm', entryFileNames: '[name].js' },
})
console.log(`cli bundle: ${out} (${Object.keys(input).length} entries and the warm CLI's client) in ${Date.now() - started} ms`)
