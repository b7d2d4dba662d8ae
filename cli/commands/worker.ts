import { Flags } from '@oclif/core'
import { resolveConfig } from '../../stack/config.js'
import { stackUp } from '../../stack/local-stack.js'
import { runWorker } from '../../workers/worker-main.js'
import { ForgeCommand } from '../base.js'

export default class Worker extends ForgeCommand {
  static override summary = 'Start a standalone attempt worker that serves runs until stopped (Ctrl-C).'
  static override description =
    'Uses FORGE_TEMPORAL_ADDRESS and FORGE_NATS_URL when set (fleet); otherwise brings up and joins the local stack.'
  static override examples = [
    '<%= config.bin %> worker',
    {
      description: 'On a fleet (needs a Temporal cluster and a NATS server).',
      command: 'FORGE_TEMPORAL_ADDRESS=temporal:7233 FORGE_NATS_URL=nats://nats:4222 <%= config.bin %> worker --concurrency 200',
    },
  ]
  static override flags = {
    concurrency: Flags.integer({ summary: 'Attempts this worker runs at once.', default: 50, min: 1, max: 1000 }),
    'worker-id': Flags.string({ summary: 'Identity shown in Temporal and stored on each attempt.' }),
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(Worker)
    const config = resolveConfig()
    const endpoints = await stackUp(config, (line) => this.log(line))
    this.log(`worker serving task queue ${config.temporal.taskQueue} (Temporal ${endpoints.temporalAddress}, NATS ${endpoints.natsUrl}); Ctrl-C to stop`)
    await runWorker({
      temporalAddress: endpoints.temporalAddress,
      natsUrl: endpoints.natsUrl,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
      concurrency: flags.concurrency,
      ...(flags['worker-id'] ? { workerId: flags['worker-id'] } : {}),
      ...(config.clickhouseUrl !== undefined ? { clickhouseUrl: config.clickhouseUrl } : {}),
      logLevel: config.logLevel,
      judge: config.judge.worker ? { taskQueue: config.judge.taskQueue, activitiesPerSecond: config.judge.rate, concurrency: config.judge.concurrency } : false,
    })
  }
}
