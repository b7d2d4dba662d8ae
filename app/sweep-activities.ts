/**
 * The sweep's activities, registered on every attempt worker (by its composition root: `forge
 * worker` and the worker child process) next to the attempt activities: plan a cell (load its suite
 * here, build its RunPlan exactly as `forge run` does), compare a finished cell with its baseline
 * (exactly as `forge compare --baseline` does) and publish the sweep's state for the ingester.
 */
import { readSetting } from '../config/index.js'
import { Context } from '@temporalio/activity'
import { ApplicationFailure } from '@temporalio/common'
import type { JetStreamClient } from '@nats-io/jetstream'
import { setTimeout as sleep } from 'node:timers/promises'
import { BaselineRecord, type RunPlan, type RunRecord } from '../core/contracts/index.js'
import type { SweepRecord, SweepSpec } from '../core/contracts/sweep.js'
import { canonicalJson } from '../core/faults.js'
import { baselineNameOf, cellVerdictOf, promotesBaseline, sweepCells, type CellParams } from '../core/sweep.js'
import { publishBaseline, resultsKey, type NatsConnection } from '../store/bus.js'
import { grantHolds, grantPlan, grantRefusal } from '../store/grants.js'
import { busReader } from '../store/bus-reader.js'
import { directReader, openClickHouse, type StoreReader } from '../store/clickhouse.js'
import { countAttempts, getRun, listBaselines } from '../store/repositories.js'
import { publishSweepRecord } from '../store/sweep-bus.js'
import { ConfigError } from '../stack/errors.js'
import { SuiteLoadError } from '../engine/errors.js'
import type { CellEvaluation, EvaluateCellInput, PlanCellInput, SweepActivities } from '../workers/sweep-activity-types.js'
import { compareStoredRuns } from './compare.js'
import { planRun } from './plan-run.js'
import { resolveConfig } from '../config/index.js'
import { getRunStats } from './stats.js'

export interface SweepActivityDeps {
  js: JetStreamClient
  /** a reader of the store (ClickHouse server, or the ingester over NATS); opened per evaluation */
  openReader: () => Promise<StoreReader>
  /** how long one evaluation waits for the ingester before it fails and Temporal retries it */
  ingestWaitMs?: number
  now?: () => number
  /** the key grants are checked and given under (store/grants.ts; default: the bus connection's results key) */
  resultsKey?: () => string | undefined
}

export function createSweepActivities(deps: SweepActivityDeps): SweepActivities {
  const now = deps.now ?? Date.now
  const key = deps.resultsKey ?? resultsKey
  /** the sweep's grant over its spec, and `cell` one of the cells that spec makes: else nothing of the input is used */
  const checkCell = (input: { sweep_id: string; spec: SweepSpec; cell: CellParams; grant?: string | undefined }, what: string): void => {
    if (!grantHolds(key(), 'sweep', input.spec, input.grant)) throw ApplicationFailure.nonRetryable(grantRefusal(`${what} of sweep ${input.sweep_id}`), 'GrantError')
    const planned = sweepCells(input.spec, input.sweep_id)[input.cell.cell]
    if (planned === undefined || canonicalJson(planned) !== canonicalJson(input.cell)) {
      throw ApplicationFailure.nonRetryable(`refused ${what} of sweep ${input.sweep_id}: cell ${input.cell.cell} is not a cell of its spec`, 'GrantError')
    }
  }
  return {
    async planSweepCell(input: PlanCellInput): Promise<RunPlan> {
      const { cell, spec } = input
      checkCell(input, `planning cell ${cell.cell}`)
      try {
        const { plan } = await planRun(resolveConfig(), {
          suite: cell.suite_ref,
          adapter: cell.adapter,
          adapter_config: cell.adapter_config,
          attempts: spec.attempts,
          seed: cell.seed,
          run_id: cell.run_id,
          ...(spec.tasks ? { task_ids: spec.tasks } : {}),
          ...(spec.price_table ? { price_table: spec.price_table } : {}),
          ...(spec.max_in_flight ? { max_in_flight: spec.max_in_flight } : {}),
          // workers and concurrency belong to `forge run`'s own processes; a sweep's cells run on the fleet
          workers: 1,
          concurrency: 1,
        })
        // the sweep's grant checked out: this cell's run is granted as forge run grants its own
        return grantPlan(plan, key())
      } catch (error) {
        if (error instanceof ConfigError || error instanceof SuiteLoadError) {
          throw ApplicationFailure.nonRetryable(`cell ${cell.cell} (${cell.suite_ref} × ${cell.adapter}${cell.model ? ` × ${cell.model}` : ''} × seed ${cell.seed}): ${error.message}`, 'ConfigError')
        }
        throw error
      }
    },

    async evaluateSweepCell(input: EvaluateCellInput): Promise<CellEvaluation> {
      const granted = key() !== undefined
      if (granted) {
        if (input.spec === undefined || input.cell === undefined) throw ApplicationFailure.nonRetryable(grantRefusal(`evaluating run ${input.run_id}`), 'GrantError')
        checkCell({ sweep_id: input.sweep_id, spec: input.spec, cell: input.cell, grant: input.grant }, `evaluating cell ${input.cell.cell}`)
      }
      const reader = await deps.openReader()
      try {
        const run = await waitForRun(reader, input, deps.ingestWaitMs ?? 60_000)
        if (granted && input.spec !== undefined && input.cell !== undefined) {
          // what would be promoted, and as which baseline, follows from the granted spec, its cell and the stored (signed) run
          const { spec, cell } = input
          const baseline = baselineNameOf(spec.baseline, { name: spec.name, suite: run.suite, adapter: cell.adapter, model: cell.model, seed: cell.seed })
          if (input.run_id !== cell.run_id || input.baseline !== baseline || input.promote !== promotesBaseline(spec, cell)) {
            throw ApplicationFailure.nonRetryable(`refused evaluating run ${input.run_id}: its run, baseline or promotion is not the one its sweep's spec makes for cell ${cell.cell}`, 'GrantError')
          }
        }
        const stats = await getRunStats(reader, input.run_id)
        const base = {
          attempts: stats.attempts,
          pass_rate: stats.suite_rate,
          harness_errors: stats.failure_buckets['harness_error'] ?? 0,
        }
        // the baseline as it was when the sweep started: never a version this sweep promoted (another
        // seed's cell, or this cell on a retry)
        const versions = await listBaselines(reader, { name: input.baseline, limit: 1000 })
        const baseline = versions.filter((b) => b.created_at < input.sweep_started_at).sort((a, b) => b.version - a.version)[0]
        let evaluation: CellEvaluation
        if (baseline === undefined) {
          evaluation = { ...base, verdict: cellVerdictOf({ runFailed: false, baselineFound: false, regression: false }), baseline_version: null, baseline_run_id: '', baseline_pass_rate: null, findings: null, promoted_version: null }
        } else {
          const comparison = await compareStoredRuns(reader, { baseline: `${baseline.name}@${baseline.version}`, runB: input.run_id })
          evaluation = {
            ...base,
            verdict: cellVerdictOf({ runFailed: false, baselineFound: true, regression: comparison.regression }),
            baseline_version: baseline.version,
            baseline_run_id: baseline.run_id,
            baseline_pass_rate: comparison.suites.find((s) => s.suite === input.suite)?.a.rate ?? null,
            findings: comparison.findings,
            promoted_version: null,
          }
        }
        if (input.promote && evaluation.verdict !== 'regressed') {
          evaluation.promoted_version = await promote(reader, input, deps.js, now)
        }
        return evaluation
      } finally {
        await reader.close()
      }
    },

    async recordSweep(record: SweepRecord, grant?: string): Promise<void> {
      if (!grantHolds(key(), 'sweep', record.spec, grant)) throw ApplicationFailure.nonRetryable(grantRefusal(`the record of sweep ${record.sweep_id}`), 'GrantError')
      await publishSweepRecord(deps.js, record)
    },
  }
}

