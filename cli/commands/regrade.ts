import { Flags } from '@oclif/core'
import { newestRunId } from '../../app/compare.js'
import { regradeRun, type RegradeReport } from '../../app/regrade.js'
import { openReader } from '../../app/store-access.js'
import { resolveConfig } from '../../stack/config.js'
import { ForgeCommand } from '../base.js'
import { counts } from '../format.js'

export default class Regrade extends ForgeCommand {
  static override summary = "Grade a run's stored traces again with the current graders, invariants and metrics, into a new grading version; no agent runs."
  static override description =
    'The new version is stored as new rows (attempt_grades, attempt_metrics, judgements); the original attempt rows stay. Attempts ' +
    'whose stored evidence cannot support the current graders (a task removed, an environment view or query that was not ' +
    'captured) are listed, not guessed. forge judge-agreement and forge review list read the new version.'
  static override examples = ['<%= config.bin %> regrade', '<%= config.bin %> regrade --run-id <run-id> --json', '<%= config.bin %> regrade --dry-run']
  static override flags = {
    'run-id': Flags.string({ char: 'r', summary: 'The run (default: the latest).' }),
    'dry-run': Flags.boolean({ summary: 'Report what would change; store nothing.' }),
  }

  async run(): Promise<RegradeReport> {
    const { flags } = await this.parse(Regrade)
    const config = resolveConfig()
    let runId = flags['run-id']
    if (runId === undefined) {
      const reader = await openReader(config)
      try {
        runId = await newestRunId(reader)
      } finally {
        await reader.close()
      }
    }
    const report = await regradeRun(config, { runId, write: !flags['dry-run'] })
    if (!this.jsonEnabled()) {
      this.log(
        `${flags['dry-run'] ? 'dry run: would regrade' : 'regraded'} run ${report.run_id} (suite ${report.suite}) as grading version ${report.grading_version}: ` +
          `${report.regraded} of ${report.attempts} attempts (${report.stored_traces} traces stored)`,
      )
      this.log(`outcomes before: ${counts(report.before)}`)
      this.log(`outcomes now:    ${counts(report.after)}`)
      this.log(`${report.changed} attempt(s) changed outcome`)
      for (const c of report.changes) this.log(`  ${c.attempt_uid}: ${c.from} → ${c.to}`)
      if (report.not_regradable.length > 0) {
        this.log(`${report.not_regradable.length} attempt(s) could not be regraded:`)
        for (const n of report.not_regradable.slice(0, 50)) this.log(`  ${n.attempt_uid}: ${n.reason}`)
      }
    }
    return report
  }
}
