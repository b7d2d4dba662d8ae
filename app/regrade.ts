/**
 * `forge regrade`: grades a run's stored traces again with the current graders, invariants and
 * deterministic metrics — no agent runs again — into a new grading version. The new version's
 * grades are new rows (attempt_grades, metrics, judgements); the original attempt rows stay as
 * they were. Attempts whose stored evidence cannot support the current graders are listed, not guessed.
 */
import type { AttemptRegrade, StoredTrace, Tier2Result } from '../core/contracts/index.js'
import { envQueryKey, type EnvironmentView } from '../core/env-diff.js'
import { envQueriesOf, fixtureRefsOf } from '../core/graders/index.js'
import { attemptKeyOf } from '../core/identity.js'
import type { LoadedSuite } from '../core/plugins.js'
import { countRegrades, getStoredTraces, latestGradingVersion, storedTraceSizes, tier2Results } from '../store/grading-repositories.js'
import { countAttempts, getRun } from '../store/repositories.js'
import type { ForgeConfig } from '../stack/config.js'
import { ConfigError } from '../stack/errors.js'
import { gradeAttempt, judgementOf } from '../engine/grading-pipeline.js'
import { loadSuite } from '../engine/suite-loader.js'
import { writeGradingRecords } from './grading-store.js'
import { openReader } from './store-access.js'

export interface RegradeChange {
  attempt_uid: string
  task_id: string
  from: string
  to: string
}

export interface RegradeReport {
  run_id: string
  suite: string
  suite_path: string
  /** the new grading version (the original grades are version 1) */
  grading_version: number
  /** attempts of the run, traces stored, attempts graded again */
  attempts: number
  stored_traces: number
  regraded: number
  /** attempts that could not be graded again, and why */
  not_regradable: { attempt_uid: string; task_id: string; reason: string }[]
  /** outcome counts of the regraded attempts: as originally graded, and now */
  before: Record<string, number>
  after: Record<string, number>
  /** attempts whose outcome changed (at most 100 listed; `changed` counts them all) */
  changed: number
  changes: RegradeChange[]
}

export interface RegradeOptions {
  runId: string
  now?: () => number
  /** where a `judge` grader finds its endpoint and model (default process.env) */
  env?: NodeJS.ProcessEnv
  /** store the new version (default true); false only reports what would change */
  write?: boolean
}

/** Bytes of stored traces read per store query (the ingester answers queries over NATS, 8 MB per message). */
const BATCH_BYTES = 4 * 1024 * 1024

export async function regradeRun(config: ForgeConfig, opts: RegradeOptions): Promise<RegradeReport> {
  const now = opts.now ?? Date.now
  const reader = await openReader(config)
  let report: RegradeReport
  let regrades: AttemptRegrade[]
  try {
    const run = await getRun(reader, opts.runId)
    if (!run) throw new ConfigError(`no run "${opts.runId}" is stored (see forge runs list)`)
    const suite = await loadSuite(run.suite_path)
    const version = (await latestGradingVersion(reader, run.run_id)) + 1
    const attempts = await countAttempts(reader, run.run_id)
    const sizes = await storedTraceSizes(reader, run.run_id)
    if (sizes.length === 0) {
      throw new ConfigError(`run ${run.run_id} has no stored traces (it ran before traces were stored): nothing to regrade`)
    }
    regrades = []
    const notRegradable: RegradeReport['not_regradable'] = []
    const originals = new Map<string, string>()
    for (const batch of batches(sizes)) {
      // tier 2 localized the trace against its golden, whatever graded it: carried over while the attempt still fails
      const previousTier2 = await tier2Results(reader, run.run_id, version - 1, batch)
      for (const stored of await getStoredTraces(reader, run.run_id, batch)) {
        originals.set(stored.attempt_uid, stored.outcome)
        const graded = await regradeOne(suite, stored, version, now(), opts.env ?? process.env, previousTier2.get(stored.attempt_uid))
        if ('reason' in graded) notRegradable.push({ attempt_uid: stored.attempt_uid, task_id: stored.task_id, reason: graded.reason })
        else regrades.push(graded.regrade)
      }
    }
    const changes = regrades.filter((r) => originals.get(r.attempt_uid) !== r.outcome).map((r) => ({ attempt_uid: r.attempt_uid, task_id: r.task_id, from: originals.get(r.attempt_uid) ?? '', to: r.outcome }))
    report = {
      run_id: run.run_id,
      suite: run.suite,
      suite_path: run.suite_path,
      grading_version: version,
      attempts,
      stored_traces: sizes.length,
      regraded: regrades.length,
      not_regradable: notRegradable,
      before: tally(regrades.map((r) => originals.get(r.attempt_uid) ?? '')),
      after: tally(regrades.map((r) => r.outcome)),
      changed: changes.length,
      changes: changes.slice(0, 100),
    }
  } finally {
    await reader.close()
  }
  if ((opts.write ?? true) && regrades.length > 0) {
    const expected = regrades.length
    await writeGradingRecords(config, { regrades }, async (r) => (await countRegrades(r, report.run_id, report.grading_version)) >= expected, now)
  }
  return report
}

