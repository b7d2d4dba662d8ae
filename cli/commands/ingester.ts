import { ForgeCommand } from '../base.js'
import { runIngesterProcess } from '../../workers/ingester-main.js'

export default class Ingester extends ForgeCommand {
  static override summary = 'Run the ingester (results stream → ClickHouse) in the foreground, for fleet deployments.'
  static override description = 'Needs FORGE_NATS_URL; writes to FORGE_CLICKHOUSE_URL, or to the embedded store under FORGE_STORE_PATH.'
  static override examples = [
    {
      description: 'On a fleet, beside the workers (needs a NATS server and a ClickHouse server; locally, forge stack up starts the ingester).',
      command: 'FORGE_NATS_URL=nats://nats:4222 FORGE_CLICKHOUSE_URL=http://clickhouse:8123 <%= config.bin %> ingester',
    },
  ]

  async run(): Promise<void> {
    await this.parse(Ingester)
    await runIngesterProcess()
  }
}
