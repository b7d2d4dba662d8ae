/**
 * How a command reads the store: a ClickHouse server directly; in embedded mode through the running
 * ingester (chDB's single owner) over NATS; or by opening chDB itself when no ingester runs.
 */
import { connectBus } from '../store/bus.js'
import { busReader } from '../store/bus-reader.js'
import { directReader, openClickHouse, type StoreReader } from '../store/clickhouse.js'
import { migrate } from '../store/migrations.js'
import type { ForgeConfig } from '../stack/config.js'
import { currentEndpoints } from '../stack/local-stack.js'

export async function openReader(config: ForgeConfig): Promise<StoreReader> {
  if (config.clickhouseUrl) return directReader(await openClickHouse({ kind: 'server', url: config.clickhouseUrl }))
  const endpoints = currentEndpoints(config)
  if (endpoints.ingesterRunning && endpoints.natsUrl) {
    return busReader(await connectBus(endpoints.natsUrl, 'forge-cli'), { closeConnection: true })
  }
  const client = await openClickHouse({ kind: 'embedded', path: config.storePath })
  await migrate(client)
  return directReader(client)
}
