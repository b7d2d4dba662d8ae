import { Flags } from '@oclif/core'
import { baselineList } from '../../../app/baselines.js'
import { openReader } from '../../../app/store-access.js'
import type { BaselineRecord } from '../../../core/contracts/index.js'
import { resolveConfig } from '../../../stack/config.js'
import { ForgeCommand } from '../../base.js'
import { table } from '../../format.js'

export default class BaselineList extends ForgeCommand {
  static override summary = 'List baselines, newest first (every version of every name).'
  static override examples = ['<%= config.bin %> baseline list', '<%= config.bin %> baseline list --name main --json']
  static override flags = {
    name: Flags.string({ char: 'n', summary: 'Only this baseline name.' }),
    limit: Flags.integer({ char: 'l', summary: 'How many.', default: 50, min: 1, max: 10_000 }),
  }

  async run(): Promise<BaselineRecord[]> {
    const { flags } = await this.parse(BaselineList)
    const reader = await openReader(resolveConfig())
    try {
      const baselines = await baselineList(reader, { limit: flags.limit, ...(flags.name ? { name: flags.name } : {}) })
      if (!this.jsonEnabled()) {
        if (baselines.length === 0) this.log('no baselines stored yet: tag a run with forge baseline set')
        else
          this.log(
            table(
              ['baseline', 'run id', 'suite', 'commit', 'agent version', 'set at (UTC)', 'note'],
              baselines.map((b) => [
                `${b.name}@${b.version}`,
                b.run_id,
                b.suite,
                b.commit_hash.slice(0, 12) || '—',
                b.agent_version || '—',
                new Date(b.created_at).toISOString().replace('T', ' ').slice(0, 19),
                b.note,
              ]),
            ),
          )
      }
      return baselines
    } finally {
      await reader.close()
    }
  }
}
