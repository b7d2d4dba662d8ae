/**
 * `forge run --workers 0` (and `forge runs resume --workers 0`): this process starts no worker; the
 * run's workflow waits in its task queue for `forge worker` processes that run elsewhere (the chart's
 * worker Deployment, another machine). A fleet may scale from zero, so the run keeps waiting — but
 * while no worker polls the queue it says so once (Temporal's DescribeTaskQueue pollers, asked for
 * the workflow and the activity side of the queue), and says so again when one arrives. With
 * Temporal, NATS and ClickHouse all configured it starts nothing else either: the fleet's ingesters
 * store the results (as `forge sweep --workers 0` does).
 */
import type { Client } from '@temporalio/client'
import { setTimeout as sleep } from 'node:timers/promises'
import type { ForgeConfig } from '../config/index.js'
import { ConfigError } from '../core/errors.js'
import { stackUp, type Endpoints } from '../stack/local-stack.js'
import type { RunModels } from './local-model.js'

/** The slice of Temporal's WorkflowService this needs (`Client.workflowService` has it). */
export interface PollerDescriber {
  describeTaskQueue(request: { namespace: string; taskQueue: { name: string }; taskQueueType: number }): Promise<{ pollers?: readonly { identity?: string | null }[] | null }>
}

// temporal.api.enums.v1.TaskQueueType
const WORKFLOW_QUEUE_TYPE = 1
const ACTIVITY_QUEUE_TYPE = 2

/** how long a run waits for a poller before saying none polls: a worker that just started needs a moment */
export const NO_POLLER_GRACE_MS = 5_000

export interface PollerWatchOptions {
  namespace: string
  taskQueue: string
  onNotice(message: string): void
  /** default NO_POLLER_GRACE_MS */
  graceMs?: number
  /** between two questions (default 1 s) */
  intervalMs?: number
  /** time and waiting (tests hand in their own) */
  clock?: { now(): number; sleep(ms: number, signal: AbortSignal): Promise<void> }
}

export function noPollerNotice(taskQueue: string, namespace: string): string {
  return `no worker polls task queue ${taskQueue} on namespace ${namespace} — start \`forge worker\` or use --workers N (still waiting: a fleet may scale from zero)`
}

export function pollerArrivedNotice(taskQueue: string, identities: readonly string[]): string {
  return `worker ${identities.join(', ')} now polls task queue ${taskQueue}; the run goes on`
}

/**
 * The identities polling both sides of the queue (workflow and activity tasks: a run needs both);
 * undefined when Temporal could not be asked (an outage is not "no worker").
 */
export async function taskQueuePollers(service: PollerDescriber, namespace: string, taskQueue: string): Promise<string[] | undefined> {
  try {
    const [workflow, activity] = await Promise.all(
      [WORKFLOW_QUEUE_TYPE, ACTIVITY_QUEUE_TYPE].map((taskQueueType) => service.describeTaskQueue({ namespace, taskQueue: { name: taskQueue }, taskQueueType })),
    )
    const onActivities = new Set((activity?.pollers ?? []).map((p) => p.identity ?? ''))
    return [...new Set((workflow?.pollers ?? []).map((p) => p.identity ?? ''))].filter((identity) => onActivities.has(identity))
  } catch {
    return undefined
  }
}

/** A running poller watch. */
export interface PollerWatch {
  /** ends it at once, without a word */
  stop(): void
  /**
   * The run ended: ends the watch, and when it had said that no worker polls and has not seen one
   * since (one arrived and finished the run between two looks), looks once more and says who polls.
   */
  settle(): Promise<void>
  done: Promise<void>
}

/**
 * Watches the queue from the run's start: a poller seen → done, silently; none for `graceMs` → the
 * notice, once, then it keeps watching and says when a worker arrives.
 */
export function watchTaskQueuePollers(service: PollerDescriber, opts: PollerWatchOptions): PollerWatch {
  const clock = opts.clock ?? { now: Date.now, sleep: (ms: number, signal: AbortSignal) => sleep(ms, undefined, { signal }) }
  const graceMs = opts.graceMs ?? NO_POLLER_GRACE_MS
  const intervalMs = opts.intervalMs ?? 1_000
  const abort = new AbortController()
  const started = clock.now()
  let said = false
  let arrived = false
  const done = (async () => {
    while (!abort.signal.aborted) {
      const pollers = await taskQueuePollers(service, opts.namespace, opts.taskQueue)
      if (abort.signal.aborted) return
      if (pollers !== undefined && pollers.length > 0) {
        if (said) opts.onNotice(pollerArrivedNotice(opts.taskQueue, pollers))
        arrived = true
        return
      }
      if (!said && pollers !== undefined && clock.now() - started >= graceMs) {
        opts.onNotice(noPollerNotice(opts.taskQueue, opts.namespace))
        said = true
      }
      await clock.sleep(intervalMs, abort.signal).catch(() => undefined)
    }
  })()
  return {
    stop: () => abort.abort(),
    async settle() {
      abort.abort()
      await done
      if (!said || arrived) return
      const pollers = await taskQueuePollers(service, opts.namespace, opts.taskQueue)
      if (pollers !== undefined && pollers.length > 0) {
        arrived = true
        opts.onNotice(pollerArrivedNotice(opts.taskQueue, pollers))
      }
    },
    done,
  }
}

/**
 * Where a run's servers are, and whether they are this machine's stack. `--workers 0` against a
 * fleet (Temporal, NATS and ClickHouse configured) starts nothing here; every other run brings up
 * what is not running (with an external Temporal and NATS, the local ingester stores into chDB).
 */
export async function runEndpoints(config: ForgeConfig, workers: number, log: (line: string) => void): Promise<Endpoints & { local: boolean }> {
  const { temporal, natsUrl, clickhouseUrl } = config
  if (workers === 0 && temporal.address !== undefined && natsUrl !== undefined && clickhouseUrl !== undefined) {
    return { temporalAddress: temporal.address, natsUrl, ingesterRunning: false, local: false }
  }
  return { ...(await stackUp(config, log)), local: true }
}

/** A model server this run starts on this machine serves only workers this run starts. */
export function refuseLocalModelWithoutWorkers(workers: number, local: RunModels['local']): void {
  if (workers !== 0 || local === undefined || local === 'external') return
  throw new ConfigError(
    '--workers 0 cannot use --model local: the fleet\'s workers cannot reach the model server this run would start here; ' +
      'start workers here (--workers 1 or more) or give every worker FORGE_LOCAL_MODEL_URL and set it here too',
  )
}

/** The poller watch of a run whose workers run elsewhere, its notices as run events. */
export function watchFleetWorkers(client: Client, config: ForgeConfig, onEvent: (event: { kind: 'notice'; message: string }) => void): PollerWatch {
  return watchTaskQueuePollers(client.workflowService, {
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    onNotice: (message) => onEvent({ kind: 'notice', message }),
  })
}
