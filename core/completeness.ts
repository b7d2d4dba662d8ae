/**
 * Completeness of a run: what was planned against what the store holds. A run ends `completed` only
 * when every planned attempt is stored exactly once; `incomplete` when some are missing (its report
 * names them); `degraded` when harness errors exceed 2% of its attempts (seed aeh: such a run is not
 * a valid measurement, and the report says so). Pure: the workflow and the CLI both decide with it.
 */

/** Harness errors above this share of a run's attempts make the run `degraded`. */
export const HARNESS_ERROR_LIMIT = 0.02

/** How many missing attempts a report lists by name (the count is always exact). */
export const MISSING_LISTED = 1000

/** One planned attempt, by task and attempt index. */
export interface AttemptRef {
  task_id: string
  attempt: number
}

/** The store against the plan, as the completeness check found it. */
export interface CompletenessReport {
  planned: number
  /** planned attempts the store holds (each counted once) */
  stored: number
  missing_count: number
  /** the first MISSING_LISTED missing attempts, in plan order */
  missing: AttemptRef[]
  /** rows beyond one per attempt_uid, read with FINAL: always 0 unless the store's dedup broke */
  doubled: number
  harness_errors: number
}

/** What RunWorkflow found at its end: the last report, how many attempts it re-ran, or why it could not check. */
export interface RunCompleteness extends CompletenessReport {
  /** attempts re-run because their result was missing */
  rerun: number
  /** the store could not be checked (the reason); the run is then `incomplete` */
  unchecked?: string
}

export type FinalRunStatus = 'completed' | 'degraded' | 'incomplete'

/**
 * What a run planned: `attempts` per task (attempt indices 0 … attempts − 1), except the tasks in
 * `attempts_by_task`, which planned that many (a sequential run's tasks that stopped early: exactly
 * the attempts its workflow scheduled, 0 … n − 1).
 */
export interface PlannedAttempts {
  task_ids: readonly string[]
  attempts: number
  attempts_by_task?: Readonly<Record<string, number>>
}

/** The attempts planned for one task. */
export function plannedFor(plan: PlannedAttempts, taskId: string): number {
  return plan.attempts_by_task?.[taskId] ?? plan.attempts
}

/** The attempts planned for the whole run. */
export function plannedTotal(plan: PlannedAttempts): number {
  return plan.task_ids.reduce((sum, taskId) => sum + plannedFor(plan, taskId), 0)
}

/** The planned attempts whose index is not in `stored` (per task), in plan order. */
export function missingAttempts(
  plan: PlannedAttempts,
  stored: ReadonlyMap<string, ReadonlySet<number>>,
  listed = MISSING_LISTED,
): { count: number; missing: AttemptRef[]; stored: number } {
  const missing: AttemptRef[] = []
  let count = 0
  let storedCount = 0
  for (const taskId of plan.task_ids) {
    const have = stored.get(taskId)
    const planned = plannedFor(plan, taskId)
    for (let attempt = 0; attempt < planned; attempt++) {
      if (have?.has(attempt)) {
        storedCount++
        continue
      }
      count++
      if (missing.length < listed) missing.push({ task_id: taskId, attempt })
    }
  }
  return { count, missing, stored: storedCount }
}

/** completed, degraded (harness errors over 2%) or incomplete (anything missing, or not checked). */
export function finalRunStatus(c: Pick<RunCompleteness, 'missing_count' | 'stored' | 'harness_errors' | 'unchecked'>): FinalRunStatus {
  if (c.unchecked !== undefined || c.missing_count > 0) return 'incomplete'
  if (c.stored > 0 && c.harness_errors / c.stored > HARNESS_ERROR_LIMIT) return 'degraded'
  return 'completed'
}

/** `echo#3` — how a missing attempt is named in messages and on the run record. */
export function attemptRefText(ref: AttemptRef): string {
  return `${ref.task_id}#${ref.attempt}`
}

/** "stored 145/200; missing: echo#3, echo#7, … (and 50 more)" — the line an incomplete run ends with. */
export function describeCompleteness(c: Pick<RunCompleteness, 'planned' | 'stored' | 'missing_count' | 'missing' | 'unchecked'>, shown = 10): string {
  if (c.unchecked !== undefined) return `stored ${c.stored}/${c.planned}; the store could not be checked: ${c.unchecked}`
  const head = `stored ${c.stored}/${c.planned}`
  if (c.missing_count === 0) return head
  const names = c.missing.slice(0, shown).map(attemptRefText)
  const more = c.missing_count - names.length
  return `${head}; missing: ${names.join(', ')}${more > 0 ? ` (and ${more} more)` : ''}`
}

/** "harness errors in 7 of 200 attempts (3.5%, over the 2% limit)" — the banner of a degraded run. */
export function describeHarnessErrors(c: Pick<RunCompleteness, 'stored' | 'harness_errors'>): string {
  const share = c.stored === 0 ? 0 : c.harness_errors / c.stored
  return `harness errors in ${c.harness_errors} of ${c.stored} attempts (${(share * 100).toFixed(1)}%, over the ${HARNESS_ERROR_LIMIT * 100}% limit): this run is not a valid measurement`
}

/** What a run record says about completeness (core/contracts RunRecord's fields). */
export interface RunCompletenessFields {
  status: string
  attempts: number
  task_count: number
  planned_attempts: number
  final_stored: number
  missing_count: number
  missing_sample: readonly string[]
  harness_errors: number
  /** > 0: a sequential run, whose tasks may stop before `attempts` */
  stop_width: number
}

/**
 * The first line of any statistics printed over a run that is not whole: in progress, cancelled,
 * failed, incomplete, degraded, or simply holding fewer attempts than planned. Undefined for a
 * completed run whose every planned attempt is stored.
 */
export function partialRunNotice(run: RunCompletenessFields | undefined, storedAttempts: number): string | undefined {
  if (run === undefined) return storedAttempts > 0 ? `PARTIAL: the run's record is not stored; statistics over the ${storedAttempts} attempts found` : undefined
  const planned = run.planned_attempts > 0 ? run.planned_attempts : run.attempts * run.task_count
  const sequential = run.stop_width > 0
  const of = sequential ? `${storedAttempts} attempts stored (sequential: at most ${planned})` : `stored ${storedAttempts}/${planned} attempts`
  switch (run.status) {
    case 'running':
      return `PARTIAL: run in progress, ${of} so far`
    case 'cancelled':
    case 'failed':
      return `PARTIAL: run ${run.status}, ${of}`
    case 'incomplete': {
      const names = run.missing_sample.slice(0, 10)
      const more = run.missing_count - names.length
      return `INCOMPLETE: stored ${run.final_stored}/${planned}; missing: ${names.join(', ')}${more > 0 ? ` (and ${more} more)` : ''}`
    }
    case 'degraded':
      return `DEGRADED: ${describeHarnessErrors({ stored: run.final_stored > 0 ? run.final_stored : storedAttempts, harness_errors: run.harness_errors })}`
    default:
      return !sequential && storedAttempts < planned ? `PARTIAL: ${of}` : undefined
  }
}
