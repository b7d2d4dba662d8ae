import { Flags } from '@oclif/core'
import { lazySweepActivities } from '../../app/sweep-activities-lazy.js'
import { liveOtlpOf } from '../../app/otlp-url.js'
import { resolveConfig } from '../../stack/config.js'
import { ConfigError } from '../../stack/errors.js'
import { stackUp } from '../../stack/local-stack.js'
import { temporalConnectOptions } from '../../stack/temporal-connection.js'
import { runWorker } from '../../workers/worker-main.js'
import { processTaint } from '../../engine/process-taint.js'
import { ForgeCommand } from '../base.js'

export default class Worker extends ForgeCommand {
  static override summary = 'Start a standalone attempt worker that serves runs until stopped (Ctrl-C).'
  static override description =
    'With FORGE_TEMPORAL_ADDRESS and FORGE_NATS_URL set (a fleet, e.g. a Kubernetes pod) it joins those servers and starts nothing else; ' +
    'otherwise it brings up and joins the local stack. Every flag can also come from the FORGE_* variable named in its help. ' +
    'SIGTERM drains: the worker stops polling, lets in-flight attempts finish for --shutdown-grace-ms, then exits. ' +
    'Once agent code has run inside it (a module agent with sandbox: false) it drains the same way and exits 1, so that no later run shares its process; its supervisor starts a clean one.'
  static override examples = [
    '<%= config.bin %> worker',
    {
      description: 'On a fleet (needs a Temporal cluster and a NATS server).',
      command: 'FORGE_TEMPORAL_ADDRESS=temporal:7233 FORGE_NATS_URL=nats://nats:4222 <%= config.bin %> worker --concurrency 200 --health-port 9464',
    },
    {
      description: 'A judge-only worker on a fleet (needs a Temporal cluster and a NATS server).',
      command: 'FORGE_TEMPORAL_ADDRESS=temporal:7233 FORGE_NATS_URL=nats://nats:4222 <%= config.bin %> worker --role judge --judge-rate 5',
    },
  ]
  static override flags = {
    concurrency: Flags.integer({ summary: 'Attempts this worker runs at once (FORGE_WORKER_CONCURRENCY).', default: 50, min: 1, max: 1000, env: 'FORGE_WORKER_CONCURRENCY' }),
    'worker-id': Flags.string({ summary: 'Identity shown in Temporal and stored on each attempt (FORGE_WORKER_ID; default host-pid).', env: 'FORGE_WORKER_ID' }),
    role: Flags.string({
      summary: 'all: attempts and judge queues; attempts: the attempt queue only; judge: the judge queue only (FORGE_WORKER_ROLE).',
      options: ['all', 'attempts', 'judge'],
      default: 'all',
      env: 'FORGE_WORKER_ROLE',
    }),
    'judge-rate': Flags.string({ summary: 'Judge activities per second across the whole judge queue (FORGE_JUDGE_RATE; default unlimited).', env: 'FORGE_JUDGE_RATE' }),
    'judge-concurrency': Flags.integer({ summary: 'Judge activities this worker runs at once (FORGE_JUDGE_CONCURRENCY; default 4).', min: 1, max: 1000, env: 'FORGE_JUDGE_CONCURRENCY' }),
    'health-port': Flags.integer({ summary: 'Serve /healthz, /readyz and /metrics on this port (FORGE_HEALTH_PORT; default off).', min: 0, max: 65535, env: 'FORGE_HEALTH_PORT' }),
    'shutdown-grace-ms': Flags.integer({
      summary: 'After SIGTERM, how long in-flight attempts may finish before they are cancelled and retried elsewhere (FORGE_SHUTDOWN_GRACE_MS; default 5000).',
      min: 0,
      env: 'FORGE_SHUTDOWN_GRACE_MS',
    }),
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(Worker)
    const config = resolveConfig()
    const judgeRate = flags['judge-rate'] === undefined ? undefined : Number(flags['judge-rate'])
    if (judgeRate !== undefined && !(judgeRate > 0)) throw new ConfigError(`--judge-rate must be a positive number, got "${flags['judge-rate']}"`)
    // a fleet pod joins the servers it is given and starts nothing (no ingester, no dev server)
    const fleet = config.temporal.address !== undefined && config.natsUrl !== undefined
    const endpoints = fleet
      ? { temporalAddress: config.temporal.address!, natsUrl: config.natsUrl! }
      : await stackUp(config, (line) => this.log(line))
    const { address: _address, ...temporalConnection } = temporalConnectOptions(endpoints.temporalAddress)
    this.log(`worker (${flags.role}) serving task queue ${config.temporal.taskQueue} (Temporal ${endpoints.temporalAddress}, NATS ${endpoints.natsUrl}); Ctrl-C to stop`)
    await runWorker({
      temporalAddress: endpoints.temporalAddress,
      natsUrl: endpoints.natsUrl,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
      concurrency: flags.concurrency,
      attempts: flags.role !== 'judge',
      extraActivities: lazySweepActivities(),
      temporalConnection,
      ...(flags['worker-id'] ? { workerId: flags['worker-id'] } : {}),
      ...(config.clickhouseUrl !== undefined ? { clickhouseUrl: config.clickhouseUrl } : {}),
      logLevel: config.logLevel,
      // --role attempts never serves the judge queue, all serves it unless FORGE_JUDGE_WORKER is off; flags override the settings
      judge:
        flags.role === 'attempts' || (flags.role === 'all' && !config.judge.worker)
          ? false
          : { taskQueue: config.judge.taskQueue, activitiesPerSecond: judgeRate ?? config.judge.rate, concurrency: flags['judge-concurrency'] ?? config.judge.concurrency },
      ...(flags['health-port'] !== undefined ? { healthPort: flags['health-port'] } : {}),
      ...(config.otlpUrl !== undefined ? { otlp: liveOtlpOf(config.otlpUrl)! } : {}),
      ...(flags['shutdown-grace-ms'] !== undefined ? { shutdownGraceMs: flags['shutdown-grace-ms'] } : {}),
    })
    // it drained because agent code ran inside it: a failure its supervisor answers with a fresh process
    const taint = processTaint()
    if (taint !== undefined) this.error(`this worker stopped: ${taint}, so no later run may share its process; start a fresh one (Kubernetes restarts the pod)`, { exit: 1 })
  }
}
