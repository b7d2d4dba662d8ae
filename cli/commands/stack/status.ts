import { resolveConfig } from '../../../stack/config.js'
import { stackStatus, type ComponentStatus } from '../../../stack/local-stack.js'
import { withResultsPath } from '../../../stack/ingester-probe.js'
import { ForgeCommand } from '../../base.js'
import { table } from '../../format.js'

export default class StackStatus extends ForgeCommand {
  static override summary = 'Show which parts of the local stack are running.'
  static override examples = ['<%= config.bin %> stack status', '<%= config.bin %> stack status --json']

  async run(): Promise<ComponentStatus[]> {
    await this.parse(StackStatus)
    const config = resolveConfig()
    const status = await withResultsPath(config, stackStatus(config))
    if (!this.jsonEnabled()) this.log(table(['component', 'state', 'detail'], status.map((s) => [s.name, s.state, s.detail])))
    return status
  }
}
