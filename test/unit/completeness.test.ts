import { describe, expect, it } from 'vitest'
import { exitCodeOf } from '../../core/errors.js'
import { runOutcomeError } from '../../app/run.js'
import { describeCompleteness, describeHarnessErrors, finalRunStatus, missingAttempts, partialRunNotice, plannedFor, plannedTotal } from '../../core/completeness.js'

describe('missingAttempts', () => {
  it('lists what the store lacks in plan order, counts it exactly, and caps the list', () => {
    const stored = new Map([
      ['a', new Set([0, 2])],
      ['c', new Set([0, 1, 2])],
    ])
    expect(missingAttempts({ task_ids: ['a', 'b', 'c'], attempts: 3 }, stored)).toEqual({
      count: 4,
      stored: 5,
      missing: [
        { task_id: 'a', attempt: 1 },
        { task_id: 'b', attempt: 0 },
        { task_id: 'b', attempt: 1 },
        { task_id: 'b', attempt: 2 },
      ],
    })
    expect(missingAttempts({ task_ids: ['a', 'b', 'c'], attempts: 3 }, stored, 2)).toEqual({
      count: 4,
      stored: 5,
      missing: [
        { task_id: 'a', attempt: 1 },
        { task_id: 'b', attempt: 0 },
      ],
    })
  })

  it('checks a sequential run against what its tasks scheduled: a task that stopped early plans only attempts 0 … n − 1', () => {
    const plan = { task_ids: ['stopped', 'capped'], attempts: 5, attempts_by_task: { stopped: 2 } }
    expect([plannedFor(plan, 'stopped'), plannedFor(plan, 'capped'), plannedTotal(plan)]).toEqual([2, 5, 7])
    // attempts 2 … 4 of `stopped` were never scheduled: not missing, even though the store lacks them
    const stored = new Map([
      ['stopped', new Set([0])],
      ['capped', new Set([0, 1, 2, 3, 4])],
    ])
    expect(missingAttempts(plan, stored)).toEqual({ count: 1, stored: 6, missing: [{ task_id: 'stopped', attempt: 1 }] })
    expect(missingAttempts({ ...plan, attempts_by_task: {} }, stored).count).toBe(4)
  })
})

describe('finalRunStatus', () => {
  it('is completed with nothing missing and harness errors at or under 2%', () => {
    expect(finalRunStatus({ stored: 200, missing_count: 0, harness_errors: 4 })).toBe('completed')
  })
  it('is degraded past 2% harness errors', () => {
    expect(finalRunStatus({ stored: 200, missing_count: 0, harness_errors: 5 })).toBe('degraded')
  })
  it('is incomplete with anything missing, or when the store could not be checked', () => {
    expect(finalRunStatus({ stored: 199, missing_count: 1, harness_errors: 50 })).toBe('incomplete')
    expect(finalRunStatus({ stored: 0, missing_count: 0, harness_errors: 0, unchecked: 'ingester down' })).toBe('incomplete')
  })
})

describe('the messages', () => {
  it('say stored N/M and name what is missing', () => {
    const missing = Array.from({ length: 12 }, (_, attempt) => ({ task_id: 'echo', attempt }))
    expect(describeCompleteness({ planned: 200, stored: 145, missing_count: 55, missing })).toBe(
      'stored 145/200; missing: echo#0, echo#1, echo#2, echo#3, echo#4, echo#5, echo#6, echo#7, echo#8, echo#9 (and 45 more)',
    )
    expect(describeCompleteness({ planned: 5, stored: 5, missing_count: 0, missing: [] })).toBe('stored 5/5')
    expect(describeCompleteness({ planned: 5, stored: 0, missing_count: 5, missing: [], unchecked: 'no ingester answered' })).toBe(
      'stored 0/5; the store could not be checked: no ingester answered',
    )
    expect(describeHarnessErrors({ stored: 200, harness_errors: 7 })).toBe(
      'harness errors in 7 of 200 attempts (3.5%, over the 2% limit): this run is not a valid measurement',
    )
  })
})

describe('partialRunNotice', () => {
  const run = {
    status: 'completed', attempts: 40, task_count: 5, planned_attempts: 200, final_stored: 200, missing_count: 0, missing_sample: [] as string[], harness_errors: 0, stop_width: 0,
  }
  it('is nothing for a completed run holding every planned attempt', () => {
    expect(partialRunNotice(run, 200)).toBeUndefined()
  })
  it('names what is missing from an incomplete run', () => {
    expect(partialRunNotice({ ...run, status: 'incomplete', final_stored: 145, missing_count: 55, missing_sample: ['echo#3', 'echo#7'] }, 145)).toBe(
      'INCOMPLETE: stored 145/200; missing: echo#3, echo#7 (and 53 more)',
    )
  })
  it('says a run is in progress, cancelled or failed, with how much is stored', () => {
    expect(partialRunNotice({ ...run, status: 'running', planned_attempts: 0 }, 60)).toBe('PARTIAL: run in progress, stored 60/200 attempts so far')
    expect(partialRunNotice({ ...run, status: 'cancelled' }, 17)).toBe('PARTIAL: run cancelled, stored 17/200 attempts')
    expect(partialRunNotice({ ...run, status: 'failed' }, 0)).toBe('PARTIAL: run failed, stored 0/200 attempts')
  })
  it('puts the harness-error banner on a degraded run', () => {
    expect(partialRunNotice({ ...run, status: 'degraded', harness_errors: 9 }, 200)).toBe(
      'DEGRADED: harness errors in 9 of 200 attempts (4.5%, over the 2% limit): this run is not a valid measurement',
    )
  })
  it('catches a "completed" run of older code that holds fewer attempts than planned (not a sequential one)', () => {
    expect(partialRunNotice({ ...run, planned_attempts: 0, final_stored: 0 }, 94)).toBe('PARTIAL: stored 94/200 attempts')
    expect(partialRunNotice({ ...run, stop_width: 0.2 }, 94)).toBeUndefined()
  })
  it('names what is missing from an incomplete sequential run, out of what it scheduled (planned_attempts), not tasks × attempts', () => {
    const sequential = { ...run, stop_width: 0.3, status: 'incomplete', planned_attempts: 40, final_stored: 39, missing_count: 1, missing_sample: ['always#9'] }
    expect(partialRunNotice(sequential, 39)).toBe('INCOMPLETE: stored 39/40; missing: always#9')
  })
  it('says so when attempts exist without their run record', () => {
    expect(partialRunNotice(undefined, 12)).toBe("PARTIAL: the run's record is not stored; statistics over the 12 attempts found")
  })
})

describe('the end of a sequential run that could not be completed', () => {
  it('is a RunIncompleteError (exit 1) naming the scheduled attempt still missing, stored out of scheduled', () => {
    const completeness = { planned: 40, stored: 39, missing_count: 1, missing: [{ task_id: 'always', attempt: 9 }], doubled: 0, harness_errors: 0, rerun: 3 }
    const error = runOutcomeError({ run_id: 'seq-r', status: 'incomplete', completeness })
    expect({ message: error?.message, exit: exitCodeOf(error) }).toEqual({ message: 'run seq-r is incomplete: stored 39/40; missing: always#9', exit: 1 })
  })
})
