/** Entry point of a worker child process; configured through FORGE_* variables. */
import { sweepActivitiesFor } from '../app/sweep-activities.js'
import { temporalConnectOptions } from '../stack/temporal-connection.js'
import { healthPortFrom } from './health.js'
import { runWorker } from './worker-main.js'

// the composition root of the process: the only file of workers/ that reaches into app/ and stack/
const env = process.env
const required = (name: string): string => {
  const value = env[name]
  if (!value) {
    console.error(`${name} is not set`)
    process.exit(2)
  }
  return value
}
const role = env['FORGE_WORKER_ROLE'] ?? 'all'
if (!['all', 'attempts', 'judge'].includes(role)) {
  console.error(`FORGE_WORKER_ROLE must be all, attempts or judge, got "${role}"`)
  process.exit(2)
}

Promise.resolve()
  .then(() => {
    const temporalAddress = required('FORGE_TEMPORAL_ADDRESS')
    const { address: _address, ...temporalConnection } = temporalConnectOptions(temporalAddress, env)
    const healthPort = healthPortFrom(env)
    return runWorker({
      temporalAddress,
      natsUrl: required('FORGE_NATS_URL'),
      namespace: env['FORGE_TEMPORAL_NAMESPACE'] ?? 'default',
      taskQueue: env['FORGE_TASK_QUEUE'] ?? 'forge-attempts',
      ...(env['FORGE_WORKER_ID'] ? { workerId: env['FORGE_WORKER_ID'] } : {}),
      concurrency: Number(env['FORGE_WORKER_CONCURRENCY'] ?? 100),
      exitWithParent: env['FORGE_EXIT_WITH_PARENT'] === '1',
      attempts: role !== 'judge',
      extraActivities: sweepActivitiesFor(env),
      temporalConnection,
      ...(healthPort !== undefined ? { healthPort } : {}),
      ...(env['FORGE_SHUTDOWN_GRACE_MS'] ? { shutdownGraceMs: Number(env['FORGE_SHUTDOWN_GRACE_MS']) } : {}),
      // judge activities: their own queue, FORGE_JUDGE_RATE activities per second across it
      judge:
        env['FORGE_JUDGE_WORKER'] === '0' || role === 'attempts'
          ? false
          : {
              ...(env['FORGE_JUDGE_RATE'] ? { activitiesPerSecond: Number(env['FORGE_JUDGE_RATE']) } : {}),
              ...(env['FORGE_JUDGE_CONCURRENCY'] ? { concurrency: Number(env['FORGE_JUDGE_CONCURRENCY']) } : {}),
            },
    })
  })
  .catch((error: unknown) => {
    console.error(error)
    process.exit(1)
  })
