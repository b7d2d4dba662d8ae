import { Flags } from '@oclif/core'
import { newestRunId } from '../../app/compare.js'
import { openReader } from '../../app/store-access.js'
import { getRunStats, type RunStats } from '../../app/stats.js'
import { resolveConfig } from '../../stack/config.js'
import { ConfigError } from '../../stack/errors.js'
import { ForgeCommand } from '../base.js'
import { printRunStats } from '../stats-view.js'
import { getRecoveryCurve } from '../../app/fault-stats.js'
import type { RecoveryCurve } from '../../core/fault-stats.js'
import { printRecoveryCurve } from '../fault-view.js'

export default class Stats extends ForgeCommand {
  static override summary =
    "Print a run's statistics: per task k/n, Wilson 95% interval, pass@k, pass^k, consistency, latency, tool calls, tokens and cost."
  static override description =
    'Each suite is reported apart; its success is the unweighted mean of its task rates. Costs come from the price table ' +
    'stamped on the run (printed with its date); an unpriced model shows n/a, never $0. Works while a run is in progress: ' +
    'reads go through the ingester when it owns the embedded store. With several --run-id, prints one report per run.'
  static override examples = [
    '<%= config.bin %> stats',
    '<%= config.bin %> stats --run-id <run-id> --json',
    '<%= config.bin %> stats --k 1 --k 5 --k 10',
    '<%= config.bin %> stats --run-id <run-id> --run-id <other-run-id>',
    { description: 'The recovery curve of the newest fault sweep (needs a stored sweep: forge run --fault-sweep).', command: '<%= config.bin %> stats --fault-sweep latest' },
  ]
  static override flags = {
    'run-id': Flags.string({ char: 'r', summary: 'The run (default: the latest); repeatable.', multiple: true }),
    k: Flags.integer({ summary: 'Attempt counts for pass@k and pass^k (repeatable; default 1, 3, 5).', multiple: true, min: 1, max: 1000 }),
    'fault-sweep': Flags.string({ summary: 'Print the recovery curve of a fault sweep instead (its id, or latest).' }),
  }

  async run(): Promise<RunStats | RunStats[] | RecoveryCurve> {
    const { flags } = await this.parse(Stats)
    const reader = await openReader(resolveConfig())
    try {
      if (flags['fault-sweep'] !== undefined) {
        if (flags['run-id'] !== undefined) throw new ConfigError('give either --fault-sweep or --run-id')
        const curve = await getRecoveryCurve(reader, flags['fault-sweep'])
        if (!this.jsonEnabled()) printRecoveryCurve((line) => this.log(line), curve)
        return curve
      }
      const runIds = flags['run-id'] ?? [await newestRunId(reader)]
      const ks = flags.k ? [...new Set(flags.k)].sort((a, b) => a - b) : undefined
      const reports: RunStats[] = []
      for (const runId of runIds) {
        const stats = await getRunStats(reader, runId, ks)
        if (!stats.run && stats.attempts === 0) throw new ConfigError(`no run "${runId}" is stored (see forge runs list)`)
        reports.push(stats)
      }
      if (!this.jsonEnabled()) {
        reports.forEach((stats, i) => {
          if (i > 0) this.log(`\n${'='.repeat(60)}\n`)
          printRunStats((line) => this.log(line), stats, ks ? { ks } : {})
        })
      }
      return reports.length === 1 ? reports[0]! : reports
    } finally {
      await reader.close()
    }
  }
}
