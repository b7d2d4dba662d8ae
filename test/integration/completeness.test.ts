/**
 * Issue 12 on the real embedded stack, through the CLI as a user runs it: a run's completeness is
 * checked at its end and stamped on its record (a sequential run's against the attempts it scheduled); bad configurations stop before the first attempt;
 * harness errors past 2% make the run `degraded` (exit 7) with a banner on the first line.
 */
import { Client, Connection } from '@temporalio/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RunStats } from '../../app/stats.js'
import { MockActivityEnvironment } from '@temporalio/testing'
import type { RunPlan } from '../../core/contracts/index.js'
import { createLogger } from '../../engine/logger.js'
import { jetstream } from '@nats-io/jetstream'
import { connectBus, waitForIngestedBacklog } from '../../store/bus.js'
import { busReader } from '../../store/bus-reader.js'
import { createReconcileActivities } from '../../workers/reconcile.js'
import { forge, startTestStack, type TestStack } from '../helpers/stack.js'
import { makeSuite, removeTempSuites } from '../suites/temp-suite.js'

let stack: TestStack

beforeAll(async () => {
  stack = await startTestStack('completeness')
})
afterAll(async () => {
  await stack?.down()
  removeTempSuites()
})

const sql = <T>(query: string): T[] => {
  const r = forge(['sql', query, '--json'], stack.env)
  expect(r.stderr).toBe('')
  return JSON.parse(r.stdout) as T[]
}

/** the first line of the statistics `forge run` / `forge stats` print */
const statsHead = (stdout: string): string[] => {
  const lines = stdout.split('\n')
  const at = lines.findIndex((line) => /^(run r|run [\w-]+ {2}suite|PARTIAL|INCOMPLETE|DEGRADED)/.test(line) && !line.includes(' tasks × '))
  return lines.slice(at, at + 2)
}

describe('a run ends checked against its plan', () => {
  it('records completed with planned = stored and nothing missing, and prints no notice', () => {
    const r = forge(['run', '--suite', 'smoke', '--attempts', '3', '--seed', 'done', '--run-id', 'whole', '--json'], stack.env)
    expect(r.status).toBe(0)
    const report = JSON.parse(r.stdout) as Record<string, unknown>
    expect({ status: report['status'], completeness: report['completeness'], notice: report['notice'] }).toEqual({
      status: 'completed',
      completeness: { planned: 15, stored: 15, missing_count: 0, missing: [], doubled: 0, harness_errors: 0, rerun: 0 },
      notice: null,
    })
    const [run] = sql<Record<string, unknown>>("SELECT status, planned_attempts, final_stored, missing_count, missing_sample, harness_errors FROM runs FINAL WHERE run_id = 'whole'")
    expect(run).toEqual({ status: 'completed', planned_attempts: 15, final_stored: 15, missing_count: 0, missing_sample: [], harness_errors: 0 })
  })

  it('the check that ends the run records that final status itself: its workflow schedules no activity after it', async () => {
    const r = forge(['run', '--suite', 'smoke', '--attempts', '2', '--seed', 'done', '--run-id', 'whole-2', '--json'], stack.env)
    expect(r.status).toBe(0)
    const connection = await Connection.connect({ address: stack.endpoints.temporalAddress })
    let scheduled: (string | null | undefined)[]
    try {
      const client = new Client({ connection, namespace: stack.config.temporal.namespace })
      const history = await client.workflow.getHandle('forge-run-whole-2').fetchHistory()
      // EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
      scheduled = (history.events ?? []).filter((e) => e.eventType === 10).map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name)
    } finally {
      await connection.close()
    }
    expect(scheduled.at(-1)).toBe('checkCompleteness')
    expect(scheduled.filter((name) => name === 'recordRunStatus')).toEqual(['recordRunStatus'])
    // the record the check published, with its counts
    const [run] = sql<Record<string, unknown>>("SELECT status, planned_attempts, final_stored, missing_count, finished_at IS NOT NULL AS finished FROM runs FINAL WHERE run_id = 'whole-2'")
    expect(run).toEqual({ status: 'completed', planned_attempts: 10, final_stored: 10, missing_count: 0, finished: 1 })
  })
})

