import { describe, expect, it } from 'vitest'
import { describeCompleteness, describeHarnessErrors, finalRunStatus, missingAttempts } from '../../core/completeness.js'

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
