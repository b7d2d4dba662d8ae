/**
 * Issue 12: nothing the harness publishes may exceed the bus's max_payload (a refused message is a
 * lost attempt), and a trace without an answer is stored as such, never rejected.
 */
import { describe, expect, it } from 'vitest'
import { AttemptResult, StoredTrace } from '../../core/contracts/index.js'
import { checkTaskSizes, RESULT_INSTRUCTION_BYTES } from '../../core/message-size.js'
import type { AgentAdapter } from '../../core/plugins.js'
import { runAttempt } from '../../engine/attempt-runner.js'
import { fitAttemptResult } from '../../engine/message-fit.js'
import { storedTraceOf } from '../../engine/trace-store.js'
import { fakeSuite, fakeTask } from './fake-suite.js'

const MiB = 1024 * 1024
const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8')

function attemptOf(adapter: AgentAdapter, taskFields: Record<string, unknown> = {}) {
  const task = fakeTask(taskFields)
  const suite = fakeSuite({ tasks: [task] })
  return runAttempt({ suite, task, adapter, runId: 'run1', configId: 'c0', attempt: 0, runSeed: 'rs', adapterConfig: {}, workerId: 'w', now: () => 1_700_000_000_000 })
}

describe('checkTaskSizes', () => {
  it('refuses a field that cannot fit one message and notes an instruction that results carry truncated', () => {
    const tasks = [
      { id: 'small', instruction: 'Add 2 and 3.', input: { a: 2 } },
      { id: 'long', instruction: 'x'.repeat(100 * 1024), input: {} },
      { id: 'huge', instruction: 'y'.repeat(10 * MiB), input: {} },
      { id: 'fat_input', instruction: 'ok', input: { blob: 'z'.repeat(2 * MiB) } },
    ]
    expect(checkTaskSizes(tasks, 1 * MiB)).toEqual({
      refused: [
        { task_id: 'huge', field: 'instruction', bytes: 10 * MiB, limit: MiB - 64 * 1024 },
        { task_id: 'fat_input', field: 'input', bytes: 2 * MiB + 11, limit: MiB - 64 * 1024 },
      ],
      truncated: [{ task_id: 'long', field: 'instruction', bytes: 100 * 1024, limit: RESULT_INSTRUCTION_BYTES }],
    })
    // the embedded stack's 8 MB takes the 2 MiB input
    expect(checkTaskSizes(tasks, 8 * MiB).refused.map((p) => p.task_id)).toEqual(['huge'])
  })
})

describe('the published result', () => {
  const solver: AgentAdapter = {
    name: 'solver',
    async invoke(payload, ctx) {
      const step = await ctx.tools.call('upper', { value: payload.input['value'] })
      return { output: step.ok ? step.result : null }
    },
  }

  it('carries a long instruction truncated with a marker', async () => {
    const { result } = await attemptOf(solver, { instruction: 'i'.repeat(3 * MiB) })
    expect(bytes(result.instruction)).toBeLessThanOrEqual(RESULT_INSTRUCTION_BYTES + 2)
    expect(result.instruction).toMatch(/^i+…\[truncated 3145728 bytes\]$/)
    expect(result.outcome).toBe('pass')
  })

  it('is cut to fit max_payload, keeping every attempt field and the true tool-call count', () => {
    const call = (index: number) => ({ index, name: 'upper', args: { value: 'a'.repeat(1000) }, result: 'A'.repeat(1000), retry_index: 0, started_ms: index, duration_ms: 1 })
    const big = AttemptResult.parse({
      attempt_uid: 'r/c/t/0', run_id: 'r', config_id: 'c', suite: 's', task_id: 't', attempt: 0, adapter: 'mock',
      outcome: 'fail', validity: 'valid', failure_bucket: 'wrong_answer', budget_limit: null,
      grades: [{ grader: 'exact', passed: false, score: 0, detail: 'd'.repeat(50_000) }], invariants: [],
      instruction: 'i'.repeat(RESULT_INSTRUCTION_BYTES), output: 'o', self_report: '', error: '', cost_usd: null, latency_ms: 1,
      tool_call_count: 600, input_tokens: 0, output_tokens: 0, model: 'm', decoding: {}, price_table_version: '', seed: '1',
      worker_id: 'w', started_at: 0, finished_at: 1, tool_calls: Array.from({ length: 600 }, (_, i) => call(i)),
    })
    expect(bytes(big)).toBeGreaterThan(MiB)
    const fitted = fitAttemptResult(big, MiB)
    expect(bytes(fitted)).toBeLessThanOrEqual(MiB - 64 * 1024)
    expect(AttemptResult.parse(JSON.parse(JSON.stringify(fitted)))).toEqual(fitted)
    expect({ ...fitted, grades: [], tool_calls: [] }).toEqual({ ...big, grades: [], tool_calls: [] })
    expect(fitted.grades[0]?.detail).toMatch(/…\[truncated 50000 bytes\]$/)
    expect(fitted.tool_calls).toEqual(big.tool_calls.slice(0, 150))
    expect(fitted.tool_call_count).toBe(600)
    // a result that fits is published as it is
    expect(fitAttemptResult(fitted, MiB)).toBe(fitted)
  })
})

describe('an attempt without an answer', () => {
  it('is no_answer, and its stored trace survives the JSON round trip the bus makes', async () => {
    const silent: AgentAdapter = { name: 'silent', invoke: async () => ({ output: undefined }) }
    const execution = await attemptOf(silent)
    expect([execution.result.outcome, execution.result.validity, execution.result.failure_bucket]).toEqual(['fail', 'valid', 'no_answer'])
    const stored = storedTraceOf(execution.result, execution.trace, execution.grading.env, 1_700_000_000_001)
    const onTheWire = JSON.parse(JSON.stringify(stored)) as Record<string, unknown>
    // stored as null: JSON would drop an undefined output, and the ingester must still take the trace
    expect((onTheWire['trace'] as Record<string, unknown>)['output']).toBeNull()
    const parsed = StoredTrace.safeParse(onTheWire)
    expect(parsed.success ? parsed.data.trace.output : parsed.error.message).toBeNull()
  })
})
