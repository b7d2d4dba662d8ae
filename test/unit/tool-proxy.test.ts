import { describe, expect, it } from 'vitest'
import { createToolBox } from '../../engine/tool-proxy.js'
import { fakeSuite, fakeTask, fakeTool } from './fake-suite.js'

function box(budget: Partial<{ max_tool_calls: number; max_retries_per_tool: number }> = {}, taskFields: Record<string, unknown> = {}) {
  let executions = 0
  let clock = 1_000
  const tools = [
    fakeTool('upper', (args) => {
      executions += 1
      return String(args['value']).toUpperCase()
    }),
    fakeTool('flaky', () => {
      executions += 1
      throw new Error('service unavailable')
    }),
    fakeTool('nuke', () => {
      executions += 1
      return 'boom'
    }),
  ]
  const task = fakeTask({ tools: ['upper', 'flaky'], disallowed_tools: ['nuke'], budget: { max_tool_calls: 5, max_retries_per_tool: 2, ...budget }, ...taskFields })
  const toolBox = createToolBox({ task, suite: fakeSuite({ tools, tasks: [task] }), attemptUid: 'r/c/task_one/0', budget: task.budget, startedAt: 1_000, now: () => (clock += 1) })
  return { toolBox, executions: () => executions }
}

describe('createToolBox', () => {
  it('offers the specs of the allowlisted tools only', () => {
    const { toolBox } = box()
    expect(toolBox.specs.map((s) => s.name)).toEqual(['upper', 'flaky'])
  })

  it('runs an allowlisted call and records it with timing', async () => {
    const { toolBox } = box()
    expect(await toolBox.call('upper', { value: 'abc' })).toEqual({ ok: true, result: 'ABC' })
    expect(toolBox.calls).toEqual([{ index: 0, name: 'upper', args: { value: 'abc' }, result: 'ABC', retry_index: 0, started_ms: 1, duration_ms: 1 }])
    expect(toolBox.exhausted).toBe(false)
  })

  it('refuses a tool that is not on the allowlist as hallucinated', async () => {
    const { toolBox, executions } = box()
    const outcome = await toolBox.call('search', { q: 'x' })
    expect(outcome).toEqual({ ok: false, error: 'no tool named "search" (available: upper, flaky)' })
    expect(toolBox.calls[0]).toMatchObject({ name: 'search', refused: 'hallucinated_tool', error: outcome.ok ? '' : outcome.error })
    expect(executions()).toBe(0)
  })

  it('refuses a denylisted tool as disallowed without running it', async () => {
    const { toolBox, executions } = box()
    expect(await toolBox.call('nuke', { value: 'x' })).toEqual({ ok: false, error: 'tool "nuke" is not allowed for this task' })
    expect(toolBox.calls[0]?.refused).toBe('disallowed_tool')
    expect(executions()).toBe(0)
  })

  it('refuses arguments that do not match the input schema as malformed', async () => {
    const { toolBox, executions } = box()
    const wrongType = await toolBox.call('upper', { value: 7 })
    const notAnObject = await toolBox.call('upper', 'abc')
    expect(wrongType).toEqual({ ok: false, error: 'invalid arguments for "upper": args.value: expected string, got number 7' })
    expect(notAnObject).toEqual({ ok: false, error: 'invalid arguments for "upper": args: expected an object of named arguments, got string' })
    expect(toolBox.calls.map((c) => c.refused)).toEqual(['malformed_tool_call', 'malformed_tool_call'])
    expect(executions()).toBe(0)
  })

  it('refuses arguments that break a value limit of the input schema (minimum, pattern, enum, maxLength) as malformed', async () => {
    let executions = 0
    const order = fakeTool(
      'order',
      () => {
        executions += 1
        return 'ordered'
      },
      {
        qty: { type: 'integer', minimum: 1 },
        sku: { type: 'string', pattern: '^[A-Z]{3}-\\d+$' },
        speed: { type: 'string', enum: ['standard', 'express'] },
        note: { type: 'string', maxLength: 5 },
      },
    )
    const task = fakeTask({ tools: ['order'] })
    const toolBox = createToolBox({ task, suite: fakeSuite({ tools: [order], tasks: [task] }), attemptUid: 'r/c/task_one/0', budget: { ...task.budget, max_retries_per_tool: 10 }, startedAt: 0, now: () => 0 })
    const valid = { qty: 2, sku: 'ABC-1', speed: 'express', note: 'gift' }
    const outcomes = [
      await toolBox.call('order', { ...valid, qty: 0 }),
      await toolBox.call('order', { ...valid, sku: 'abc-1' }),
      await toolBox.call('order', { ...valid, speed: 'overnight' }),
      await toolBox.call('order', { ...valid, note: 'wrapped' }),
      await toolBox.call('order', valid),
    ]
    expect(outcomes).toEqual([
      { ok: false, error: 'invalid arguments for "order": args.qty: 0 is less than the minimum 1' },
      { ok: false, error: 'invalid arguments for "order": args.sku: "abc-1" does not match /^[A-Z]{3}-\\d+$/' },
      { ok: false, error: 'invalid arguments for "order": args.speed: "overnight" is not one of ["standard","express"]' },
      { ok: false, error: 'invalid arguments for "order": args.note: longer than 5 characters (7)' },
      { ok: true, result: 'ordered' },
    ])
    expect(toolBox.calls.map((c) => c.refused ?? 'ran')).toEqual(['malformed_tool_call', 'malformed_tool_call', 'malformed_tool_call', 'malformed_tool_call', 'ran'])
    expect(executions).toBe(1)
  })

  it('catches a tool exception into the call error', async () => {
    const { toolBox } = box()
    expect(await toolBox.call('flaky', { value: 'x' })).toEqual({ ok: false, error: 'service unavailable' })
    expect(toolBox.calls[0]).toMatchObject({ name: 'flaky', error: 'service unavailable', retry_index: 0 })
    expect(toolBox.calls[0]?.refused).toBeUndefined()
  })

  it('executes no call past max_tool_calls and refuses every later one', async () => {
    const { toolBox, executions } = box({ max_tool_calls: 3 })
    for (let i = 0; i < 6; i += 1) await toolBox.call('upper', { value: `v${i}` })
    expect(executions()).toBe(3)
    expect(toolBox.calls.map((c) => c.refused ?? 'ran')).toEqual(['ran', 'ran', 'ran', 'budget_exhausted', 'budget_exhausted', 'budget_exhausted'])
    expect(toolBox.exhausted).toBe(true)
    expect(toolBox.exhaustedBy).toBe('max_tool_calls')
  })

  it('counts consecutive retries of a failing tool and stops past max_retries_per_tool', async () => {
    const { toolBox, executions } = box({ max_tool_calls: 20, max_retries_per_tool: 2 })
    for (let i = 0; i < 5; i += 1) await toolBox.call('flaky', { value: 'x' })
    expect(toolBox.calls.map((c) => [c.retry_index, c.refused ?? c.error])).toEqual([
      [0, 'service unavailable'],
      [1, 'service unavailable'],
      [2, 'service unavailable'],
      [3, 'budget_exhausted'],
      [4, 'budget_exhausted'],
    ])
    expect(executions()).toBe(3)
    expect(toolBox.exhaustedBy).toBe('max_retries_per_tool')
    // exhausted for every tool now, not only the one retried
    expect(await toolBox.call('upper', { value: 'y' })).toMatchObject({ ok: false })
    expect(executions()).toBe(3)
  })

  it('does not count a call after a success, or of another tool, as a retry', async () => {
    const { toolBox } = box({ max_tool_calls: 20 })
    await toolBox.call('flaky', { value: 'x' })
    await toolBox.call('upper', { value: 'x' })
    await toolBox.call('flaky', { value: 'x' })
    await toolBox.call('upper', { value: 7 })
    await toolBox.call('upper', { value: 'fixed' })
    await toolBox.call('upper', { value: 'again' })
    expect(toolBox.calls.map((c) => c.retry_index)).toEqual([0, 0, 0, 0, 1, 0])
  })

  it('refuses everything once exhausted from outside (the deadline)', async () => {
    const { toolBox, executions } = box()
    toolBox.exhaust('max_duration_ms')
    expect(await toolBox.call('upper', { value: 'x' })).toEqual({ ok: false, error: 'budget exhausted (max_duration_ms): no more tool calls' })
    expect(toolBox.exhaustedBy).toBe('max_duration_ms')
    expect(executions()).toBe(0)
  })
})