/** Waits until the store holds every attempt the run published and its final record; retryable when it does not yet. */
async function waitForRun(reader: StoreReader, input: EvaluateCellInput, waitMs: number): Promise<RunRecord> {
  const deadline = Date.now() + waitMs
  for (;;) {
    const [stored, run] = await Promise.all([countAttempts(reader, input.run_id), getRun(reader, input.run_id)])
    if (stored >= input.published && run !== undefined && run.status !== 'running') return run
    if (Date.now() > deadline) {
      // retryable: the workflow's policy tries again with backoff while the ingester catches up
      throw ApplicationFailure.retryable(
        `the store holds ${stored} of ${input.published} attempts of run ${input.run_id} (run record: ${run?.status ?? 'missing'}); the ingester has not caught up`,
        'IngestPending',
      )
    }
    heartbeat()
    await sleep(250)
  }
}

/**
 * Tags the run as the baseline's next version. Idempotent: a retried activity that finds the run
 * already the newest version returns it; a retry before the first publish was stored republishes
 * the same version, which JetStream drops as a duplicate (msg id baseline/<name>/<version>).
 */
async function promote(reader: StoreReader, input: EvaluateCellInput, js: JetStreamClient, now: () => number): Promise<number> {
  const [newest] = await listBaselines(reader, { name: input.baseline, limit: 1 })
  if (newest?.run_id === input.run_id) return newest.version
  const run = await getRun(reader, input.run_id)
  const record = BaselineRecord.parse({
    name: input.baseline,
    version: (newest?.version ?? 0) + 1,
    run_id: input.run_id,
    suite: input.suite,
    commit_hash: readSetting('commit').toLowerCase(),
    agent_version: readSetting('agentVersion') ?? run?.config_id ?? '',
    note: `promoted by sweep ${input.sweep_id}`,
    created_at: now(),
  })
  await publishBaseline(js, record)
  return record.version
}

/**
 * The sweep activities of a worker process, for `WorkerOptions.extraActivities`: the store is read
 * from FORGE_CLICKHOUSE_URL when set (fleet), else through the ingester over the worker's own NATS
 * connection (the embedded store's owner answers store queries).
 */
export function sweepActivitiesFor(env: NodeJS.ProcessEnv = process.env): (deps: { nc: NatsConnection; js: JetStreamClient }) => SweepActivities {
  const url = readSetting('clickhouseUrl', env)
  return ({ nc, js }) =>
    createSweepActivities({
      js,
      openReader: url ? async () => directReader(await openClickHouse({ kind: 'server', url })) : () => Promise.resolve(busReader(nc)),
    })
}

function heartbeat(): void {
  try {
    Context.current().heartbeat()
  } catch {
    // outside an activity (unit tests): nothing to heartbeat
  }
}
