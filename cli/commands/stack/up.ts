import { Flags } from '@oclif/core'
import { resolveRunModels, startRunModelServer } from '../../../app/local-model.js'
import { resolveConfig } from '../../../stack/config.js'
import { stackUp, stackStatus, type ComponentStatus } from '../../../stack/local-stack.js'
import { ForgeCommand } from '../../base.js'
import { table } from '../../format.js'

export default class StackUp extends ForgeCommand {
  static override summary = 'Start the local stack (Temporal dev server, nats-server, ingester) if it is not running.'
  static override examples = ['<%= config.bin %> stack up', '<%= config.bin %> stack up --json', '<%= config.bin %> stack up --model local']
  static override flags = {
    model: Flags.string({ summary: 'Also start the model server with this local model (local or local:<name or .gguf path>); runs start it on demand otherwise.' }),
  }

  async run(): Promise<ComponentStatus[]> {
    const { flags } = await this.parse(StackUp)
    const config = resolveConfig()
    const log = (line: string) => !this.jsonEnabled() && this.log(line)
    const models = flags.model === undefined ? undefined : resolveRunModels({ model: flags.model }, undefined)
    if (models !== undefined && models.local === undefined) this.error(`--model must name a local model (local, local:<name> or local:<path to a .gguf file>), got "${flags.model}"`, { exit: 2 })
    await stackUp(config, log)
    if (models !== undefined) await startRunModelServer(config, models.local, log)
    const status = stackStatus(config)
    if (!this.jsonEnabled()) this.log(table(['component', 'state', 'detail'], status.map((s) => [s.name, s.state, s.detail])))
    return status
  }
}
