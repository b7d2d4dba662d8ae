/**
 * End to end on the real embedded stack: Temporal dev server → workers → NATS JetStream →
 * ingester → chDB, statistics read back from ClickHouse.
 */
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client'
import { fork } from 'node:child_process'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runSuite, type RunEvent } from '../../app/run.js'
import { fetchClockSplit } from '../../bench/clock-split.js'
import { openReader } from '../../app/store-access.js'
import { distEntry } from '../../stack/paths.js'
import { subjects } from '../../store/bus.js'
import { startTestStack, type TestStack } from '../helpers/stack.js'
import { patientSmoke } from '../helpers/suites.js'

let stack: TestStack

beforeAll(async () => {
  stack = await startTestStack('run')
})
afterAll(async () => {
  await stack?.down()
})

/** A pending activity's state as Temporal names it, without its enum prefix (1: SCHEDULED, 2: STARTED, …). */
function activityState(state: number | null | undefined): string {
  return ['UNSPECIFIED', 'SCHEDULED', 'STARTED', 'CANCEL_REQUESTED', 'PAUSED', 'PAUSE_REQUESTED'][state ?? 0] ?? String(state)
}

async function sql<T>(query: string, params: Record<string, unknown> = {}): Promise<T[]> {
  const reader = await openReader(stack.config)
  try {
    return await reader.query<T>(query, params)
  } finally {
    await reader.close()
  }
}