describe('createToolBox retry storms and concurrency', () => {
  it('stops the same failing call repeated with other calls in between', async () => {
    const { toolBox, executions } = box({ max_tool_calls: 50, max_retries_per_tool: 2 })
    for (let i = 0; i < 6; i += 1) {
      await toolBox.call('flaky', { value: 'x' })
      await toolBox.call('upper', { value: `v${i}` })
    }
    expect(toolBox.calls.map((c) => [c.name, c.retry_index, c.refused ?? c.error ?? 'ok'])).toEqual([
      ['flaky', 0, 'service unavailable'],
      ['upper', 0, 'ok'],
      ['flaky', 0, 'service unavailable'],
      ['upper', 0, 'ok'],
      ['flaky', 0, 'service unavailable'],
      ['upper', 0, 'ok'],
      // the fourth identical failing call is a third retry: past max_retries_per_tool
      ['flaky', 0, 'budget_exhausted'],
      ['upper', 0, 'budget_exhausted'],
      ['flaky', 0, 'budget_exhausted'],
      ['upper', 0, 'budget_exhausted'],
      ['flaky', 0, 'budget_exhausted'],
      ['upper', 0, 'budget_exhausted'],
    ])
    expect(toolBox.exhaustedBy).toBe('max_retries_per_tool')
    expect(executions()).toBe(6)
  })

  it('forgets failed calls of a tool once that tool succeeds', async () => {
    let healthy = false
    const task = fakeTask({ tools: ['sometimes', 'upper'], budget: { max_tool_calls: 50, max_retries_per_tool: 1 } })
    const tools = [
      fakeTool('sometimes', () => {
        if (!healthy) throw new Error('down')
        return 'up'
      }),
      fakeTool('upper', (args) => String(args['value']).toUpperCase()),
    ]
    const toolBox = createToolBox({ task, suite: fakeSuite({ tools, tasks: [task] }), attemptUid: 'a', budget: task.budget, startedAt: 0, now: () => 0 })
    const steps: Array<[string, string, boolean]> = [
      ['sometimes', 'x', false],
      ['upper', 'a', false],
      ['sometimes', 'y', true],
      ['sometimes', 'x', false],
      ['upper', 'b', false],
      // without the success in between this would be the third failure of sometimes(x)
      ['sometimes', 'x', false],
    ]
    for (const [name, value, up] of steps) {
      healthy = up
      await toolBox.call(name, { value })
    }
    expect(toolBox.calls.map((c) => c.refused ?? c.error ?? 'ok')).toEqual(['down', 'ok', 'ok', 'down', 'ok', 'down'])
    expect(toolBox.exhausted).toBe(false)
  })

  it('gives concurrent calls distinct indexes in the order they finished', async () => {
    const task = fakeTask({ tools: ['slow'], budget: { max_tool_calls: 10 } })
    const tools = [fakeTool('slow', async (args) => new Promise((resolve) => setTimeout(() => resolve(args['value']), Number(String(args['value']).slice(1)))))]
    const toolBox = createToolBox({ task, suite: fakeSuite({ tools, tasks: [task] }), attemptUid: 'a', budget: task.budget, startedAt: 0, now: () => 0 })
    await Promise.all([toolBox.call('slow', { value: 'v30' }), toolBox.call('slow', { value: 'v1' }), toolBox.call('slow', { value: 'v15' })])
    expect(toolBox.calls.map((c) => [c.index, c.result])).toEqual([
      [0, 'v1'],
      [1, 'v15'],
      [2, 'v30'],
    ])
  })
})
