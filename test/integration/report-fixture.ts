/** A synthetic stored run for report tests: faults, judge verdicts, harness errors, traces — written as the ingester writes. */
import type { AttemptResult, MetricValue, RunRecordInput, StoredTrace, ToolCall } from '../../core/contracts/index.js'
import type { ClickHouseClient } from '../../store/clickhouse.js'
import { insertAttemptGrading, insertStoredTraces } from '../../store/grading-repositories.js'
import { insertAttempts, insertRuns } from '../../store/repositories.js'

const judgeStamp = { model: 'judge-m', prompt_version: 'p1', decoding: {} }

/** Attempt i of a task, deterministic: faults every 3rd attempt, a harness error every 13th, a judge grade on beta. */
export function makeAttempt(runId: string, task: string, taskIndex: number, i: number, passBelow = 6): AttemptResult {
  const faults = i % 3 === 0 ? 1 + (i % 4) : 0
  const harness = i % 13 === 5
  const pass = !harness && (i * (taskIndex + 3)) % 10 < passBelow - faults
  const calls: ToolCall[] = Array.from({ length: 2 + faults }, (_, c) => ({
    index: c,
    name: c % 2 === 0 ? 'kv_get' : 'kv_put',
    args: { key: `k${c}` },
    result: c < faults ? undefined : 'ok',
    ...(c < faults ? { error: 'injected timeout', injected_fault: c % 2 === 0 ? 'timeout' : 'http_500' } : {}),
    retry_index: 0,
    started_ms: c * 10,
    duration_ms: 5,
  }))
  const uid = `${runId}/cfg/${task}/${i}`
  const grades = [
    { grader: 'exact', passed: pass, score: pass ? 1 : 0, detail: '' },
    ...(task === 'beta' ? [{ grader: 'judge', passed: pass !== (i % 7 === 0), score: 1, detail: '', judge: judgeStamp }] : []),
  ]
  const metrics: MetricValue[] =
    task === 'gamma' ? [{ metric: 'correctness', version: 1, kind: 'judge', status: 'scored', value: 5, passed: pass !== (i % 5 === 0), detail: '', judge: judgeStamp }] : []
  return {
    attempt_uid: uid,
    run_id: runId,
    config_id: 'cfg',
    suite: 'rep',
    task_id: task,
    attempt: i,
    adapter: 'mock',
    outcome: pass ? 'pass' : 'fail',
    validity: harness ? 'invalid' : 'valid',
    failure_bucket: pass ? null : harness ? 'harness_error' : faults > 0 ? 'tool_error' : 'wrong_answer',
    budget_limit: null,
    grades,
    invariants: [],
    instruction: 'do it',
    output: pass ? '42' : '41',
    self_report: '',
    error: harness ? 'adapter "mock" threw: boom' : '',
    cost_usd: task === 'gamma' ? null : 0.001 * (1 + (i % 5)),
    latency_ms: 5 + ((i * 37) % 400),
    tool_call_count: calls.length,
    input_tokens: 100,
    output_tokens: 10,
    model: task === 'gamma' ? 'unpriced-m' : 'm1',
    decoding: {},
    price_table_version: 'v1',
    seed: 's',
    worker_id: `w${i % 2}`,
    started_at: 1_764_470_000_000 + i,
    finished_at: 1_764_470_000_100 + i,
    tool_calls: calls,
    metrics,
  }
}

export function storedTraceOf(a: AttemptResult): StoredTrace {
  return {
    attempt_uid: a.attempt_uid,
    run_id: a.run_id,
    config_id: a.config_id,
    suite: a.suite,
    task_id: a.task_id,
    attempt: a.attempt,
    outcome: a.outcome,
    validity: a.validity,
    failure_bucket: a.failure_bucket,
    grades: a.grades,
    invariants: [],
    trace: {
      output: a.output,
      tool_calls: a.tool_calls,
      spans: [
        { span_id: 'attempt', parent_span_id: null, category: 'attempt', name: a.attempt_uid, start_ms: 0, duration_ms: 60, attributes: {} },
        { span_id: 'agent', parent_span_id: 'attempt', category: 'agent', name: 'mock', start_ms: 0, duration_ms: 50, attributes: {} },
        ...a.tool_calls.map((c) => ({ span_id: `tool-${c.index}`, parent_span_id: 'agent', category: 'tool' as const, name: c.name, start_ms: c.started_ms, duration_ms: c.duration_ms, attributes: {} })),
        { span_id: 'grading', parent_span_id: 'attempt', category: 'grading', name: 'grade', start_ms: 55, duration_ms: 1, attributes: {} },
      ],
      state_snapshots: [],
      errors: [],
      usage: { input_tokens: 100, output_tokens: 10 },
      duration_ms: 50,
      refused: false,
    },
    env: null,
    truncated: [],
    stored_at: a.finished_at,
  }
}


/** Stores `perTask` attempts of each task, their grading rows, traces and the run record; returns the attempts. A lower `passBelow` (default 6) passes fewer. */
export async function storeSyntheticRun(client: ClickHouseClient, runId: string, tasks: readonly string[], perTask: number, passBelow = 6): Promise<AttemptResult[]> {
  const attempts = tasks.flatMap((task, t) => Array.from({ length: perTask }, (_, i) => makeAttempt(runId, task, t, i, passBelow)))
  await insertAttempts(client, attempts, Date.now())
  await insertAttemptGrading(client, attempts, Date.now())
  await insertStoredTraces(client, attempts.map(storedTraceOf), Date.now())
  const run: RunRecordInput = {
    run_id: runId, suite: 'rep', suite_path: '/x', adapter: 'mock', config_id: 'cfg', attempts: perTask, task_count: tasks.length, seed: 's',
    status: 'completed', started_at: 1_764_470_000_000, finished_at: 1_764_470_100_000, updated_at: 1_764_470_100_000,
    price_table_version: 'v1', price_table_date: '2026-11-30', suite_hash: 'ab'.repeat(32), judge_model: 'judge-m', judge_prompt_version: 'p1',
    stop_width: 0, stopped_tasks: [],
  }
  await insertRuns(client, [run])
  return attempts
}
