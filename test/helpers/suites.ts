/** Suites tests derive from the shipped ones. */
import { cpSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { packageRoot } from '../../stack/paths.js'

/**
 * A copy of smoke in a new temporary directory whose tasks have a 10-minute duration budget: an
 * attempt a test holds at a gate cannot time out and end the run on its own.
 */
export function patientSmoke(prefix = 'forge-patient-smoke-'): string {
  const suite = mkdtempSync(join(tmpdir(), prefix))
  cpSync(join(packageRoot(), 'suites', 'smoke'), suite, { recursive: true })
  for (const file of readdirSync(join(suite, 'tasks'))) {
    const task = join(suite, 'tasks', file)
    writeFileSync(task, readFileSync(task, 'utf8').replace(/max_duration_ms: \d+/, 'max_duration_ms: 600000'))
  }
  return suite
}
