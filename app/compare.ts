/**
 * `forge compare`: two stored runs (or a baseline and a run) compared task by task within each
 * suite. Aggregates, tool sequences and the rank sums of per-attempt latency, tool calls and cost come
 * from ClickHouse (SQL over every attempt, nothing per attempt is loaded); the tests and flags from
 * core/compare.
 */
import { compareRuns, DEFAULT_THRESHOLDS, type CompareSide, type CompareThresholds, type Comparison } from '../core/compare.js'
import type { BaselineRecord, RunRecord } from '../core/contracts/index.js'
import { suiteFigures } from '../core/report.js'
import type { StoreReader } from '../store/clickhouse.js'
import { attemptRanks, findBaseline, getRun, listRuns, runAggregates, toolSequences } from '../store/repositories.js'
import { ConfigError } from '../stack/errors.js'
import { stampsOf } from './stats.js'

export interface CompareRequest {
  /** the reference run (a), or omitted with `baseline` */
  runA?: string
  /** the candidate run (b); default: the newest run */
  runB?: string
  /** `latest`, a baseline name, `name@version` or a commit hash: the baseline's run is a */
  baseline?: string
  thresholds?: Partial<CompareThresholds>
}

export interface CompareReport extends Comparison {
  a: RunRecord
  b: RunRecord
  /** the baseline a came from, when compared against one */
  baseline: BaselineRecord | null
}

export async function compareStoredRuns(reader: StoreReader, request: CompareRequest): Promise<CompareReport> {
  const runB = request.runB ?? (await newestRunId(reader))
  const b = await requireRun(reader, runB)
  let baseline: BaselineRecord | null = null
  let runA = request.runA
  if (request.baseline !== undefined) {
    if (runA !== undefined) throw new ConfigError('give either two runs or --baseline and one run, not both')
    baseline = (await findBaseline(reader, request.baseline, b.suite)) ?? null
    if (!baseline) {
      throw new ConfigError(
        request.baseline === 'latest'
          ? `no baseline is stored for suite "${b.suite}": set one with forge baseline set`
          : `no baseline matches "${request.baseline}" (a name, name@version or commit hash; see forge baseline list)`,
      )
    }
    runA = baseline.run_id
  }
  if (runA === undefined) throw new ConfigError('name the run to compare against (forge compare <run_a> <run_b>) or use --baseline')
  const a = await requireRun(reader, runA)
  const thresholds = { ...DEFAULT_THRESHOLDS, ...request.thresholds }
  const [sideA, sideB, ranks] = await Promise.all([sideOf(reader, a), sideOf(reader, b), attemptRanks(reader, a.run_id, b.run_id)])
  const comparison = compareRuns(sideA, sideB, ranks, thresholds)
  if (comparison.suites.length === 0) {
    // a CI gate must not pass because nothing was compared
    throw new ConfigError(
      `runs ${a.run_id} (suite ${a.suite}) and ${b.run_id} (suite ${b.suite}) share no suite: nothing to compare (suites are never pooled)`,
    )
  }
  return { ...comparison, a, b, baseline }
}

async function sideOf(reader: StoreReader, run: RunRecord): Promise<CompareSide> {
  const [aggregates, sequences] = await Promise.all([runAggregates(reader, run.run_id), toolSequences(reader, run.run_id)])
  return {
    run_id: run.run_id,
    suites: suiteFigures(aggregates.tasks, aggregates.suites),
    tool_sequences: sequences,
    stamps: stampsOf(run),
  }
}

async function requireRun(reader: StoreReader, runId: string): Promise<RunRecord> {
  const run = await getRun(reader, runId)
  if (!run) throw new ConfigError(`no run "${runId}" is stored (see forge runs list)`)
  return run
}

/** The id of the newest stored run; a ConfigError when there is none. */
export async function newestRunId(reader: StoreReader): Promise<string> {
  const [latest] = await listRuns(reader, 1)
  if (!latest) throw new ConfigError('no runs are stored yet: start one with forge run')
  return latest.run_id
}
