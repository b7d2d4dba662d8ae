// Bundles the CLI's commands and hooks (dist/cli) with Forge's own modules and the pure-ESM packages
// they load on every start (zod, yaml, @nats-io) into dist/cli-bundle, which oclif loads (package.json).
// A CLI start loaded ~500 modules, one file system round of resolving, reading and compiling each:
// ~0.26 s of `forge run`'s ~0.42 s before it planned anything (issue 15). Shared modules go into shared
// chunks, so a module has one instance per process whichever command and hook load it. Packages
// with native parts, their own file loading or many optional parts (Temporal's SDK, chDB, ClickHouse's
// client, oclif itself, the model and agent SDKs) stay external and load from node_modules as before.
import { build } from 'rolldown'
import { readdirSync, rmSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const dist = fileURLToPath(new URL('../dist/', import.meta.url))
const out = join(dist, 'cli-bundle')
const BUNDLED_PACKAGES = [/^zod(\/|$)/, /^yaml(\/|$)/, /^@nats-io\//]

function entriesUnder(dir) {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.js'))
    .map((e) => join(e.parentPath ?? e.path, e.name))
}

const input = {}
for (const file of [...entriesUnder(join(dist, 'cli', 'commands')), join(dist, 'cli', 'hooks', 'init.js')]) {
  input[relative(join(dist, 'cli'), file).replace(/\.js$/, '')] = file
}
if (Object.keys(input).length < 2) throw new Error('bundle-cli: no commands under dist/cli/commands (run tsc first)')

rmSync(out, { recursive: true, force: true })
const started = Date.now()
await build({
  input,
  platform: 'node',
  logLevel: 'warn',
  // a bare specifier stays an import unless it is one of the bundled packages; relative ones are Forge's own
  external: (id) => !id.startsWith('.') && !id.startsWith('/') && !id.startsWith('\0') && !BUNDLED_PACKAGES.some((p) => p.test(id)),
  output: { dir: out, format: 'esm', entryFileNames: '[name].js', chunkFileNames: 'chunks/[name]-[hash].js' },
})
console.log(`cli bundle: ${out} (${Object.keys(input).length} entries) in ${Date.now() - started} ms`)
