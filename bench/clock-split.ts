/**
 * Where a `forge run`'s clock went, read from its workflow histories (issue 15): the ramp until the
 * first attempt activity started, the attempts until the last one completed, and the tail until the run
 * workflow completed — of which the completeness check (it waits for the ingester's last inserts). On
 * two cores the attempts are where both are busy; the ramp and the tail are mostly round trips and
 * the ingester's last inserts, so they are what keeps a short run from its CPU bound.
 */
import { runWorkflowId } from '../app/run-temporal.js'
import type { ForgeConfig } from '../config/index.js'
import { readStackState } from '../stack/local-stack.js'
import { temporalConnectOptions } from '../stack/temporal-connection.js'

/** A timestamp as the history carries it: seconds (a number or a Long) and nanos. */
interface Timestamp {
  seconds?: number | { toString(): string } | null
  nanos?: number | null
}

/** What is read here of a history event (a structural subset of the SDK's IHistoryEvent). */
export interface HistoryEvent {
  eventId?: number | { toString(): string } | null
  eventTime?: Timestamp | null
  eventType?: number | null
  activityTaskScheduledEventAttributes?: { activityType?: { name?: string | null } | null } | null
  activityTaskStartedEventAttributes?: { scheduledEventId?: number | { toString(): string } | null } | null
  activityTaskCompletedEventAttributes?: { scheduledEventId?: number | { toString(): string } | null } | null
  childWorkflowExecutionStartedEventAttributes?: { workflowExecution?: { workflowId?: string | null } | null } | null
}

const msOf = (ts: Timestamp | null | undefined): number => {
  const seconds = ts?.seconds
  return (typeof seconds === 'number' ? seconds : Number(String(seconds ?? 0))) * 1000 + (ts?.nanos ?? 0) / 1e6
}

/** The activities that run attempts (workflows/run.ts, workflows/sequential.ts, workflows/reconcile.ts). */
const ATTEMPT_ACTIVITIES = new Set(['runAttempt', 'runAttempts'])
const CHECK_ACTIVITY = 'checkCompleteness'

export interface ClockSplit {
  /** the run workflow's start to its completion */
  total_ms: number
  /** the run workflow's start until the first attempt activity started */
  ramp_ms: number
  /** the first attempt activity started until the last one completed (re-runs of the completeness check not counted) */
  attempts_ms: number
  /** the last attempt activity completed until the run workflow completed */
  tail_ms: number
  /** of the tail: the completeness check activities, started to completed, summed */
  check_ms: number
}

/** The event types read here, by their numbers in Temporal's EventType enum (the wire's, stable). */
const EVENT = {
  started: 1, // EVENT_TYPE_WORKFLOW_EXECUTION_STARTED
  completed: 2, // EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
  activityScheduled: 10, // EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
  activityStarted: 11, // EVENT_TYPE_ACTIVITY_TASK_STARTED
  activityCompleted: 12, // EVENT_TYPE_ACTIVITY_TASK_COMPLETED
  childStarted: 31, // EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED
}

/** Activity events of one history with their activity type, by what happened to them. */
function activityTimes(events: readonly HistoryEvent[], types: ReadonlySet<string>): { started: number[]; completed: number[]; spans: number[] } {
  const typeOf = new Map<string, string>()
  const startedAt = new Map<string, number>()
  const out = { started: [] as number[], completed: [] as number[], spans: [] as number[] }
  for (const e of events) {
    if (e.eventType === EVENT.activityScheduled) typeOf.set(String(e.eventId), e.activityTaskScheduledEventAttributes?.activityType?.name ?? '')
    if (e.eventType === EVENT.activityStarted) {
      const scheduled = String(e.activityTaskStartedEventAttributes?.scheduledEventId)
      if (!types.has(typeOf.get(scheduled) ?? '')) continue
      startedAt.set(scheduled, msOf(e.eventTime))
      out.started.push(msOf(e.eventTime))
    }
    if (e.eventType === EVENT.activityCompleted) {
      const scheduled = String(e.activityTaskCompletedEventAttributes?.scheduledEventId)
      if (!types.has(typeOf.get(scheduled) ?? '')) continue
      const at = msOf(e.eventTime)
      out.completed.push(at)
      const began = startedAt.get(scheduled)
      if (began !== undefined) out.spans.push(at - began)
    }
  }
  return out
}

/** The workflow ids of the children a run's history started (its shards or sequential tasks; none for a run of one shard). */
export function childWorkflowIds(run: readonly HistoryEvent[]): string[] {
  return run.filter((e) => e.eventType === EVENT.childStarted).map((e) => e.childWorkflowExecutionStartedEventAttributes?.workflowExecution?.workflowId ?? '').filter((id) => id !== '')
}

/**
 * The split of a completed run from its history and its shard children's (a run of one shard has
 * none: its attempt activities are in its own history, before its completeness check, whose re-runs
 * belong to the tail); undefined when the run has not completed or ran no attempt activity.
 */
export function clockSplit(run: readonly HistoryEvent[], children: readonly (readonly HistoryEvent[])[]): ClockSplit | undefined {
  const start = run.find((e) => e.eventType === EVENT.started)
  const end = run.find((e) => e.eventType === EVENT.completed)
  if (start === undefined || end === undefined) return undefined
  const check = run.findIndex((e) => e.eventType === EVENT.activityScheduled && e.activityTaskScheduledEventAttributes?.activityType?.name === CHECK_ACTIVITY)
  const attempts = [run.slice(0, check === -1 ? run.length : check), ...children].map((events) => activityTimes(events, ATTEMPT_ACTIVITIES))
  const started = attempts.flatMap((a) => a.started)
  const completed = attempts.flatMap((a) => a.completed)
  if (started.length === 0 || completed.length === 0) return undefined
  const [t0, t1] = [msOf(start.eventTime), msOf(end.eventTime)]
  const first = Math.min(...started)
  const last = Math.max(...completed)
  const checked = activityTimes(run, new Set([CHECK_ACTIVITY])).spans.reduce((sum, ms) => sum + ms, 0)
  return { total_ms: t1 - t0, ramp_ms: first - t0, attempts_ms: last - first, tail_ms: t1 - last, check_ms: checked }
}

/** The split as the bench prints it. */
export function describeClockSplit(split: ClockSplit): string {
  const ms = (n: number) => `${Math.round(n)} ms`
  return `clock from the workflow histories: ${ms(split.total_ms)} = ramp ${ms(split.ramp_ms)} + attempts ${ms(split.attempts_ms)} + tail ${ms(split.tail_ms)} (of it the completeness check ${ms(split.check_ms)})`
}

/** Reads the run's history and its children's from the stack's Temporal and splits its clock; undefined when they do not say. */
export async function fetchClockSplit(config: ForgeConfig, runId: string): Promise<ClockSplit | undefined> {
  const address = readStackState(config.home).temporal?.address ?? config.temporal.address
  if (address === undefined) return undefined
  const { Client, Connection } = await import('@temporalio/client')
  const connection = await Connection.connect(temporalConnectOptions(address))
  try {
    const client = new Client({ connection, namespace: config.temporal.namespace })
    const eventsOf = async (workflowId: string): Promise<HistoryEvent[]> => (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? []
    const run = await eventsOf(runWorkflowId(runId))
    const children = await Promise.all(childWorkflowIds(run).map(eventsOf))
    return clockSplit(run, children)
  } finally {
    await connection.close()
  }
}