/** Attempt uids in batches of at most BATCH_BYTES of stored trace. */
function batches(sizes: readonly { attempt_uid: string; bytes: number }[]): string[][] {
  const out: string[][] = []
  let current: string[] = []
  let bytes = 0
  for (const { attempt_uid: uid, bytes: size } of sizes) {
    if (current.length > 0 && bytes + size > BATCH_BYTES) {
      out.push(current)
      current = []
      bytes = 0
    }
    current.push(uid)
    bytes += size
  }
  if (current.length > 0) out.push(current)
  return out
}

function tally(values: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)))
}

/** One stored attempt graded with the suite's current graders; a reason when its evidence cannot support them. */
export async function regradeOne(
  suite: LoadedSuite,
  stored: StoredTrace,
  gradingVersion: number,
  at: number,
  processEnv: NodeJS.ProcessEnv,
  /** the attempt's tier-2 result at the previous grading version, if any */
  previousTier2?: Tier2Result,
): Promise<{ regrade: AttemptRegrade } | { reason: string }> {
  const task = suite.tasks.find((t) => t.id === stored.task_id)
  if (task === undefined) return { reason: `suite ${suite.name} no longer has task "${stored.task_id}"` }
  if (stored.failure_bucket === 'harness_error' && stored.grades.length === 0) {
    return { reason: 'the original attempt was a harness error: the agent left nothing graded to grade again' }
  }
  const env = (stored.env ?? undefined) as EnvironmentView | undefined
  const needsEnv = task.outcome_graders.some((spec) => fixtureRefsOf(spec).length > 0)
  if (needsEnv && env === undefined) {
    return { reason: `the task's graders read its environment, but the stored trace has no environment view${stored.truncated.includes('env') ? ' (cut to fit the message limit)' : ''}` }
  }
  const missing = envQueriesOf(task.outcome_graders).filter((query) => env?.queries[envQueryKey(query)] === undefined)
  if (missing.length > 0) {
    return { reason: `the graders ask ${missing.length} query(ies) that were not run against the end state, which is gone: ${missing.map((q) => `${q.fixture}: ${q.sql}`).join('; ')}` }
  }
  const graded = await gradeAttempt({ suite, task, trace: stored.trace, env, processEnv })
  // a regrade asks no judge: tier 2 is carried over from the previous version, else not run (and the attempt flagged)
  const planned = graded.judging.tier2
  const carried = planned.status === 'not_run' && previousTier2 !== undefined && ['localized', 'not_localized', 'errored'].includes(previousTier2.status)
  const key = attemptKeyOf(stored)
  const judgement = judgementOf({ key, task, trace: stored.trace, graded, tier2: carried ? previousTier2 : planned, gradingVersion, revision: 1, createdAt: at })
  return {
    regrade: {
      ...key,
      grading_version: gradingVersion,
      outcome: graded.verdict.outcome,
      validity: graded.verdict.validity,
      failure_bucket: graded.verdict.failure_bucket,
      grades: graded.grades,
      invariants: graded.invariants,
      error: graded.harnessError ?? '',
      metrics: graded.deterministic,
      judgement,
      regraded_at: at,
    },
  }
}
