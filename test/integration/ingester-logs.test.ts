/**
 * The ingester's log follows the fields of every Forge log record (issue 14): run_id, task_id,
 * attempt, span_id, parent_span_id and category on records about a run, an attempt or a rejected message.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { jetstream } from '@nats-io/jetstream'
import { connectBus, encodeJson, subjects, traceKey, type NatsConnection } from '../../store/bus.js'
import { forge, startTestStack, type TestStack } from '../helpers/stack.js'

let stack: TestStack
let nc: NatsConnection
const savedLevel = process.env['FORGE_LOG_LEVEL']

beforeAll(async () => {
  // the stack's ingester inherits this process's environment: log everything, down to each stored attempt
  process.env['FORGE_LOG_LEVEL'] = 'trace'
  stack = await startTestStack('ingester-logs')
  nc = await connectBus(stack.endpoints.natsUrl, 'ingester-logs-test', 'worker')
})
afterAll(async () => {
  if (savedLevel === undefined) delete process.env['FORGE_LOG_LEVEL']
  else process.env['FORGE_LOG_LEVEL'] = savedLevel
  await nc?.drain()
  await stack?.down()
})

type Record = { [key: string]: unknown; msg: string; category: unknown }

function ingesterRecords(): Record[] {
  return readFileSync(join(stack.home, 'logs', 'ingester.log'), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record)
}

async function rejectedCount(): Promise<number> {
  const pong = await nc.request(subjects.ingesterPing, new Uint8Array(), { timeout: 2000 })
  return pong.json<{ stats: { rejected: number } }>().stats.rejected
}

const SIX = ['run_id', 'task_id', 'attempt', 'span_id', 'parent_span_id', 'category']

describe('ingester logs', () => {
  it('carry run, task, attempt, span and category on records about runs, attempts and rejected messages', async () => {
    const run = forge(['run', '--suite', 'smoke', '--attempts', '2', '--seed', 'logs', '--run-id', 'logged-run'], stack.env)
    expect(run.status, run.stderr).toBe(0)
    const js = jetstream(nc)
    // a forged attempt (well-formed, but not signed by a Forge component) and a trace message that is not JSON
    const forged = { attempt_uid: 'logged-run/c0/forged-task/7', run_id: 'logged-run', task_id: 'forged-task', attempt: 7, outcome: 'pass' }
    await js.publish(subjects.attempt, encodeJson(forged), { msgID: 'forged-1' })
    await js.publish(subjects.trace('other-run/c0/t/3'), new TextEncoder().encode('{not json'), { msgID: 'forged-2' })
    for (let i = 0; i < 100 && (await rejectedCount()) < 2; i++) await sleep(100)
    expect(await rejectedCount()).toBe(2)

    const records = ingesterRecords()
    // every record has a category; none is left to the generic default
    for (const r of records) expect(typeof r.category, JSON.stringify(r)).toBe('string')
    expect(records.filter((r) => r.category === 'scheduler')).toEqual([])

    const rejected = records.filter((r) => r.msg === 'rejected a malformed result message')
    expect(rejected).toHaveLength(2)
    for (const r of rejected) expect(Object.keys(r)).toEqual(expect.arrayContaining([...SIX, 'subject', 'problem']))
    expect(rejected).toContainEqual(
      expect.objectContaining({ run_id: 'logged-run', task_id: 'forged-task', attempt: 7, attempt_uid: forged.attempt_uid, span_id: 'attempt', parent_span_id: null, category: 'ingest', subject: subjects.attempt }),
    )
    expect(rejected).toContainEqual(
      expect.objectContaining({ run_id: 'other-run', task_id: 't', attempt: 3, attempt_uid: 'other-run/c0/t/3', category: 'ingest', subject: `forge.results.trace.${traceKey('other-run/c0/t/3')}` }),
    )

    const batches = records.filter((r) => r.msg === 'batch ingested' && r.run_id === 'logged-run')
    expect(batches.length).toBeGreaterThan(0)
    for (const r of batches) expect(r).toMatchObject({ task_id: '', attempt: null, span_id: null, parent_span_id: null, category: 'store' })
    const storedAttempts = batches.reduce((n, r) => n + Number((r['rows'] as { attempts?: number }).attempts ?? 0), 0)

    const stored = records.filter((r) => r.msg === 'attempt stored' && r.run_id === 'logged-run')
    const stats = JSON.parse(forge(['stats', '--run-id', 'logged-run', '--json'], stack.env).stdout) as { tasks: { task_id: string }[] }
    const planned = stats.tasks.length * 2
    expect(new Set(stored.map((r) => r['attempt_uid'])).size).toBe(planned)
    expect(storedAttempts).toBeGreaterThanOrEqual(planned)
    for (const r of stored) {
      expect(r).toMatchObject({ run_id: 'logged-run', span_id: 'attempt', parent_span_id: null, category: 'store' })
      expect(r['attempt_uid']).toBe(`logged-run/${String(r['attempt_uid']).split('/')[1]}/${String(r['task_id'])}/${String(r['attempt'])}`)
    }
    expect(records.filter((r) => r.msg === 'grading rows ingested' && r.run_id === 'logged-run').length).toBeGreaterThan(0)
    expect(records.find((r) => r.msg === 'ingester ready')).toMatchObject({ run_id: null, task_id: '', attempt: null, category: 'ingest' })
  })
})