describe('a completeness check killed after it published the final record, before it reported', () => {
  it('is retried: the retry publishes the same record under the same msg id, and the store keeps the first alone', async () => {
    const r = forge(['run', '--suite', 'smoke', '--attempts', '2', '--seed', 'done', '--run-id', 'checked-twice', '--json'], stack.env)
    expect(r.status).toBe(0)
    // the check's final record, as stored (the ingester sealed it as it came in: forge run's report found nothing to add)
    const rawFinal = () => sql<{ n: number; updated: string }>("SELECT count() AS n, toString(max(updated_at)) AS updated FROM runs WHERE run_id = 'checked-twice' AND status = 'completed'")[0]!
    const before = rawFinal()
    expect(before.n).toBe(1)
    // the run's plan, granted, as its workflow hands it to the check
    const connection = await Connection.connect({ address: stack.endpoints.temporalAddress })
    let plan: RunPlan
    try {
      const client = new Client({ connection, namespace: stack.config.temporal.namespace })
      const { events } = await client.workflow.getHandle('forge-run-checked-twice').fetchHistory()
      const [payload] = events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads!
      plan = (JSON.parse(Buffer.from(payload!.data!).toString('utf8')) as { plan: RunPlan }).plan
    } finally {
      await connection.close()
    }
    // a worker's check, as the retries of one whose worker died after its publish went through run it
    const nc = await connectBus(stack.endpoints.natsUrl, 'checked-twice', 'worker')
    try {
      const reader = busReader(nc)
      const { checkCompleteness } = createReconcileActivities({ nc, js: jetstream(nc), reader, logger: createLogger('checked-twice', 'silent') })
      const input = { run_id: 'checked-twice', task_ids: plan.task_ids, attempts: plan.attempts, final_record: { plan, rerun: 0, last_round: true } }
      for (const attempt of [2, 3]) {
        const answer = await new MockActivityEnvironment({ attempt }).run(checkCompleteness, input)
        expect(answer).toMatchObject({ planned: 10, stored: 10, missing_count: 0, recorded: 'completed' })
      }
      expect((await waitForIngestedBacklog(nc, { timeoutMs: 30_000 })).caughtUp).toBe(true)
    } finally {
      await nc.drain()
    }
    // not one row more, not even before a merge: the bus dropped both as duplicates of the first
    expect(rawFinal()).toEqual(before)
    expect(sql<Record<string, unknown>>("SELECT status, final_stored, missing_count FROM runs FINAL WHERE run_id = 'checked-twice'")).toEqual([{ status: 'completed', final_stored: 10, missing_count: 0 }])
  })
})

describe('a sequential run ends checked against the attempts it scheduled', () => {
  it('records completed with planned = scheduled (tasks that stopped early planned only 0 … n − 1), and forge stats agrees', () => {
    const r = forge(['run', '--suite', 'smoke', '--attempts', '40', '--stop-at-width', '0.45', '--round-size', '5', '--min-attempts', '5', '--seed', 'seq', '--run-id', 'seq-whole', '--json'], stack.env)
    expect(r.status).toBe(0)
    const report = JSON.parse(r.stdout) as RunStats & { status: string; completeness: Record<string, unknown> & { planned: number } }
    const stopped = report.run!.stopped_tasks
    // the figures below mean something only if some task stopped early
    expect(stopped.length).toBeGreaterThan(0)
    // what the workflow scheduled, read back attempt by attempt: per task exactly attempts 0 … n − 1
    const perTask = sql<{ task_id: string; n: number; top: number }>("SELECT task_id, count() AS n, max(attempt) AS top FROM attempts FINAL WHERE run_id = 'seq-whole' GROUP BY task_id ORDER BY task_id")
    expect(perTask.every((t) => t.top === t.n - 1 && (t.n < 40) === stopped.includes(t.task_id))).toBe(true)
    const scheduled = perTask.reduce((sum, t) => sum + t.n, 0)
    expect(scheduled).toBeLessThan(5 * 40)
    expect({ status: report.status, completeness: report.completeness, notice: report.notice }).toEqual({
      status: 'completed',
      completeness: { planned: scheduled, stored: scheduled, missing_count: 0, missing: [], doubled: 0, harness_errors: 0, rerun: 0 },
      notice: null,
    })
    const [run] = sql<Record<string, unknown>>("SELECT status, planned_attempts, final_stored, missing_count, missing_sample FROM runs FINAL WHERE run_id = 'seq-whole'")
    expect(run).toEqual({ status: 'completed', planned_attempts: scheduled, final_stored: scheduled, missing_count: 0, missing_sample: [] })

    const stats = forge(['stats', '--run-id', 'seq-whole', '--json'], stack.env)
    expect(stats.status).toBe(0)
    const parsed = JSON.parse(stats.stdout) as RunStats
    expect({ notice: parsed.notice, attempts: parsed.attempts, status: parsed.run?.status, planned: parsed.run?.planned_attempts }).toEqual({ notice: null, attempts: scheduled, status: 'completed', planned: scheduled })
    expect(parsed.tasks.map((t) => [t.task_id, t.n, t.stopped_early])).toEqual(perTask.map((t) => [t.task_id, t.n, stopped.includes(t.task_id)]))
    const text = forge(['stats', '--run-id', 'seq-whole'], stack.env)
    expect(statsHead(text.stdout)[0]).toMatch(/^run seq-whole {2}suite smoke {2}adapter mock {2}status completed/)
  })
})

