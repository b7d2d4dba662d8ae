import { describe, expect, it } from 'vitest'
import { Task } from '../../core/contracts/index.js'
import { attemptUidOf } from '../../core/identity.js'

describe('Task', () => {
  it('accepts graders as an alias of outcome_graders', () => {
    const task = Task.parse({ id: 't1', instruction: 'do it', graders: [{ type: 'exact', expected: 'x' }] })
    expect(task.outcome_graders).toEqual([{ type: 'exact', expected: 'x' }])
    expect('graders' in task).toBe(false)
  })
  it('rejects a task with no graders', () => {
    const r = Task.safeParse({ id: 't1', instruction: 'do it' })
    expect(r.success).toBe(false)
  })
  it('builds the attempt uid from the business key', () => {
    expect(attemptUidOf({ run_id: 'r1', config_id: 'c0', task_id: 'echo', attempt: 3 })).toBe('r1/c0/echo/3')
  })
})
