/**
 * What a worker process counts for its /metrics: attempts finished (by outcome), harness errors,
 * attempts in flight, activity failures and judge activities — taken from an activity interceptor,
 * so the activities themselves stay unaware of it — and the task queue's backlog, asked of Temporal
 * at scrape time (the HPA alternative to KEDA's Temporal scaler reads it).
 */
import type { ActivityInterceptorsFactory } from '@temporalio/worker'
import { labelledSamples, type MetricFamily } from '../core/prometheus.js'

/** The slice of Temporal's WorkflowService the backlog gauge needs (NativeConnection.workflowService has it). */
export interface TaskQueueDescriber {
  describeTaskQueue(request: {
    namespace: string
    taskQueue: { name: string }
    taskQueueType: number
    reportStats: boolean
  }): Promise<{ stats?: { approximateBacklogCount?: unknown; approximateBacklogAge?: { seconds?: unknown; nanos?: number | null } | null } | null }>
}

export interface WorkerTelemetry {
  /** add to `interceptors.activity` of every Temporal worker of the process */
  interceptor: ActivityInterceptorsFactory
  /** draining: readiness turns false and forge_worker_draining 1 */
  draining: boolean
  metrics(): Promise<MetricFamily[]>
  /** the counts behind the metrics (tests, logs) */
  counts(): { attempts: Record<string, number>; harness_errors: number; in_flight: number; activity_failures: Record<string, number>; judged: number }
}

export interface WorkerTelemetryOptions {
  /** the task queues whose backlog to report, with the service to ask; omitted: no backlog gauge */
  backlog?: { service: TaskQueueDescriber; namespace: string; taskQueues: string[]; cacheMs?: number }
  now?: () => number
}

const ACTIVITY_QUEUE_TYPE = 2 // temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY
const WORKFLOW_QUEUE_TYPE = 1

export function createWorkerTelemetry(opts: WorkerTelemetryOptions = {}): WorkerTelemetry {
  const now = opts.now ?? Date.now
  const attempts: Record<string, number> = {}
  const activityFailures: Record<string, number> = {}
  let harnessErrors = 0
  let inFlight = 0
  let judged = 0
  let backlogCache: { at: number; families: MetricFamily[] } | undefined

  const interceptor: ActivityInterceptorsFactory = (ctx) => ({
    inbound: {
      async execute(input, next) {
        const type = ctx.info.activityType
        inFlight++
        try {
          const result = await next(input)
          if (type === 'runAttempt' && isSummary(result)) {
            attempts[result.outcome] = (attempts[result.outcome] ?? 0) + 1
            if (result.failure_bucket === 'harness_error') harnessErrors++
          } else if (type === 'judgeAttempt') {
            judged++
          }
          return result
        } catch (error) {
          activityFailures[type] = (activityFailures[type] ?? 0) + 1
          throw error
        } finally {
          inFlight--
        }
      },
    },
  })

  const telemetry: WorkerTelemetry = {
    interceptor,
    draining: false,
    counts: () => ({ attempts: { ...attempts }, harness_errors: harnessErrors, in_flight: inFlight, activity_failures: { ...activityFailures }, judged }),
    async metrics() {
      return [
        { name: 'forge_attempts_total', help: 'Attempts this worker finished, by outcome (rate() gives attempts/s).', type: 'counter', samples: labelledSamples('outcome', attempts) },
        { name: 'forge_harness_errors_total', help: 'Attempts that ended in the harness_error failure bucket.', type: 'counter', samples: [{ value: harnessErrors }] },
        { name: 'forge_attempts_in_flight', help: 'Activities executing in this process now.', type: 'gauge', samples: [{ value: inFlight }] },
        { name: 'forge_activity_failures_total', help: 'Activity executions that threw (retried by Temporal unless non-retryable), by activity type.', type: 'counter', samples: labelledSamples('activity', activityFailures) },
        { name: 'forge_judge_activities_total', help: 'Judge activities this worker finished.', type: 'counter', samples: [{ value: judged }] },
        { name: 'forge_worker_draining', help: '1 once the worker stopped polling and finishes its in-flight attempts.', type: 'gauge', samples: [{ value: telemetry.draining ? 1 : 0 }] },
        ...(await backlogFamilies()),
      ]
    },
  }

  async function backlogFamilies(): Promise<MetricFamily[]> {
    const backlog = opts.backlog
    if (!backlog) return []
    if (backlogCache && now() - backlogCache.at < (backlog.cacheMs ?? 5_000)) return backlogCache.families
    const count: MetricFamily = { name: 'forge_task_queue_backlog', help: 'Tasks waiting in the Temporal task queue (approximate, from DescribeTaskQueue).', type: 'gauge', samples: [] }
    const age: MetricFamily = { name: 'forge_task_queue_backlog_age_seconds', help: 'Age of the oldest task waiting in the queue.', type: 'gauge', samples: [] }
    for (const taskQueue of backlog.taskQueues) {
      for (const [kind, queueType] of [['activity', ACTIVITY_QUEUE_TYPE], ['workflow', WORKFLOW_QUEUE_TYPE]] as const) {
        try {
          const response = await backlog.service.describeTaskQueue({ namespace: backlog.namespace, taskQueue: { name: taskQueue }, taskQueueType: queueType, reportStats: true })
          const labels = { task_queue: taskQueue, type: kind }
          count.samples.push({ labels, value: Number(response.stats?.approximateBacklogCount ?? 0) })
          const backlogAge = response.stats?.approximateBacklogAge
          age.samples.push({ labels, value: Number(backlogAge?.seconds ?? 0) + (backlogAge?.nanos ?? 0) / 1e9 })
        } catch {
          // an unreachable server shows as a missing sample, never as an empty queue
        }
      }
    }
    const families = [count, age]
    backlogCache = { at: now(), families }
    return families
  }

  return telemetry
}

function isSummary(value: unknown): value is { outcome: string; failure_bucket: string | null } {
  return typeof value === 'object' && value !== null && typeof (value as { outcome?: unknown }).outcome === 'string'
}
