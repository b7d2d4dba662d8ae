import { describe, expect, it } from 'vitest'
import { attemptFields, countByRun, partsOfAttemptUid, rejectedMessageFields, runFields } from '../../workers/ingester-log.js'

const bytes = (text: string) => new TextEncoder().encode(text)
const TRACE = 'forge.results.trace.'
const KEYED = [TRACE, 'forge.results.attempt.']

describe('ingester log fields', () => {
  it('splits an attempt_uid whose task id holds slashes', () => {
    expect(partsOfAttemptUid('r1/c0/suite/task-a/3')).toEqual({ run_id: 'r1', task_id: 'suite/task-a', attempt: 3 })
    expect(partsOfAttemptUid('bad')).toBeUndefined()
    expect(partsOfAttemptUid('r/c/t/x')).toBeUndefined()
  })

  it('names the run, task, attempt and uid a rejected attempt message carries', () => {
    const fields = rejectedMessageFields('forge.results.attempt', bytes(JSON.stringify({ attempt_uid: 'r1/c0/t/2', run_id: 'r1', outcome: 'maybe' })), KEYED)
    expect(fields).toEqual({ run_id: 'r1', task_id: 't', attempt: 2, attempt_uid: 'r1/c0/t/2', span_id: 'attempt', parent_span_id: null, category: 'ingest', subject: 'forge.results.attempt' })
  })

  it('reads the uid of a trace message from its subject when its body is not JSON', () => {
    const subject = TRACE + Buffer.from('r2/c0/t/0', 'utf8').toString('base64url')
    expect(rejectedMessageFields(subject, bytes('{not json'), KEYED)).toMatchObject({ run_id: 'r2', task_id: 't', attempt: 0, attempt_uid: 'r2/c0/t/0', category: 'ingest' })
  })

  it("reads the uid of an attempt's one message (result and trace) from its subject when its body is not JSON", () => {
    const subject = 'forge.results.attempt.' + Buffer.from('r3/c0/t/4', 'utf8').toString('base64url')
    expect(rejectedMessageFields(subject, bytes('{not json'), KEYED)).toMatchObject({ run_id: 'r3', task_id: 't', attempt: 4, attempt_uid: 'r3/c0/t/4' })
  })

  it('keeps every field, null, when nothing can be read', () => {
    expect(rejectedMessageFields('forge.results.attempt', bytes('[1]'), KEYED)).toEqual({ run_id: null, task_id: '', attempt: null, span_id: null, parent_span_id: null, category: 'ingest', subject: 'forge.results.attempt' })
    expect(rejectedMessageFields('forge.results.sweep', bytes('{"sweep_id":"s1"}'), KEYED)).toMatchObject({ run_id: null, sweep_id: 's1' })
  })

  it('gives run and attempt records the same six fields', () => {
    expect(Object.keys(runFields('r', 'store')).sort()).toEqual(['attempt', 'category', 'parent_span_id', 'run_id', 'span_id', 'task_id'])
    expect(attemptFields({ run_id: 'r', task_id: 't', attempt: 1, attempt_uid: 'r/c/t/1' }, 'store')).toEqual({ run_id: 'r', task_id: 't', attempt: 1, attempt_uid: 'r/c/t/1', span_id: 'attempt', parent_span_id: null, category: 'store' })
    expect([...countByRun([{ run_id: 'a' }, { run_id: 'b' }, { run_id: 'a' }, {}])]).toEqual([['a', 2], ['b', 1], [null, 1]])
  })
})
