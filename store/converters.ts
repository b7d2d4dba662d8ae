/** Pure row↔domain converters for the ClickHouse tables. */
import { RunRecord, type AttemptResult, type BaselineRecord, type RunRecordInput } from '../core/contracts/index.js'

/** ClickHouse DateTime64(3) text for an epoch-millisecond instant (UTC). */
export function toChDateTime(ms: number): string {
  // a batch's rows share their ingested_at, an attempt's rows their audit stamp: the last answer is kept
  if (ms !== lastChDateTime.ms) {
    const iso = new Date(ms).toISOString()
    lastChDateTime.ms = ms
    // (a year past 9999 is written with six digits and a sign)
    lastChDateTime.text = iso.length === 24 ? `${iso.slice(0, 10)} ${iso.slice(11, 23)}` : iso.replace('T', ' ').replace('Z', '')
  }
  return lastChDateTime.text
}

const lastChDateTime = { ms: Number.NaN, text: '' }

/** Epoch milliseconds from ClickHouse DateTime64 text ('2026-11-30 02:40:21.123', UTC). */
export function fromChDateTime(text: string): number {
  return Date.parse(`${text.replace(' ', 'T')}Z`)
}

export interface AttemptRow {
  attempt_uid: string
  run_id: string
  config_id: string
  suite: string
  task_id: string
  attempt: number
  adapter: string
  outcome: string
  validity: string
  failure_bucket: string
  budget_limit: string
  grades: string
  invariants: string
  instruction: string
  output: string
  self_report: string
  error: string
  cost_usd: number | null
  latency_ms: number
  tool_call_count: number
  input_tokens: number
  output_tokens: number
  model: string
  decoding: string
  price_table_version: string
  seed: string
  worker_id: string
  started_at: string
  finished_at: string
  ingested_at: string
  injected_faults: number
  injected_fault_kinds: string[]
}

export interface ToolCallRow {
  attempt_uid: string
  run_id: string
  task_id: string
  call_index: number
  name: string
  args: string
  result: string
  error: string
  refused: string
  injected_fault: string
  /** the answer guard's interceptions (JSON list of answer sources); '' when none (migration 10) */
  intercepted: string
  retry_index: number
  started_ms: number
  duration_ms: number
  ingested_at: string
}

export interface RunRow {
  run_id: string
  suite: string
  suite_path: string
  adapter: string
  config_id: string
  attempts: number
  task_count: number
  seed: string
  status: string
  started_at: string
  finished_at: string | null
  updated_at: string
  price_table_version: string
  price_table_date: string
  suite_hash: string
  judge_model: string
  judge_prompt_version: string
  stop_width: number
  stopped_tasks: string[]
  /** absent in rows read before migration 9 */
  isolation?: string
  // migration 10; absent from rows read before it
  redacted?: number
  guard_answers?: number
  audit_head?: string
  audit_signature?: string
  planned_attempts: number
  final_stored: number
  missing_count: number
  missing_sample: string[]
  harness_errors: number
  fault_profile_hash: string
  fault_mode: string
  fault_rate: number
  fault_sweep_id: string
  fault_profile: string
}

export interface BaselineRow {
  name: string
  version: number
  run_id: string
  suite: string
  commit_hash: string
  agent_version: string
  note: string
  created_at: string
}

export function attemptToRow(a: AttemptResult, ingestedAt: number): AttemptRow {
  return {
    attempt_uid: a.attempt_uid,
    run_id: a.run_id,
    config_id: a.config_id,
    suite: a.suite,
    task_id: a.task_id,
    attempt: a.attempt,
    adapter: a.adapter,
    outcome: a.outcome,
    validity: a.validity,
    failure_bucket: a.failure_bucket ?? '',
    budget_limit: a.budget_limit ?? '',
    grades: JSON.stringify(a.grades),
    invariants: JSON.stringify(a.invariants),
    instruction: a.instruction,
    output: a.output,
    self_report: a.self_report,
    error: a.error,
    cost_usd: a.cost_usd,
    latency_ms: a.latency_ms,
    tool_call_count: a.tool_call_count,
    input_tokens: a.input_tokens,
    output_tokens: a.output_tokens,
    model: a.model,
    decoding: JSON.stringify(a.decoding),
    price_table_version: a.price_table_version,
    seed: a.seed,
    worker_id: a.worker_id,
    started_at: toChDateTime(a.started_at),
    finished_at: toChDateTime(a.finished_at),
    ingested_at: toChDateTime(ingestedAt),
    injected_faults: a.injected_faults ?? 0,
    injected_fault_kinds: a.injected_fault_kinds ?? [],
  }
}

