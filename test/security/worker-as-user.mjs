// A worker without root, for test/security/adversary.test.ts: run by a test as an unprivileged uid,
// it runs the adversarial agent's attempts through the built engine (dist/) in the sandbox such a
// worker makes (a user namespace, no cgroups), one at a time, and prints each result as a JSON line.
// argv: suite directory, adapter config (JSON), task ids.
import { pathToFileURL } from 'node:url'
import { join } from 'node:path'

const [suiteDir, configJson, ...taskIds] = process.argv.slice(2)
const dist = (file) => import(pathToFileURL(join(import.meta.dirname, '..', '..', 'dist', file)).href)
const { loadSuite } = await dist('engine/suite-loader.js')
const { runAttempt } = await dist('engine/attempt-runner.js')
const { subprocessAdapter } = await dist('engine/adapters/subprocess.js')

const suite = await loadSuite(suiteDir)
for (const id of taskIds) {
  const task = suite.tasks.find((t) => t.id === id)
  if (task === undefined) throw new Error(`no task ${id} in ${suiteDir}`)
  const { result, trace } = await runAttempt({ suite, task, adapter: subprocessAdapter, runId: 'security-user', configId: 'c0', attempt: 0, runSeed: 's', adapterConfig: JSON.parse(configJson), workerId: `w-uid-${process.getuid()}` })
  const sandbox = trace.spans.find((s) => s.name === 'sandbox')?.attributes ?? null
  process.stdout.write(`${JSON.stringify({ result, sandbox })}\n`)
}
