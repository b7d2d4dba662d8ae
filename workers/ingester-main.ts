/** Entry point of the ingester process (embedded stack child, or `forge ingester` in a fleet). */
import { readSetting, resolveConfig } from '../config/index.js'
import { ConfigError, exitCodeOf } from '../core/errors.js'
import { connectBus, ensureResultsStream, ensureWarmupStream, resultsKey } from '../store/bus.js'
import { openClickHouse, type StoreLocation } from '../store/clickhouse.js'
import { migrate } from '../store/migrations.js'
import { startIngester } from './ingester.js'
import { processFields } from './ingester-log.js'
import { createLogger } from '../engine/logger.js'
import { startHealthServer } from './health.js'
import { ingesterMetrics, ingestLag } from './ingester-telemetry.js'
import { startResultsTrimmer } from './results-trimmer.js'

export async function runIngesterProcess(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const config = resolveConfig(env)
  const logger = createLogger('ingester', config.logLevel, 'ingest')
  const natsUrl = config.natsUrl
  if (natsUrl === undefined) throw new ConfigError('FORGE_NATS_URL is not set: the ingester needs the NATS server holding the results stream')
  const location: StoreLocation = config.clickhouseUrl !== undefined ? { kind: 'server', url: config.clickhouseUrl } : { kind: 'embedded', path: config.storePath }
  const healthPort = config.healthPort
  const replicas = config.natsStreamReplicas
  const store = await openClickHouse(location)
  const applied = await migrate(store)
  const nc = await connectBus(natsUrl, 'forge-ingester', 'ingester')
  // with a results key every message must carry a valid signature; the embedded stack always has one
  const key = resultsKey()
  if (key === undefined) logger.warn(processFields('bus'), 'results are not authenticated: no FORGE_RESULTS_KEY (give the workers, ingesters and CLI of a fleet the same hex key)')
  await ensureResultsStream(nc, { replicas })
  const serveQueries = location.kind === 'embedded'
  // the embedded stack's warm workers warm up through the bus (app/jit-warmup.ts); without the stream they
  // warm up on a stand-in, so a failure here costs a first run some CPU and nothing else
  if (serveQueries) await ensureWarmupStream(nc).catch((error: unknown) => logger.warn({ ...processFields('bus'), err: (error as Error).message }, 'no warm-up stream: warm workers warm up without the bus'))
  // reads get a connection of their own: chDB runs one statement at a time per connection
  const queryStore = serveQueries ? await openClickHouse(location) : undefined
  // its JIT warm-up on sample messages of this build (made in a thread: app/ingester-warmup.ts), paused while results come in
  const warmupMessages = readSetting('ingesterWarmup', env)
  const warmup = warmupMessages > 0 ? { messages: warmupMessages, samples: async () => (await import('../app/ingester-warmup.js')).sampleResultMessagesInThread(key) } : undefined
  const ingester = await startIngester({ nc, store, logger, serveQueries, ...(key !== undefined ? { resultsKey: key } : {}), ...(queryStore !== undefined ? { queryStore } : {}), ...(warmup !== undefined ? { warmup } : {}) })
  // what the store holds leaves the bus after FORGE_RESULTS_KEEP: the stream's disk stays minutes of results, not a week
  const trimmer = startResultsTrimmer(nc, config.resultsKeepSeconds * 1000, logger, ingester.stats)
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
  logger.info({ ...processFields('ingest'), pid: process.pid, store: location, migrations_applied: applied, health_port: health?.port }, 'ingester ready')

  const stopped = await new Promise<'signal' | 'consumer'>((resolve) => {
    process.once('SIGTERM', () => resolve('signal'))
    process.once('SIGINT', () => resolve('signal'))
    // a consumer that ended by itself would leave a live process that stores nothing: exit, and the supervisor restarts it
    ingester.consuming.then(
      () => resolve('consumer'),
      () => resolve('consumer'),
    )
  })
  if (stopped === 'consumer') {
    logger.error({ ...processFields('bus'), stats: ingester.stats }, 'the results consumer ended; exiting so the stack supervisor restarts the ingester')
    process.exit(1)
  }
  logger.info({ ...processFields('ingest'), stats: ingester.stats }, 'ingester stopping')
  stopping = true
  await trimmer.stop()
  await ingester.stop()
  await health?.close()
  await nc.drain().catch(() => undefined)
  await queryStore?.close()
  await store.close()
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runIngesterProcess().catch((error: unknown) => {
    // a known failure (a bad setting, an unreachable server) is one line; anything else is a bug, printed whole
    const exitCode = exitCodeOf(error)
    console.error(exitCode === undefined ? error : `Error: ${(error as Error).message}`)
    process.exit(exitCode ?? 1)
  })
}