export function toolCallsToRows(a: AttemptResult, ingestedAt: number): ToolCallRow[] {
  return a.tool_calls.map((c) => ({
    attempt_uid: a.attempt_uid,
    run_id: a.run_id,
    task_id: a.task_id,
    call_index: c.index,
    name: c.name,
    args: JSON.stringify(c.args ?? null),
    result: c.result === undefined ? '' : JSON.stringify(c.result),
    error: c.error ?? '',
    refused: c.refused ?? '',
    injected_fault: c.injected_fault ?? '',
    intercepted: c.intercepted === undefined ? '' : JSON.stringify(c.intercepted),
    retry_index: c.retry_index,
    started_ms: c.started_ms,
    duration_ms: c.duration_ms,
    ingested_at: toChDateTime(ingestedAt),
  }))
}

export function runToRow(input: RunRecordInput): RunRow {
  const r = RunRecord.parse(input)
  return {
    run_id: r.run_id,
    suite: r.suite,
    suite_path: r.suite_path,
    adapter: r.adapter,
    config_id: r.config_id,
    attempts: r.attempts,
    task_count: r.task_count,
    seed: r.seed,
    status: r.status,
    started_at: toChDateTime(r.started_at),
    finished_at: r.finished_at === null ? null : toChDateTime(r.finished_at),
    updated_at: toChDateTime(r.updated_at),
    price_table_version: r.price_table_version,
    price_table_date: r.price_table_date,
    suite_hash: r.suite_hash,
    judge_model: r.judge_model,
    judge_prompt_version: r.judge_prompt_version,
    stop_width: r.stop_width,
    stopped_tasks: r.stopped_tasks,
    isolation: r.isolation ?? '',
    redacted: r.redacted ? 1 : 0,
    guard_answers: r.guard_answers ? 1 : 0,
    audit_head: r.audit_head,
    audit_signature: r.audit_signature,
    planned_attempts: r.planned_attempts,
    final_stored: r.final_stored,
    missing_count: r.missing_count,
    missing_sample: r.missing_sample,
    harness_errors: r.harness_errors,
    fault_profile_hash: r.fault_profile_hash ?? '',
    fault_mode: r.fault_mode ?? '',
    fault_rate: r.fault_rate ?? 0,
    fault_sweep_id: r.fault_sweep_id ?? '',
    fault_profile: r.fault_profile ?? '',
  }
}

export function rowToRun(row: RunRow): RunRecord {
  return {
    run_id: row.run_id,
    suite: row.suite,
    suite_path: row.suite_path,
    adapter: row.adapter,
    config_id: row.config_id,
    attempts: Number(row.attempts),
    task_count: Number(row.task_count),
    seed: row.seed,
    status: row.status as RunRecord['status'],
    started_at: fromChDateTime(row.started_at),
    finished_at: row.finished_at === null ? null : fromChDateTime(row.finished_at),
    updated_at: fromChDateTime(row.updated_at),
    price_table_version: row.price_table_version,
    price_table_date: row.price_table_date,
    suite_hash: row.suite_hash,
    judge_model: row.judge_model,
    judge_prompt_version: row.judge_prompt_version,
    stop_width: Number(row.stop_width),
    stopped_tasks: row.stopped_tasks,
    // '' (no agent code, or a run stored before migration 9) reads back as absent
    ...(row.isolation ? { isolation: row.isolation } : {}),
    // rows written before migration 10 lack the columns: their defaults
    redacted: row.redacted === undefined ? true : Number(row.redacted) === 1,
    guard_answers: Number(row.guard_answers ?? 0) === 1,
    audit_head: row.audit_head ?? '',
    audit_signature: row.audit_signature ?? '',
    planned_attempts: Number(row.planned_attempts ?? 0),
    final_stored: Number(row.final_stored ?? 0),
    missing_count: Number(row.missing_count ?? 0),
    missing_sample: row.missing_sample ?? [],
    harness_errors: Number(row.harness_errors ?? 0),
    // a run without faults (or written before migration 8) has no fault stamps
    ...(row.fault_profile_hash
      ? {
          fault_profile_hash: row.fault_profile_hash,
          fault_mode: row.fault_mode,
          fault_rate: Number(row.fault_rate),
          fault_sweep_id: row.fault_sweep_id,
          fault_profile: row.fault_profile,
        }
      : {}),
  }
}

export function baselineToRow(b: BaselineRecord): BaselineRow {
  return {
    name: b.name,
    version: b.version,
    run_id: b.run_id,
    suite: b.suite,
    commit_hash: b.commit_hash,
    agent_version: b.agent_version,
    note: b.note,
    created_at: toChDateTime(b.created_at),
  }
}

export function rowToBaseline(row: BaselineRow): BaselineRecord {
  return {
    name: row.name,
    version: Number(row.version),
    run_id: row.run_id,
    suite: row.suite,
    commit_hash: row.commit_hash,
    agent_version: row.agent_version,
    note: row.note,
    created_at: fromChDateTime(row.created_at),
  }
}
