import type { AttemptResult } from '../../core/contracts/index.js'

/** One attempt's result as a worker publishes it: a passing mock attempt of `task` in `runId` with one tool call, `overrides` on top. */
export function attempt(runId: string, task: string, n: number, overrides: Partial<AttemptResult> = {}): AttemptResult {
  return {
    attempt_uid: `${runId}/c0/${task}/${n}`,
    run_id: runId,
    config_id: 'c0',
    suite: 'unit',
    task_id: task,
    attempt: n,
    adapter: 'mock',
    outcome: 'pass',
    validity: 'valid',
    failure_bucket: null,
    budget_limit: null,
    grades: [{ grader: 'exact', passed: true, score: 1, detail: 'ok' }],
    invariants: [],
    instruction: 'say hi',
    output: 'hi',
    self_report: '',
    error: '',
    cost_usd: null,
    latency_ms: 3,
    tool_call_count: 1,
    input_tokens: 10,
    output_tokens: 2,
    model: 'mock',
    decoding: {},
    price_table_version: '',
    seed: '1',
    worker_id: 'test',
    started_at: 1_764_470_000_000,
    finished_at: 1_764_470_000_003,
    tool_calls: [{ index: 0, name: 'echo', args: { text: 'hi' }, result: 'hi', retry_index: 0, started_ms: 0, duration_ms: 1 }],
    ...overrides,
  }
}
