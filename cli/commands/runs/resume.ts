import { Args, Flags } from '@oclif/core'
import { resumeRun } from '../../../app/resume.js'
import type { RunReport } from '../../../app/run.js'
import { resolveConfig } from '../../../config/index.js'
import { ForgeCommand } from '../../base.js'
import { describeRunEvent, finishRunCommand } from '../../run-view.js'

export default class RunsResume extends ForgeCommand {
  static override summary = 'Re-attach to a run whose forge run ended (killed, closed terminal): start workers if it still runs, wait for it, report it.'
  static override description =
    'A run keeps going in Temporal when its forge run dies (its workers serve it to the end). This brings the local stack up, ' +
    'starts --workers worker processes when the run still runs, follows it to its end and prints its statistics like forge run, ' +
    'exit codes included (1 incomplete, 7 degraded). Ctrl-C cancels the run.'
  static override examples = [
    { description: 'Re-attach to a run whose forge run was killed (needs a run still known to Temporal).', command: '<%= config.bin %> runs resume <run-id>' },
    { description: 'The same with two workers and the report as JSON (needs a run still known to Temporal).', command: '<%= config.bin %> runs resume <run-id> --workers 2 --json' },
  ]
  static override args = {
    run: Args.string({ description: 'The run id (forge runs list).', required: true }),
  }
  static override flags = {
    workers: Flags.integer({ char: 'w', summary: 'Workers to start when the run still runs (laid out like forge run --workers); 0: none, workers elsewhere serve it.', default: 1, min: 0, max: 256 }),
    concurrency: Flags.integer({ summary: 'Attempts each worker runs at once.', default: 50, min: 1, max: 1000 }),
  }

  async run(): Promise<RunReport> {
    const { args, flags } = await this.parse(RunsResume)
    const interrupt = new AbortController()
    const onInterrupt = () => {
      if (interrupt.signal.aborted) process.exit(130)
      this.logToStderr('cancelling the run… (Ctrl-C again to quit at once)')
      interrupt.abort()
    }
    process.on('SIGINT', onInterrupt)
    const report = await resumeRun(
      resolveConfig(),
      { run_id: args.run, workers: flags.workers, concurrency: flags.concurrency },
      (event) => {
        if (!this.jsonEnabled()) this.log(describeRunEvent(event))
      },
      interrupt.signal,
    ).finally(() => process.off('SIGINT', onInterrupt))
    return finishRunCommand(this.runCommandOutput(), report)
  }
}
