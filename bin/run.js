#!/usr/bin/env node
// Forge checks the Node.js version itself, as package.json's engines say (>=20), and stops with a
// clear error; oclif's own check only warns, and loads semver to do it on every start (~20 ms of a
// `forge run`'s start-up, issue 15), so it is turned off here (in the CLI bundle it could not find
// oclif's package.json anyway).
const MIN_NODE_MAJOR = 20
const major = Number(process.versions.node.split('.')[0])
if (!(major >= MIN_NODE_MAJOR)) {
  process.stderr.write(`forge needs Node.js ${MIN_NODE_MAJOR} or newer; this is Node.js ${process.versions.node} (${process.execPath})\n`)
  process.exit(1)
}
process.env.OCLIF_DISABLE_ENGINE_WARNING = '1'

// `forge run`: the warm CLI the run before left (stack/warm-cli.ts) runs it if there is one, with
// oclif and the run command loaded already; else, or for any other command, this process does
let exitCode
if (process.argv[2] === 'run') {
  const { runOnWarmCli } = await import('../dist/cli-bundle/warm-cli-client.js')
  exitCode = await runOnWarmCli(process.argv.slice(2))
}
if (exitCode !== undefined) process.exitCode = exitCode
else {
  const { execute } = await import('../dist/cli-bundle/oclif.js')
  await execute({ dir: import.meta.url })
}
