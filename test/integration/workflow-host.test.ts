/**
 * `forge run` serves its run's workflow tasks itself while its worker processes boot
 * (app/workflow-host.ts), on the real Temporal dev server of a test stack.
 */
import { Client, Connection } from '@temporalio/client'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { planRun } from '../../app/plan-run.js'
import type { RunPlan } from '../../core/contracts/index.js'
import { hostWorkflows } from '../../app/workflow-host.js'
import { forge, startTestStack, type TestStack } from '../helpers/stack.js'

/** the history event types this test reads (temporal.api.enums.v1.EventType) */
const EventType = {
  EVENT_TYPE_WORKFLOW_TASK_STARTED: 6,
  EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: 10,
  EVENT_TYPE_ACTIVITY_TASK_STARTED: 11,
  EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED: 29,
} as const

let stack: TestStack
let connection: Connection
let client: Client

beforeAll(async () => {
  stack = await startTestStack('workflow-host')
  connection = await Connection.connect({ address: stack.endpoints.temporalAddress })
  client = new Client({ connection, namespace: stack.config.temporal.namespace })
})
afterAll(async () => {
  await connection?.close()
  await stack?.down()
})

/** the history's events until `done` holds for them (the test waits on state, with a generous deadline) */
async function historyUntil(workflowId: string, done: (events: Awaited<ReturnType<typeof fetchEvents>>) => boolean): Promise<Awaited<ReturnType<typeof fetchEvents>>> {
  const deadline = Date.now() + 60_000
  for (;;) {
    const events = await fetchEvents(workflowId).catch(() => [])
    if (done(events)) return events
    if (Date.now() > deadline) throw new Error(`${workflowId}: the history never got there (${events.length} events)`)
    await sleep(100)
  }
}

async function fetchEvents(workflowId: string) {
  const history = await client.workflow.getHandle(workflowId).fetchHistory()
  return history.events ?? []
}

/** the activity types a history scheduled, in order */
const scheduledNames = (events: Awaited<ReturnType<typeof fetchEvents>>) =>
  events.filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED).map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name)

/** A workflow host alone on `taskQueue` (no worker process polls it) with RunWorkflow started there for `plan`; `end` terminates both. */
async function runOnHostOnly(taskQueue: string, plan: RunPlan): Promise<{ workflowId: string; end(): Promise<void> }> {
  const host = hostWorkflows({
    temporalAddress: stack.endpoints.temporalAddress,
    namespace: stack.config.temporal.namespace,
    taskQueue,
    identity: 'the-cli',
    logFile: join(stack.home, 'logs', `${taskQueue}.log`),
  })
  await host.ready
  const workflowId = `forge-run-${plan.run_id}`
  const handle = await client.workflow.start('RunWorkflow', { taskQueue, workflowId, args: [{ plan }] }).catch(async (error: unknown) => {
    await host.stop()
    throw error
  })
  return {
    workflowId,
    async end() {
      await handle.terminate('test over').catch(() => undefined)
      await host.stop()
    },
  }
}

describe('the workflow host of forge run', () => {
  it('plans a run with no worker process at all: the run and its shard children get to their first attempt activities', async () => {
    const planned = await planRun(stack.config, { suite: 'smoke', adapter: 'mock', attempts: 2, workers: 1, concurrency: 4, seed: 'host' })
    // 10 attempts in shards of 5: two children (a run of one shard runs it in its own history)
    const { workflowId, end } = await runOnHostOnly('host-only', { ...planned.plan, shard_size: 5 })
    try {
      // nothing else polls this queue: every workflow task here is the host's
      const run = await historyUntil(workflowId, (events) => events.some((e) => e.eventType === EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED))
      const identities = run.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED).map((e) => e.workflowTaskStartedEventAttributes?.identity)
      expect(identities.length).toBeGreaterThan(0)
      expect(new Set(identities)).toEqual(new Set(['the-cli']))
      // the 'running' record and the first shard go out together (forge-eager-shards-v1), before any worker exists
      expect(scheduledNames(run)).toEqual(['recordRunStatus'])
      const shard = await historyUntil(`${workflowId}/shard-0`, (events) => events.some((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED))
      const attempts = scheduledNames(shard)
      expect(attempts.length).toBeGreaterThan(0)
      // one attempt per activity or batches of them, as the plan's window allows
      for (const name of attempts) expect(['runAttempt', 'runAttempts']).toContain(name)
      expect(shard.filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED)).toEqual([])
    } finally {
      await end()
    }
  })

  it('plans a run of one shard with no worker process at all: its first attempt activities go out with its running record, in its own history (forge-inline-single-shard-v1)', async () => {
    const { plan } = await planRun(stack.config, { suite: 'smoke', adapter: 'mock', attempts: 2, workers: 1, concurrency: 4, seed: 'host-inline' })
    const { workflowId, end } = await runOnHostOnly('host-only-inline', plan)
    try {
      const run = await historyUntil(workflowId, (events) => scheduledNames(events).some((name) => name !== 'recordRunStatus'))
      const tasks = run.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED)
      expect(new Set(tasks.map((e) => e.workflowTaskStartedEventAttributes?.identity))).toEqual(new Set(['the-cli']))
      // the 'running' record and the first attempt activities go out together, from one workflow task, and no child
      const scheduled = run.filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
      expect(new Set(scheduled.map((e) => String(e.activityTaskScheduledEventAttributes?.workflowTaskCompletedEventId))).size).toBe(1)
      const [record, ...attempts] = scheduledNames(run)
      expect(record).toBe('recordRunStatus')
      expect(attempts.length).toBeGreaterThan(0)
      for (const name of attempts) expect(['runAttempt', 'runAttempts']).toContain(name)
      expect(run.some((e) => e.eventType === EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED)).toBe(false)
      expect(run.filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED)).toEqual([])
    } finally {
      await end()
    }
  })

  it('costs a run nothing when it cannot start: ready rejects, stop returns, the reason is in its log', async () => {
    // a port that refuses connections: bound, then closed
    const server = createServer()
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const port = (server.address() as { port: number }).port
    await new Promise<void>((resolve) => server.close(() => resolve()))
    const dir = mkdtempSync(join(tmpdir(), 'forge-host-'))
    try {
      const logFile = join(dir, 'logs', 'cli-workflows.log')
      const host = hostWorkflows({ temporalAddress: `127.0.0.1:${port}`, namespace: 'default', taskQueue: 'nowhere', identity: 'x', logFile })
      await expect(host.ready).rejects.toThrow()
      await host.stop()
      expect(existsSync(logFile)).toBe(true)
      expect(readFileSync(logFile, 'utf8')).toMatch(/the workflow host did not start/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('keeps the Temporal SDK\'s own log lines out of forge run\'s output', () => {
    const r = forge(['run', '--suite', 'smoke', '--adapter', 'mock', '--attempts', '1', '--seed', 'quiet', '--json'], stack.env)
    expect(r.status).toBe(0)
    expect(JSON.parse(r.stdout).attempts).toBe(5)
    expect(r.stderr).not.toMatch(/Worker state changed|temporalio_sdk_core|\[INFO\]|\[WARN\]/)
  })
})
