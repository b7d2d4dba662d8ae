import { Command } from '@oclif/core'
import { EXIT_CODES, exitCodeOf } from '../core/errors.js'
import type { RunCommandOutput } from './run-view.js'

/** Exit codes a script can branch on (core/errors.ts); `regression` is forge compare's "a regression was found". */
export const EXIT = EXIT_CODES

/** Every Forge command: known failures (a ForgeError) become one clear message and their exit code, never a stack trace. */
export abstract class ForgeCommand extends Command {
  static override enableJsonFlag = true

  /** What the run views print through (cli/run-view.ts). */
  protected runCommandOutput(): RunCommandOutput {
    return {
      json: this.jsonEnabled(),
      log: (line) => this.log(line),
      warn: (message) => this.warn(message),
      logJson: (json) => this.logJson(json),
      logToStderr: (message) => this.logToStderr(message),
      exit: (code) => this.exit(code),
    }
  }

  protected override async catch(error: Error & { oclif?: { exit?: number } }): Promise<unknown> {
    if (error.oclif) return super.catch(error)
    const exit = exitCodeOf(error)
    if (exit === undefined) return super.catch(error)
    if (this.jsonEnabled()) this.logJson({ error: { name: error.name, message: error.message } })
    this.logToStderr(`Error: ${error.message}`)
    this.exit(exit)
  }
}