describe('forge run on the embedded stack', () => {
  it('runs smoke × 5 attempts into exactly 25 attempt rows with statistics from ClickHouse', async () => {
    const events: RunEvent[] = []
    const report = await runSuite(stack.config, { suite: 'smoke', adapter: 'mock', attempts: 5, workers: 2, concurrency: 20, seed: 's1' }, (e) => events.push(e))

    const [row] = await sql<{ n: string; uids: string; raw: string }>(
      'SELECT count() AS n, uniqExact(attempt_uid) AS uids, (SELECT count() FROM attempts WHERE run_id = {run:String}) AS raw FROM attempts FINAL WHERE run_id = {run:String}',
      { run: report.run_id },
    )
    expect({ n: Number(row!.n), uids: Number(row!.uids) }).toEqual({ n: 25, uids: 25 })
    expect(report.attempts).toBe(25)
    expect(report.tasks).toHaveLength(5)
    for (const t of report.tasks) {
      expect(t.n).toBe(5)
      expect(t.low).toBeLessThanOrEqual(t.rate!)
      expect(t.high).toBeGreaterThanOrEqual(t.rate!)
    }
    const meanOfTasks = report.tasks.reduce((a, t) => a + t.rate!, 0) / report.tasks.length
    expect(report.suite_rate).toBeCloseTo(meanOfTasks, 10)
    expect(Object.values(report.outcomes).reduce((a, b) => a + b, 0)).toBe(25)
    // one progress line per task
    expect(events.filter((e) => e.kind === 'task-done').map((e) => (e as { task_id: string }).task_id).sort()).toEqual(
      report.tasks.map((t) => t.task_id).sort(),
    )
    // the run row went through NATS too, and ended completed
    expect(report.run?.status).toBe('completed')
    const calls = await sql<{ n: string }>('SELECT count() AS n FROM tool_calls FINAL WHERE run_id = {run:String}', { run: report.run_id })
    expect(Number(calls[0]!.n)).toBeGreaterThan(0)
  })

  it("splits a run's clock from its real workflow histories: ramp, attempts and tail add up to the run, the check inside the tail (the bench's clock split)", async () => {
    const report = await runSuite(stack.config, { suite: 'smoke', adapter: 'mock', attempts: 2, workers: 1, concurrency: 10, seed: 'clock' })
    const split = await fetchClockSplit(stack.config, report.run_id)
    expect(split).toBeDefined()
    const { total_ms, ramp_ms, attempts_ms, tail_ms, check_ms } = split!
    for (const part of [ramp_ms, attempts_ms, tail_ms]) expect(part).toBeGreaterThan(0)
    expect(ramp_ms + attempts_ms + tail_ms).toBeCloseTo(total_ms, 6)
    expect(check_ms).toBeGreaterThan(0)
    expect(check_ms).toBeLessThan(tail_ms)
    // the run's own clock starts before its workflow and ends after it: the workflow's is shorter
    expect(total_ms).toBeLessThanOrEqual(report.wall_ms)
  })

  it('gives identical outcomes for the same seed twice', async () => {
    const opts = { suite: 'toy_math', adapter: 'mock', attempts: 8, workers: 1, concurrency: 10, seed: 'same-seed' }
    const a = await runSuite(stack.config, opts)
    const b = await runSuite(stack.config, opts)
    const outcomes = (runId: string) =>
      sql<{ task_id: string; attempt: number; outcome: string; failure_bucket: string; output: string }>(
        'SELECT task_id, attempt, outcome, failure_bucket, output FROM attempts FINAL WHERE run_id = {run:String} ORDER BY task_id, attempt',
        { run: runId },
      )
    const [rowsA, rowsB] = await Promise.all([outcomes(a.run_id), outcomes(b.run_id)])
    expect(rowsA).toHaveLength(24)
    expect(rowsB).toEqual(rowsA)
    const c = await runSuite(stack.config, { ...opts, seed: 'other-seed' })
    expect(await outcomes(c.run_id)).not.toEqual(rowsA)
  })

  it('survives a worker killed with SIGKILL mid-run: every attempt stored exactly once', async () => {
    const attempts = 40
    let killed = false
    let replacement: ReturnType<typeof fork> | undefined
    let pids: number[] = []
    const report = await runSuite(
      stack.config,
      {
        suite: 'smoke',
        adapter: 'mock',
        attempts,
        workers: 2,
        concurrency: 10,
        seed: 'kill',
        adapter_config: { delay_ms: 150 },
        heartbeat_timeout_ms: 2_000,
      },
      (event) => {
        if (event.kind === 'workers') pids = event.pids
        if (event.kind === 'task-done' && !killed) {
          killed = true
          process.kill(pids[0]!, 'SIGKILL')
          replacement = fork(distEntry('workers/worker-process.js'), [], {
            stdio: 'ignore',
            env: {
              ...stack.env,
              FORGE_TEMPORAL_ADDRESS: stack.endpoints.temporalAddress,
              FORGE_NATS_URL: stack.endpoints.natsUrl,
              FORGE_WORKER_ID: 'replacement',
              FORGE_EXIT_WITH_PARENT: '1',
            },
          })
        }
      },
    )
    replacement?.kill('SIGTERM')
    expect(killed).toBe(true)
    const [row] = await sql<{ n: string; uids: string }>(
      'SELECT count() AS n, uniqExact(attempt_uid) AS uids FROM attempts FINAL WHERE run_id = {run:String}',
      { run: report.run_id },
    )
    expect({ n: Number(row!.n), uids: Number(row!.uids), not_executed: report.not_executed }).toEqual({ n: 5 * attempts, uids: 5 * attempts, not_executed: 0 })
    const perTask = await sql<{ task_id: string; n: string }>(
      'SELECT task_id, count() AS n FROM attempts FINAL WHERE run_id = {run:String} GROUP BY task_id ORDER BY task_id',
      { run: report.run_id },
    )
    expect(perTask.map((r) => Number(r.n))).toEqual([attempts, attempts, attempts, attempts, attempts])
  })

  it('gives each worker only the batch activities its attempt slots can run: none held back while another worker idles (issue 15)', async () => {
    // 2 workers × 4 slots: batches of 4 lanes; --max-in-flight 12 keeps 3 batch activities of ~14
    // attempts pending. Every attempt waits at the gate, so the activities stay where Temporal put them.
    // A worker that polled while it had a free activity slot took up to 4 of them (16 lanes for its
    // 4 slots): the first worker up took all 3 and the other idled. Now a poll reserves a batch's 4
    // slots: each worker holds exactly one batch and the third waits in Temporal for a free worker.
    const suite = patientSmoke('forge-lanes-suite-')
    const gate = join(suite, 'gate')
    writeFileSync(gate, '')
    const connection = await Connection.connect({ address: stack.endpoints.temporalAddress })
    const run = runSuite(stack.config, {
      suite,
      adapter: 'mock',
      attempts: 8,
      workers: 2,
      concurrency: 4,
      max_in_flight: 12,
      seed: 'lanes',
      run_id: 'lanes-held',
      adapter_config: { hold_file: gate, hold_from: 0 },
    })
    run.catch(() => undefined)
    try {
      // one shard: it runs in the run's own history (forge-inline-single-shard-v1)
      const shard = new Client({ connection }).workflow.getHandle('forge-run-lanes-held')
      let pending: { state: string; worker: string }[] = []
      const settled = (): boolean => pending.length === 3 && pending.filter((p) => p.state === 'STARTED').length === 2
      for (let i = 0; i < 600 && !settled(); i++) {
        await sleep(100)
        try {
          const { raw } = await shard.describe()
          pending = (raw.pendingActivities ?? [])
            .filter((a) => a.activityType?.name === 'runAttempts')
            .map((a) => ({ state: activityState(a.state), worker: a.lastWorkerIdentity ?? '' }))
        } catch (error) {
          if (!(error instanceof WorkflowNotFoundError)) throw error
        }
      }
      const started = pending.filter((p) => p.state === 'STARTED')
      expect(pending.map((p) => p.state).sort()).toEqual(['SCHEDULED', 'STARTED', 'STARTED'])
      expect(new Set(started.map((p) => p.worker))).toEqual(new Set(['lanes-held-w0', 'lanes-held-w1']))
    } finally {
      rmSync(gate, { force: true })
    }
    const report = await run
    await connection.close()
    rmSync(suite, { recursive: true, force: true })
    expect({ status: report.status, expected: report.expected_attempts, not_executed: report.not_executed }).toEqual({ status: 'completed', expected: 40, not_executed: 0 })
    const perWorker = await sql<{ worker_id: string; n: string }>(
      "SELECT worker_id, count() AS n FROM attempts FINAL WHERE run_id = 'lanes-held' GROUP BY worker_id ORDER BY worker_id",
    )
    expect(perWorker.map((r) => r.worker_id)).toEqual(['lanes-held-w0', 'lanes-held-w1'])
  })

  it('cancels the run when its signal aborts (Ctrl-C), recording it as cancelled and keeping what finished', async () => {
    const interrupt = new AbortController()
    // Ctrl-C once the first attempt is done: the other 999 need ≥ 10 s more (50 ms each, 5 at once),
    // so whatever the machine's speed, the run is still going when the cancellation lands
    const attempt = runSuite(
      stack.config,
      { suite: 'smoke', adapter: 'mock', attempts: 200, workers: 1, concurrency: 5, seed: 'cancel', run_id: 'cancel-me', adapter_config: { delay_ms: 50 } },
      () => undefined,
      interrupt.signal,
      (nc, runId) => {
        const sub = nc.subscribe(subjects.progress(runId), { max: 1, callback: () => interrupt.abort() })
        return { stop: () => sub.unsubscribe() }
      },
    )
    await expect(attempt).rejects.toThrow(/run cancel-me was cancelled/)
    let status: string | undefined
    for (let i = 0; i < 100 && status !== 'cancelled'; i++) {
      await sleep(100)
      status = (await sql<{ status: string }>("SELECT status FROM runs FINAL WHERE run_id = 'cancel-me'"))[0]?.status
    }
    expect(status).toBe('cancelled')
    const [row] = await sql<{ n: string }>("SELECT count() AS n FROM attempts FINAL WHERE run_id = 'cancel-me'")
    expect(Number(row!.n)).toBeGreaterThanOrEqual(1)
    expect(Number(row!.n)).toBeLessThan(1000)
  })
})
