/** What `forge run` and `forge runs resume` print: progress lines, the run's statistics, and how it ended. */
import { runOutcomeError, type RunEvent, type RunReport } from '../app/run.js'
import { printRunStats } from './stats-view.js'

/** What finishRunCommand needs of a command. */
export interface RunCommandOutput {
  json: boolean
  log(line: string): void
  warn(message: string): unknown
  logJson(json: unknown): void
  logToStderr(message: string): void
  exit(code: number): never
}

/**
 * Prints the report (unless --json) and ends the command: an incomplete run exits 1 and a degraded one
 * 7, after its statistics, with the reason on stderr; a whole run returns its report (printed by --json).
 */
export function finishRunCommand(out: RunCommandOutput, report: RunReport): RunReport {
  if (!out.json) printRunReport(out, report)
  const outcome = runOutcomeError(report)
  if (outcome !== undefined) {
    out.logToStderr(`Error: ${outcome.message}`)
    // --json: stdout stays the one report document (oclif prints what the command returns), the code is set
    // for when the process ends; an exit here would make oclif print a second, error document and exit 1
    if (out.json) process.exitCode = outcome.exitCode
    else out.exit(outcome.exitCode)
  }
  return report
}

export function printRunReport(command: { log(line: string): void; warn(message: string): unknown }, report: RunReport): void {
  command.log('')
  printRunStats((line) => command.log(line), report)
  command.log(`\n${report.expected_attempts} attempts in ${(report.wall_ms / 1000).toFixed(1)}s (${report.attempts_per_second.toFixed(1)} attempts/s), seed ${report.seed}`)
  if (report.judged !== undefined) command.log(`judge: ${report.judged} attempt(s) judged on the judge queue (tier 2, judge metrics); forge review list shows what needs a person`)
  if ((report.judge_not_executed ?? 0) > 0) command.warn(`${report.judge_not_executed} judge activities could not run after every retry; those attempts keep tier 2 pending (flagged for review)`)
  if (report.not_executed > 0) command.warn(`${report.not_executed} attempts could not be executed after every retry (infrastructure errors); see .forge/logs/`)
  if (report.attempts < report.expected_attempts - report.not_executed) {
    command.warn(`ClickHouse holds ${report.attempts} of ${report.expected_attempts - report.not_executed} published attempts so far; the ingester may be behind`)
  }
  // a run that did not turn isolation off, some of whose attempts ran with it weakened anyway
  const degraded = report.validity['degraded'] ?? 0
  if (degraded > 0 && report.isolation !== 'unsandboxed' && report.isolation !== 'in-process') {
    command.warn(
      `${degraded} of ${report.attempts} attempts are degraded: their isolation was weakened (an http agent whose reset failed, or a worker process that unsandboxed agent code had run in); forge trace --run-id ${report.run_id} --task <task> --attempt <n> shows why (an error of kind isolation)`,
    )
  }
  if (report.run?.redacted === false) command.warn('not redacted (--no-redact): secrets and PII are stored as the agents produced them')
  command.log(`audit head ${report.audit.head}${report.audit.signature !== '' ? ' (signed with FORGE_AUDIT_KEY)' : ''}: forge audit verify --run-id ${report.run_id} checks it`)
}

/** One line of progress. */
export function describeRunEvent(event: RunEvent): string {
  switch (event.kind) {
    case 'stack':
      return `  ${event.message}`
    case 'workers':
      return `  ${event.pids.length} worker process(es) ready`
    case 'started':
      return `run ${event.run_id}: ${event.tasks} tasks × ${event.attempts} attempts = ${event.total} on ${event.workers === 0 ? "the fleet's workers" : `${event.workers} worker(s)`}, seed ${event.seed}`
    case 'task-done':
      return `  [${event.done_tasks}/${event.total_tasks}] ${event.task_id}: ${event.k}/${event.n} passed`
    case 'ingesting':
      return `  waiting for the store: ${event.stored}/${event.expected} attempts stored`
    case 'notice':
      return `  note: ${event.message}`
  }
}
