import { Flags } from '@oclif/core'
import { sweepList } from '../../../app/sweep.js'
import { openReader } from '../../../app/store-access.js'
import type { SweepSummary } from '../../../store/sweep-repositories.js'
import { resolveConfig } from '../../../stack/config.js'
import { ForgeCommand } from '../../base.js'
import { printSweepList } from '../../sweep-view.js'

export default class SweepList extends ForgeCommand {
  static override summary = 'List stored sweeps, newest first.'
  static override examples = ['<%= config.bin %> sweep list', '<%= config.bin %> sweep list --name nightly --limit 7 --json']
  static override flags = {
    name: Flags.string({ summary: 'Only sweeps of this name.' }),
    limit: Flags.integer({ summary: 'At most this many.', default: 20, min: 1, max: 10_000 }),
  }

  async run(): Promise<SweepSummary[]> {
    const { flags } = await this.parse(SweepList)
    const reader = await openReader(resolveConfig())
    try {
      const sweeps = await sweepList(reader, { limit: flags.limit, ...(flags.name ? { name: flags.name } : {}) })
      if (!this.jsonEnabled()) printSweepList((line) => this.log(line), sweeps)
      return sweeps
    } finally {
      await reader.close()
    }
  }
}
