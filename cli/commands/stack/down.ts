import { Flags } from '@oclif/core'
import { activeRunIds } from '../../../app/active-runs.js'
import { resolveConfig } from '../../../config/index.js'
import { ConfigError } from '../../../core/errors.js'
import { stackDown } from '../../../stack/local-stack.js'
import { ForgeCommand } from '../../base.js'

export default class StackDown extends ForgeCommand {
  static override summary = 'Stop the local stack; its state under .forge/ is kept for the next run. Refuses while a run is active, unless --force.'
  static override examples = ['<%= config.bin %> stack down', '<%= config.bin %> stack down --force']
  static override flags = {
    force: Flags.boolean({ summary: 'Stop it even while runs are active (they stall until the stack is up again; forge runs resume re-attaches).' }),
  }

  async run(): Promise<{ stopped: string[] }> {
    const { flags } = await this.parse(StackDown)
    const config = resolveConfig()
    if (!flags.force) {
      const active = await activeRunIds(config)
      if (active.length > 0) {
        throw new ConfigError(
          `${active.length === 1 ? 'run' : 'runs'} ${active.join(', ')} ${active.length === 1 ? 'is' : 'are'} still running: stopping the stack would stall ${active.length === 1 ? 'it' : 'them'}. ` +
            'Wait for it, cancel it (Ctrl-C in its forge run or forge runs resume), or pass --force',
        )
      }
    }
    const stopped = await stackDown(config)
    if (!this.jsonEnabled()) this.log(stopped.length ? `stopped: ${stopped.join(', ')}` : 'nothing was running')
    return { stopped }
  }
}
