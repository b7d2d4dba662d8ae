import { resolveConfig } from '../../../stack/config.js'
import { stackUp, stackStatus, type ComponentStatus } from '../../../stack/local-stack.js'
import { ForgeCommand } from '../../base.js'
import { table } from '../../format.js'

export default class StackUp extends ForgeCommand {
  static override summary = 'Start the local stack (Temporal dev server, nats-server, ingester) if it is not running.'
  static override examples = ['<%= config.bin %> stack up', '<%= config.bin %> stack up --json']

  async run(): Promise<ComponentStatus[]> {
    await this.parse(StackUp)
    const config = resolveConfig()
    await stackUp(config, (line) => !this.jsonEnabled() && this.log(line))
    const status = stackStatus(config)
    if (!this.jsonEnabled()) this.log(table(['component', 'state', 'detail'], status.map((s) => [s.name, s.state, s.detail])))
    return status
  }
}
