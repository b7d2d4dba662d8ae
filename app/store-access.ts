/**
 * How a command reads the store: a ClickHouse server directly; in embedded mode through the running
 * ingester (chDB's single owner) over NATS; or by opening chDB itself when no ingester runs.
 */
import { connectBus, type NatsConnection } from '../store/bus.js'
import { busReader } from '../store/bus-reader.js'
import { directReader, openClickHouse, type StoreReader } from '../store/clickhouse.js'
import type { ForgeConfig } from '../stack/config.js'
import { currentEndpoints } from '../stack/local-stack.js'

/**
 * `bus`: a connection to the local stack's bus this process holds already (forge run's own): a reader
 * through the ingester uses it, and leaves it open, instead of connecting once more.
 */
export async function openReader(config: ForgeConfig, opts: { bus?: NatsConnection } = {}): Promise<StoreReader> {
  if (config.clickhouseUrl) return directReader(await openClickHouse({ kind: 'server', url: config.clickhouseUrl }))
  const endpoints = currentEndpoints(config)
  if (endpoints.ingesterRunning && endpoints.natsUrl) {
    if (opts.bus !== undefined) return busReader(opts.bus)
    return busReader(await connectBus(endpoints.natsUrl, 'forge-cli'), { closeConnection: true })
  }
  // the migrations load only for a reader that opens the store itself
  const { migrate } = await import('../store/migrations.js')
  const client = await openClickHouse({ kind: 'embedded', path: config.storePath })
  await migrate(client)
  return directReader(client)
}
