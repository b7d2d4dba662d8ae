import { resolveConfig } from '../../../stack/config.js'
import { stackDown } from '../../../stack/local-stack.js'
import { ForgeCommand } from '../../base.js'

export default class StackDown extends ForgeCommand {
  static override summary = 'Stop the local stack; its state under .forge/ is kept for the next run.'
  static override examples = ['<%= config.bin %> stack down']

  async run(): Promise<{ stopped: string[] }> {
    await this.parse(StackDown)
    const stopped = await stackDown(resolveConfig())
    if (!this.jsonEnabled()) this.log(stopped.length ? `stopped: ${stopped.join(', ')}` : 'nothing was running')
    return { stopped }
  }
}