describe('bad configurations stop before the first attempt', () => {
  it('refuses a task whose instruction cannot fit one message of the bus (exit 2, naming suite, task, field and sizes); nothing runs', () => {
    const suite = makeSuite({ 'tasks/beta.yaml': `id: beta\ninstruction: "${'x'.repeat(10 * 1024 * 1024)}"\ninput: { message: hey }\ntools: [shout]\ngraders:\n  - type: contains\n    expected: HEY\n` })
    const r = forge(['run', '--suite', suite, '--attempts', '2', '--run-id', 'too-big'], stack.env)
    expect(r.status).toBe(2)
    expect(r.stderr.trim()).toBe(
      `Error: suite tmp_suite (${suite}): task beta: instruction is 10.0 MiB, over the 7.9 MiB one message of the bus can carry (max_payload 8.0 MiB less headroom); keep large content in a fixture file and name it in the task`,
    )
    expect(sql("SELECT run_id FROM runs FINAL WHERE run_id = 'too-big'")).toEqual([])
  })

  it('runs a task with a long instruction, every result carrying it truncated with a marker, and says so', () => {
    const suite = makeSuite({ 'tasks/beta.yaml': `id: beta\ninstruction: "${'y'.repeat(100 * 1024)}"\ninput: { message: hey }\ntools: [shout]\ngraders:\n  - type: contains\n    expected: HEY\n` })
    const r = forge(['run', '--suite', suite, '--task', 'beta', '--attempts', '2', '--run-id', 'long-instruction', '--adapter-config', '{"skill":1}'], stack.env)
    expect(r.status).toBe(0)
    expect(r.stdout).toContain('  note: task beta: its 100.0 KiB instruction is stored with each result truncated to 64.0 KiB (marked); the verbatim text stays in the suite\n')
    expect(sql("SELECT count() AS n, max(length(instruction)) <= 65536 AS fits, min(endsWith(instruction, '…[truncated 102400 bytes]')) AS marked FROM attempts FINAL WHERE run_id = 'long-instruction'")).toEqual([
      { n: 2, fits: 1, marked: 1 },
    ])
  })

  it('refuses an adapter config of the wrong shape before anything starts (exit 2, naming the field)', () => {
    const r = forge(['run', '--suite', 'smoke', '--adapter-config', '{"skill":"high"}', '--run-id', 'bad-config'], stack.env)
    expect(r.status).toBe(2)
    expect(r.stderr.trim()).toBe('Error: invalid --adapter-config for adapter "mock": skill: Invalid input: expected number, received string')
  })
})

describe('harness errors past 2%', () => {
  it('mark the run degraded: a banner first, exit code 7, and forge stats opens with the same banner', () => {
    // a suite whose invariant throws: every attempt is a harness error
    const suite = makeSuite({ 'invariants.mjs': "export const invariants = { always_ok: () => { throw new Error('bug in the suite') } }\n" })
    const r = forge(['run', '--suite', suite, '--task', 'alpha', '--attempts', '3', '--run-id', 'degraded-run'], stack.env)
    expect(r.status).toBe(7)
    const banner = 'DEGRADED: harness errors in 3 of 3 attempts (100.0%, over the 2% limit): this run is not a valid measurement'
    expect(statsHead(r.stdout)).toEqual([banner, 'run degraded-run  suite tmp_suite  adapter mock  status degraded'])
    expect(r.stderr).toContain(`Error: run degraded-run is degraded: harness errors in 3 of 3 attempts (100.0%, over the 2% limit): this run is not a valid measurement`)
    const stats = forge(['stats', '--run-id', 'degraded-run'], stack.env)
    expect(stats.status).toBe(0)
    expect(stats.stdout.split('\n')[0]).toBe(banner)
  })
})
