import { Command } from '@oclif/core'
import { ConfigError, MissingBinaryError, StackStartError } from '../stack/errors.js'
import { BusError, QueryRefusedError, StoreError } from '../store/errors.js'
import { SuiteLoadError } from '../engine/errors.js'

/** Exit codes a script can branch on; `regression` is forge compare's "a regression was found". */
export const EXIT = { failure: 1, badInput: 2, missingBinary: 3, stack: 4, store: 5, regression: 6 } as const

/** Every Forge command: known failures become one clear message and a distinct exit code, never a stack trace. */
export abstract class ForgeCommand extends Command {
  static override enableJsonFlag = true

  protected override async catch(error: Error & { exitCode?: number; oclif?: { exit?: number } }): Promise<unknown> {
    if (error.oclif) return super.catch(error)
    const exit =
      error instanceof SuiteLoadError || error instanceof ConfigError || error instanceof QueryRefusedError
        ? EXIT.badInput
        : error instanceof MissingBinaryError
          ? EXIT.missingBinary
          : error instanceof StackStartError
            ? EXIT.stack
            : error instanceof StoreError || error instanceof BusError
              ? EXIT.store
              : undefined
    if (exit !== undefined || error.name === 'RunFailedError') {
      if (this.jsonEnabled()) this.logJson({ error: { name: error.name, message: error.message } })
      this.logToStderr(`Error: ${error.message}`)
      this.exit(exit ?? EXIT.failure)
    }
    return super.catch(error)
  }
}
