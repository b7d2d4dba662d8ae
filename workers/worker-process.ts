/**
 * Entry point of a worker child process; configured through FORGE_* variables (config/). The
 * composition root of the process: the only file of workers/ that reaches into app/ and stack/.
 */
import { lazySweepActivities } from '../app/sweep-activities-lazy.js'
import { liveOtlpOf } from '../app/otlp.js'
import { resolveConfig } from '../config/index.js'
import { ConfigError } from '../core/errors.js'
import { temporalConnectOptions } from '../stack/temporal-connection.js'
import { runWorker } from './worker-main.js'

/** A forked worker's settings are its environment: at once, or (forked early, `--await-settings`) over IPC once its run is planned. */
function start(): void {
  if (!process.argv.includes('--await-settings')) return main()
  // its forge run went away before it needed this worker
  const orphaned = (): never => process.exit(0)
  process.once('disconnect', orphaned)
  process.once('message', (message: { forgeWorkerSettings?: Record<string, string> } | null) => {
    const settings = message?.forgeWorkerSettings
    if (settings === undefined) process.exit(2)
    process.off('disconnect', orphaned)
    for (const name of Object.keys(process.env)) if (!(name in settings)) delete process.env[name]
    Object.assign(process.env, settings)
    main()
  })
  // forge run may have gone while this process loaded its code (the event came before the listener)
  if (!process.connected) orphaned()
  // forge run sends the settings only once this is heard: a message sent before the listener would be lost
  process.send?.({ awaitingSettings: true })
  console.error(`worker ${process.pid} forked early: loaded, waiting for its run's settings`)
}

function main(): void {
  try {
    const config = resolveConfig()
    const { address } = config.temporal
    if (address === undefined || config.natsUrl === undefined) {
      throw new ConfigError(`${address === undefined ? 'FORGE_TEMPORAL_ADDRESS' : 'FORGE_NATS_URL'} is not set: a worker process needs the Temporal and NATS servers of its run`)
    }
    const { address: _address, ...temporalConnection } = temporalConnectOptions(address)
    const role = config.worker.role
    runWorker({
      temporalAddress: address,
      natsUrl: config.natsUrl,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
      ...(config.worker.id !== undefined ? { workerId: config.worker.id } : {}),
      ...(config.clickhouseUrl !== undefined ? { clickhouseUrl: config.clickhouseUrl } : {}),
      concurrency: config.worker.concurrency,
      exitWithParent: config.worker.exitWithParent,
      ...(config.worker.runId !== undefined ? { runId: config.worker.runId } : {}),
      logLevel: config.logLevel,
      attempts: role !== 'judge',
      extraActivities: lazySweepActivities(),
      temporalConnection,
      ...(config.healthPort !== undefined ? { healthPort: config.healthPort } : {}),
      ...(config.otlpUrl !== undefined ? { otlp: liveOtlpOf(config.otlpUrl)! } : {}),
      shutdownGraceMs: config.worker.shutdownGraceMs,
      // judge activities: their own queue, FORGE_JUDGE_RATE activities per second across it
      judge:
        config.judge.worker && role !== 'attempts' ? { taskQueue: config.judge.taskQueue, activitiesPerSecond: config.judge.rate, concurrency: config.judge.concurrency } : false,
    }).catch((error: unknown) => {
      console.error(error)
      process.exit(1)
    })
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error
    console.error(error.message)
    process.exit(error.exitCode)
  }
}

start()
