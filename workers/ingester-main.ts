/** Entry point of the ingester process (embedded stack child, or `forge ingester` in a fleet). */
import { connectBus, ensureResultsStream } from '../store/bus.js'
import { openClickHouse, type StoreLocation } from '../store/clickhouse.js'
import { migrate } from '../store/migrations.js'
import { startIngester } from './ingester.js'
import { createLogger } from '../engine/logger.js'
import { healthPortFrom, startHealthServer } from './health.js'
import { ingesterMetrics, ingestLag } from './ingester-telemetry.js'

export async function runIngesterProcess(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const logger = createLogger('ingester')
  const natsUrl = env['FORGE_NATS_URL']
  if (!natsUrl) throw new Error('FORGE_NATS_URL is not set: the ingester needs the NATS server holding the results stream')
  const location: StoreLocation = env['FORGE_CLICKHOUSE_URL']
    ? { kind: 'server', url: env['FORGE_CLICKHOUSE_URL'] }
    : { kind: 'embedded', path: env['FORGE_STORE_PATH'] ?? '.forge/store' }
  const healthPort = healthPortFrom(env)
  const replicas = streamReplicasFrom(env)
  const store = await openClickHouse(location)
  const applied = await migrate(store)
  const nc = await connectBus(natsUrl, 'forge-ingester')
  await ensureResultsStream(nc, { replicas })
  const ingester = await startIngester({ nc, store, logger, serveQueries: location.kind === 'embedded' })
  let stopping = false
  const health =
    healthPort === undefined
      ? undefined
      : await startHealthServer({
          port: healthPort,
          role: 'ingester',
          probe: { live: () => !nc.isClosed(), ready: () => !stopping && !nc.isClosed(), detail: () => ({ ...ingester.stats }) },
          metrics: async () => ingesterMetrics(ingester.stats, await ingestLag(nc)),
        })
  logger.info({ pid: process.pid, store: location, migrations_applied: applied, health_port: health?.port }, 'ingester ready')

  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve)
    process.once('SIGINT', resolve)
  })
  logger.info({ stats: ingester.stats }, 'ingester stopping')
  stopping = true
  await ingester.stop()
  await health?.close()
  await nc.drain().catch(() => undefined)
  await store.close()
}

/** FORGE_NATS_STREAM_REPLICAS: the results stream's replicas when the ingester creates it (3 on a 3-node cluster). */
function streamReplicasFrom(env: NodeJS.ProcessEnv): number {
  const raw = env['FORGE_NATS_STREAM_REPLICAS']?.trim() || '1'
  if (!/^[1-5]$/.test(raw)) throw new Error(`FORGE_NATS_STREAM_REPLICAS must be 1 to 5 (JetStream's limit), got "${raw}"`)
  return Number(raw)
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runIngesterProcess().catch((error: unknown) => {
    console.error(error)
    process.exit(1)
  })
}
