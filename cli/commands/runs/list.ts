import { Flags } from '@oclif/core'
import { openReader } from '../../../app/store-access.js'
import { resolveConfig } from '../../../stack/config.js'
import { listRuns, type RunListEntry } from '../../../store/repositories.js'
import { ForgeCommand } from '../../base.js'
import { table } from '../../format.js'

export default class RunsList extends ForgeCommand {
  static override summary = 'List stored runs, newest first.'
  static override examples = ['<%= config.bin %> runs list', '<%= config.bin %> runs list --limit 5 --json']
  static override flags = {
    limit: Flags.integer({ char: 'l', summary: 'How many runs.', default: 20, min: 1, max: 10_000 }),
  }

  async run(): Promise<RunListEntry[]> {
    const { flags } = await this.parse(RunsList)
    const reader = await openReader(resolveConfig())
    try {
      const runs = await listRuns(reader, flags.limit)
      if (!this.jsonEnabled()) {
        if (runs.length === 0) this.log('no runs stored yet: start one with forge run')
        else
          this.log(
            table(
              ['run id', 'started (UTC)', 'suite', 'adapter', 'status', 'attempts', 'passed', 'flags'],
              runs.map((r) => [
                r.run_id,
                new Date(r.started_at).toISOString().replace('T', ' ').slice(0, 19),
                r.suite,
                r.adapter,
                r.status,
                `${r.stored_attempts}/${r.attempts * r.task_count}`,
                r.passed,
                runFlags(r),
              ]),
              ['l', 'l', 'l', 'l', 'l', 'r', 'r', 'l'],
            ),
          )
      }
      return runs
    } finally {
      await reader.close()
    }
  }
}

/** What a run was started with that changes what is stored: --no-redact, --guard-answers. */
function runFlags(run: RunListEntry): string {
  return [run.redacted ? '' : 'no-redact', run.guard_answers ? 'guard-answers' : ''].filter((flag) => flag !== '').join(',')
}
