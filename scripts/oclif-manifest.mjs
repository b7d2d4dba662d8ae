// Writes oclif.manifest.json at build time (what `oclif manifest` does): with it, oclif lists the
// commands, their flags and help without importing every command module (forge --help 0.65 → 0.13 s),
// and `forge run`'s init hook runs before the run command's own imports (app/worker-prefork.ts).
import { Config } from '@oclif/core'
import { unlink, writeFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const out = fileURLToPath(new URL('../oclif.manifest.json', import.meta.url))
// a manifest of an earlier build would be read instead of the commands
await unlink(out).catch(() => undefined)
const config = await Config.load({ root })
const plugin = config.plugins.get(config.pjson.name)
if (plugin === undefined) throw new Error(`oclif-manifest: no plugin ${config.pjson.name} at ${root}`)
const { manifest } = plugin
const commands = Object.keys(manifest.commands ?? {})
if (commands.length === 0) throw new Error('oclif-manifest: no commands found under dist/cli/commands (build first)')
await writeFile(out, JSON.stringify(manifest))
console.log(`oclif manifest: ${out} (${commands.length} commands)`)
