import { writeFileSync } from 'node:fs'
import { format } from 'node:util'
import { Command } from '@oclif/core'
import { EXIT_CODES, exitCodeOf } from '../core/errors.js'
import { terminalSafe } from '../core/terminal-text.js'
import type { RunCommandOutput } from './run-view.js'

/** Exit codes a script can branch on (core/errors.ts); `regression` is forge compare's "a regression was found". */
export const EXIT = EXIT_CODES

/**
 * Every Forge command: known failures (a ForgeError) become one clear message and their exit code,
 * never a stack trace; and what it prints for a person shows terminal controls as escapes
 * (core/terminal-text.ts) — much of it is an agent's text. `--json` answers are JSON, escaped already.
 */
export abstract class ForgeCommand extends Command {
  static override enableJsonFlag = true

  override log(message = '', ...args: unknown[]): void {
    super.log(terminalSafe(format(message, ...args)))
  }

  override logToStderr(message = '', ...args: unknown[]): void {
    super.logToStderr(terminalSafe(format(message, ...args)))
  }

  override warn(input: string | Error): string | Error {
    if (typeof input === 'string') return super.warn(terminalSafe(input))
    input.message = terminalSafe(input.message)
    return super.warn(input)
  }

  /** Prints a JSON Schema, or writes it to `out` (the `schema` commands); returns it for `--json`. */
  protected emitSchema(schema: Record<string, unknown>, out: string | undefined): Record<string, unknown> {
    const text = `${JSON.stringify(schema, null, 2)}\n`
    if (out) {
      writeFileSync(out, text)
      if (!this.jsonEnabled()) this.log(`wrote ${out}`)
    } else if (!this.jsonEnabled()) {
      process.stdout.write(text)
    }
    return schema
  }

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
