import { Args, Flags } from '@oclif/core'
import type { SweepRecord } from '../../../core/contracts/sweep.js'
import { showSweep } from '../../../app/sweep.js'
import { openReader } from '../../../app/store-access.js'
import { resolveConfig } from '../../../stack/config.js'
import { EXIT, ForgeCommand } from '../../base.js'
import { printSweep } from '../../sweep-view.js'

export default class SweepShow extends ForgeCommand {
  static override summary = 'Show a sweep: every cell, its run, its baseline and its verdict (the morning answer).'
  static override examples = ['<%= config.bin %> sweep show', '<%= config.bin %> sweep show latest:nightly --json', '<%= config.bin %> sweep show nightly-20261201T020000Z-1a2b --exit-code']
  static override args = {
    ref: Args.string({ description: 'latest, latest:<sweep name>, or a sweep id.', default: 'latest' }),
  }
  static override flags = {
    'exit-code': Flags.boolean({ summary: 'Exit 6 when a cell regressed and 1 when a cell failed (for scripts and alerts).' }),
  }

  async run(): Promise<SweepRecord> {
    const { args, flags } = await this.parse(SweepShow)
    const reader = await openReader(resolveConfig())
    try {
      const sweep = await showSweep(reader, args.ref)
      if (!this.jsonEnabled()) printSweep((line) => this.log(line), sweep)
      if (flags['exit-code'] && sweep.verdict === 'regressed') process.exitCode = EXIT.regression
      else if (flags['exit-code'] && sweep.verdict === 'failed') process.exitCode = EXIT.failure
      return sweep
    } finally {
      await reader.close()
    }
  }
}
