import { Args, Flags } from '@oclif/core'
import { runSweep, type SweepOutcome } from '../../../app/sweep.js'
import { resolveConfig } from '../../../stack/config.js'
import { EXIT, ForgeCommand } from '../../base.js'
import { printSweep } from '../../sweep-view.js'

export default class Sweep extends ForgeCommand {
  static override summary = 'Run a matrix (suites × adapters × models × seeds) as one tracked sweep: a run per cell, each compared with its baseline.'
  static override description =
    'The sweep file lists suites, adapters, models, seeds, attempts and the baseline each cell is compared with (README "Deploy on Kubernetes", "Sweeps and schedules"). ' +
    'Locally it brings up the stack and starts --workers worker processes; against a fleet (FORGE_TEMPORAL_ADDRESS and FORGE_NATS_URL set) ' +
    'the default is --workers 0: the fleet runs the cells. Exits 6 when a cell regressed, 1 when a cell failed.'
  static override examples = [
    '<%= config.bin %> sweep sweep.yaml',
    '<%= config.bin %> sweep sweep.yaml --workers 2 --concurrency 100 --json',
    'FORGE_TEMPORAL_ADDRESS=temporal:7233 FORGE_NATS_URL=nats://nats:4222 <%= config.bin %> sweep /etc/forge/sweeps/nightly.yaml --workers 0',
    '<%= config.bin %> sweep sweep.yaml --detach',
  ]
  static override args = {
    file: Args.string({ description: 'The sweep file (YAML).', required: true }),
  }
  static override flags = {
    workers: Flags.integer({ char: 'w', summary: 'Worker processes to start here (default 1 locally, 0 against a fleet).', min: 0, max: 256 }),
    concurrency: Flags.integer({ summary: 'Attempts each started worker runs at once.', default: 50, min: 1, max: 1000 }),
    detach: Flags.boolean({ summary: 'Start the sweep and return its id without waiting (see forge sweep show).' }),
    'sweep-id': Flags.string({ summary: 'Use this sweep id instead of <name>-<time>-<random>.' }),
  }

  async run(): Promise<SweepOutcome> {
    const { args, flags } = await this.parse(Sweep)
    const config = resolveConfig()
    const fleet = config.temporal.address !== undefined && config.natsUrl !== undefined
    const quiet = this.jsonEnabled()
    const controller = new AbortController()
    const onInterrupt = () => controller.abort()
    process.once('SIGINT', onInterrupt)
    try {
      const outcome = await runSweep(
        config,
        {
          file: args.file,
          workers: flags.workers ?? (fleet ? 0 : 1),
          concurrency: flags.concurrency,
          signal: controller.signal,
          ...(flags.detach ? { detach: true } : {}),
          ...(flags['sweep-id'] ? { sweepId: flags['sweep-id'] } : {}),
        },
        (event) => {
          if (quiet) return
          if (event.kind === 'stack') this.log(event.message)
          else this.log(`sweep ${event.sweep_id}: ${event.cells} cells${event.workers > 0 ? ` on ${event.workers} local worker(s)` : ' on the fleet'} (workflow ${event.workflow_id})`)
        },
      )
      if (outcome.detached) {
        if (!quiet) this.log(`started; see forge sweep show ${outcome.sweep_id}`)
        return outcome
      }
      if (!quiet) {
        this.log('')
        printSweep((line) => this.log(line), outcome)
      }
      if (outcome.verdict === 'regressed') process.exitCode = EXIT.regression
      else if (outcome.verdict === 'failed') process.exitCode = EXIT.failure
      return outcome
    } finally {
      process.off('SIGINT', onInterrupt)
    }
  }
}
