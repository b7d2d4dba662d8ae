import { Flags } from '@oclif/core'
import { sealRun, type SealReport } from '../../../app/audit.js'
import { resolveConfig } from '../../../config/index.js'
import { ForgeCommand } from '../../base.js'

export default class AuditSeal extends ForgeCommand {
  static override summary = "Link a run's results not yet in its audit chain and store the new head on the run (forge run does this at its end)."
  static override description = 'For a run whose forge run ended before sealing. Links already in the chain are never rewritten; with FORGE_AUDIT_KEY set, the head is signed.'
  static override examples = ['<%= config.bin %> audit seal --run-id <run-id>']
  static override flags = {
    'run-id': Flags.string({ char: 'r', summary: 'The run.', required: true }),
  }

  async run(): Promise<SealReport> {
    const { flags } = await this.parse(AuditSeal)
    const report = await sealRun(resolveConfig(), flags['run-id'])
    if (!this.jsonEnabled()) {
      this.log(`run ${report.run_id}: ${report.added} link(s) added, ${report.links} in all; head ${report.head}${report.signature !== '' ? ' (signed)' : ''}`)
    }
    return report
  }
}
