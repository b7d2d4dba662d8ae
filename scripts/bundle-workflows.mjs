// Prebuilds the workflow bundle once at build time so workers start without webpack.
import { bundleWorkflowCode } from '@temporalio/worker'
import { writeFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'

const workflowsPath = fileURLToPath(new URL('../dist/workflows/index.js', import.meta.url))
const out = fileURLToPath(new URL('../dist/workflow-bundle.js', import.meta.url))
const { code } = await bundleWorkflowCode({ workflowsPath, logger: { info() {}, warn: console.warn, error: console.error, debug() {}, trace() {}, log() {} } })
await writeFile(out, code)
console.log(`workflow bundle: ${out} (${Math.round(code.length / 1024)} KiB)`)
