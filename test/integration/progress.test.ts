/** Live progress over a real nats-server: workers send a window's events in one message; every reader takes both shapes (issue 15). */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { followProgress, type RunEvent } from '../../app/run.js'
import { observeRun } from '../../app/progress.js'
import type { ProgressSnapshot } from '../../core/progress.js'
import { DEFAULT_LOG_FILTER } from '../../core/log-records.js'
import { connectBus, createProgressPublisher, encodeJson, progressEventsOf, subjects, type NatsConnection, type ProgressEvent } from '../../store/bus.js'
import { startNats, type NatsCluster } from '../helpers/fleet.js'

let dir: string
let nats: NatsCluster
let nc: NatsConnection

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'forge-progress-'))
  nats = await startNats(dir)
  nc = await connectBus(nats.url, 'progress-test')
})
afterAll(async () => {
  await nc?.drain()
  await nats?.stop()
  rmSync(dir, { recursive: true, force: true })
})

const event = (runId: string, task: string, attempt: number, outcome = 'pass'): ProgressEvent => ({
  attempt_uid: `${runId}/c0/${task}/${attempt}`,
  task_id: task,
  attempt,
  outcome,
  failure_bucket: outcome === 'pass' ? null : 'wrong_answer',
  worker_id: 'w1',
})

/** the messages of a run's progress subject, until `until` says enough */
function collect(runId: string, until: (events: ProgressEvent[]) => boolean): { messages: unknown[]; done: Promise<ProgressEvent[]> } {
  const messages: unknown[] = []
  const events: ProgressEvent[] = []
  let finish!: (e: ProgressEvent[]) => void
  const done = new Promise<ProgressEvent[]>((resolve) => (finish = resolve))
  const sub = nc.subscribe(subjects.progress(runId), {
    callback: (error, msg) => {
      if (error) return
      const body = msg.json()
      messages.push(body)
      events.push(...progressEventsOf(body))
      if (until(events)) {
        sub.unsubscribe()
        finish(events)
      }
    },
  })
  return { messages, done }
}

describe('progress events', () => {
  it('reads one event, a batch of them, and nothing from anything else', () => {
    const one = event('r', 't', 0)
    expect(progressEventsOf(one)).toEqual([one])
    expect(progressEventsOf({ events: [one, event('r', 't', 1)] })).toEqual([one, event('r', 't', 1)])
    expect(progressEventsOf({ events: [one, { nope: 1 }, null, 'x'] })).toEqual([one])
    for (const junk of [null, 'text', 42, [], {}, { events: 'no' }, { attempt_uid: 7 }]) expect(progressEventsOf(junk)).toEqual([])
  })

  it("a worker's publisher sends one message per run for what a window gathered", async () => {
    const publisher = createProgressPublisher(nc, 60_000)
    const a = collect('batch-a', (e) => e.length >= 3)
    const b = collect('batch-b', (e) => e.length >= 2)
    await nc.flush()
    publisher.add('batch-a', event('batch-a', 't', 0))
    publisher.add('batch-b', event('batch-b', 't', 0))
    publisher.add('batch-a', event('batch-a', 't', 1, 'fail'))
    publisher.add('batch-a', event('batch-a', 'u', 0))
    publisher.add('batch-b', event('batch-b', 'u', 0))
    publisher.flush()
    expect((await a.done).map((e) => e.attempt_uid)).toEqual(['batch-a/c0/t/0', 'batch-a/c0/t/1', 'batch-a/c0/u/0'])
    expect((await b.done).map((e) => e.attempt_uid)).toEqual(['batch-b/c0/t/0', 'batch-b/c0/u/0'])
    expect([a.messages.length, b.messages.length]).toEqual([1, 1])
  })

  it('sends a full batch at once and the rest when its window ends', async () => {
    const publisher = createProgressPublisher(nc, 20)
    const full = collect('batch-full', (e) => e.length >= 300)
    await nc.flush()
    for (let i = 0; i < 300; i++) publisher.add('batch-full', event('batch-full', 't', i))
    const events = await full.done
    expect(new Set(events.map((e) => e.attempt)).size).toBe(300)
    // 256 went as soon as they were there, the other 44 with the window's end
    expect(full.messages.map((m) => progressEventsOf(m).length)).toEqual([256, 44])
  })

  it("forge run's task lines and its live progress count a batch's events as the single events older workers send", async () => {
    const runId = 'follow-both'
    const seen: RunEvent[] = []
    const follower = followProgress(nc, runId, ['t', 'u'], 2, (e) => seen.push(e))
    const snapshots: ProgressSnapshot[] = []
    const watcher = observeRun(nc, runId, { planned: 4, filter: DEFAULT_LOG_FILTER, onProgress: (s) => snapshots.push(s), onRecord: () => undefined })
    await nc.flush()
    // an older worker: one event per message; then a batch with a repeat (a retried activity) and the rest
    nc.publish(subjects.progress(runId), encodeJson(event(runId, 't', 0)))
    nc.publish(subjects.progress(runId), encodeJson({ events: [event(runId, 't', 0), event(runId, 't', 1, 'fail'), event(runId, 'u', 0), event(runId, 'u', 1)] }))
    await nc.flush()
    for (let i = 0; i < 100 && (seen.length < 2 || snapshots.at(-1)?.done !== 4); i++) await new Promise((r) => setTimeout(r, 20))
    follower.stop()
    watcher.stop()
    expect(seen).toEqual([
      { kind: 'task-done', task_id: 't', k: 1, n: 2, done_tasks: 1, total_tasks: 2 },
      { kind: 'task-done', task_id: 'u', k: 2, n: 2, done_tasks: 2, total_tasks: 2 },
    ])
    expect(snapshots.at(-1)).toMatchObject({ done: 4, planned: 4 })
  })
})
