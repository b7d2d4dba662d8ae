import { Flags } from '@oclif/core'
import { openReader } from '../../app/store-access.js'
import { getRunStats, type RunStats } from '../../app/stats.js'
import { resolveConfig } from '../../stack/config.js'
import { ConfigError } from '../../stack/errors.js'
import { listRuns } from '../../store/repositories.js'
import { ForgeCommand } from '../base.js'
import { printRunStats } from '../stats-view.js'

export default class Stats extends ForgeCommand {
  static override summary = "Print a run's per-task success rates with Wilson intervals, outcomes and failure buckets."
  static override description = 'Works while a run is in progress: reads go through the ingester when it owns the embedded store.'
  static override examples = ['<%= config.bin %> stats', '<%= config.bin %> stats --run-id r20261130024500-a1b2c3 --json']
  static override flags = {
    'run-id': Flags.string({ char: 'r', summary: 'The run (default: the latest).' }),
  }

  async run(): Promise<RunStats> {
    const { flags } = await this.parse(Stats)
    const reader = await openReader(resolveConfig())
    try {
      let runId = flags['run-id']
      if (!runId) {
        const [latest] = await listRuns(reader, 1)
        if (!latest) throw new ConfigError('no runs are stored yet: start one with forge run')
        runId = latest.run_id
      }
      const stats = await getRunStats(reader, runId)
      if (!stats.run && stats.attempts === 0) throw new ConfigError(`no run "${runId}" is stored (see forge runs list)`)
      if (!this.jsonEnabled()) printRunStats((line) => this.log(line), stats)
      return stats
    } finally {
      await reader.close()
    }
  }
}
