import { Args } from '@oclif/core'
import { showBaseline, type BaselineDetail } from '../../../app/baselines.js'
import { openReader } from '../../../app/store-access.js'
import { resolveConfig } from '../../../stack/config.js'
import { ForgeCommand } from '../../base.js'
import { printRunStats } from '../../stats-view.js'

export default class BaselineShow extends ForgeCommand {
  static override summary = "Show a baseline and its run's statistics."
  static override examples = ['<%= config.bin %> baseline show main', '<%= config.bin %> baseline show main@2 --json', '<%= config.bin %> baseline show latest']
  static override args = {
    ref: Args.string({ description: 'latest, a name (its newest version), name@version, or a commit hash.', default: 'latest' }),
  }

  async run(): Promise<BaselineDetail> {
    const { args } = await this.parse(BaselineShow)
    const reader = await openReader(resolveConfig())
    try {
      const detail = await showBaseline(reader, args.ref)
      if (!this.jsonEnabled()) {
        const b = detail.baseline
        this.log(`baseline ${b.name} v${b.version}: run ${b.run_id}, suite ${b.suite}`)
        this.log(`commit ${b.commit_hash || '—'}   agent ${b.agent_version || '—'}   set at ${new Date(b.created_at).toISOString()}${b.note ? `   note: ${b.note}` : ''}`)
        this.log('')
        printRunStats((line) => this.log(line), detail.stats)
      }
      return detail
    } finally {
      await reader.close()
    }
  }
}
