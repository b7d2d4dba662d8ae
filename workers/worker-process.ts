/** Entry point of a worker child process; configured through FORGE_* variables. */
import { runWorker } from './worker-main.js'

const env = process.env
const required = (name: string): string => {
  const value = env[name]
  if (!value) {
    console.error(`${name} is not set`)
    process.exit(2)
  }
  return value
}

runWorker({
  temporalAddress: required('FORGE_TEMPORAL_ADDRESS'),
  natsUrl: required('FORGE_NATS_URL'),
  namespace: env['FORGE_TEMPORAL_NAMESPACE'] ?? 'default',
  taskQueue: env['FORGE_TASK_QUEUE'] ?? 'forge-attempts',
  ...(env['FORGE_WORKER_ID'] ? { workerId: env['FORGE_WORKER_ID'] } : {}),
  ...(env['FORGE_CLICKHOUSE_URL'] ? { clickhouseUrl: env['FORGE_CLICKHOUSE_URL'] } : {}),
  concurrency: Number(env['FORGE_WORKER_CONCURRENCY'] ?? 100),
  exitWithParent: env['FORGE_EXIT_WITH_PARENT'] === '1',
  // judge activities: their own queue, FORGE_JUDGE_RATE activities per second across it
  judge:
    env['FORGE_JUDGE_WORKER'] === '0'
      ? false
      : {
          ...(env['FORGE_JUDGE_RATE'] ? { activitiesPerSecond: Number(env['FORGE_JUDGE_RATE']) } : {}),
          ...(env['FORGE_JUDGE_CONCURRENCY'] ? { concurrency: Number(env['FORGE_JUDGE_CONCURRENCY']) } : {}),
        },
}).catch((error: unknown) => {
  console.error(error)
  process.exit(1)
})
