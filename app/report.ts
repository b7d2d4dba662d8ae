/**
 * `forge report`: one self-contained HTML file per run. Every figure is an aggregate read from
 * ClickHouse (the same `getRunStats` as `forge stats`, histograms binned in SQL, fault and judge
 * counts grouped in SQL) plus a bounded list of failed attempts; nothing loads a whole run. Each
 * listed failed attempt links to its trace page, written beside the report.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { basename, dirname, extname, join, relative } from 'node:path'
import type { RunRecord } from '../core/contracts/index.js'
import { agreementFromCounts, harnessBanner, logHistogram, recoveryFigures, type AgreementFigures, type HarnessBanner, type Histogram, type RecoveryFigures } from '../core/run-report.js'
import { buildTraceView } from '../core/span-tree.js'
import { DEFAULT_KS } from '../core/report.js'
import type { StoreReader } from '../store/clickhouse.js'
import { getStoredTraces, latestGradingVersion, tier2Results } from '../store/grading-repositories.js'
import {
  agreementCounts,
  attemptsByFaultCount,
  costHistogram,
  failedAttempts,
  faultKinds,
  latencyHistogram,
  runModels,
  type AttemptListEntry,
  type FaultKindRow,
} from '../store/report-queries.js'
import { ConfigError } from '../stack/errors.js'
import { compareStoredRuns, newestRunId, type CompareReport } from './compare.js'
import { renderReport } from './render/report-html.js'
import { renderTrace } from './render/trace-html.js'
import { getRunStats, type RunStats } from './stats.js'
import { getRecoveryCurve } from './fault-stats.js'
import type { RecoveryCurve } from '../core/fault-stats.js'

export interface ReportRequest {
  /** default: the newest run */
  runId?: string
  /** compare against this run (a) … */
  compare?: string
  /** … or against a baseline (latest, a name, name@version, a commit hash) */
  baseline?: string
  ks?: readonly number[]
  /** failed attempts listed in the report (default 500); the rest are counted */
  maxFailed?: number
  /** when the report was generated (ms since the epoch) */
  now: number
}

export interface RunStampsView {
  suite: string
  suite_hash: string
  adapter: string
  config_id: string
  models: { model: string; n: number }[]
  price_table: string
  /** the fault profile: what was injected, or that nothing was */
  fault_profile: string
  seed: string
  status: string
  started_at: number | null
  finished_at: number | null
  planned_attempts: number | null
  judge: string
}

export interface FailedAttemptView extends AttemptListEntry {
  /** the trace page, relative to the report; absent when no page was written for it */
  trace_href?: string
}

export interface ReportModel {
  generated_at: number
  run_id: string
  stats: RunStats
  stamps: RunStampsView
  banner: HarnessBanner | null
  latency: Histogram
  cost: Histogram
  recovery: RecoveryFigures | null
  /** the run belongs to a fault sweep (`forge run --fault-sweep`): the sweep's recovery curve, one point per fail rate */
  sweep: RecoveryCurve | null
  fault_kinds: FaultKindRow[]
  /** null when nothing in the run was judged */
  agreement: { grading_version: number; sources: AgreementFigures[] } | null
  comparison: CompareReport | null
  failed: { total: number; attempts: FailedAttemptView[] }
}

/** Everything the report shows, read from the store. */
export async function buildRunReport(reader: StoreReader, request: ReportRequest): Promise<ReportModel> {
  if (request.compare !== undefined && request.baseline !== undefined) throw new ConfigError('give either --compare <run> or --baseline <ref>, not both')
  const runId = request.runId ?? (await newestRunId(reader))
  const stats = await getRunStats(reader, runId, request.ks ?? DEFAULT_KS)
  if (!stats.run && stats.attempts === 0) throw new ConfigError(`no run "${runId}" is stored (see forge runs list)`)
  const gradingVersion = await latestGradingVersion(reader, runId)
  const [models, latency, cost, faultCounts, kinds, agreementRows, failed, comparison] = await Promise.all([
    runModels(reader, runId),
    latencyHistogram(reader, runId),
    costHistogram(reader, runId),
    attemptsByFaultCount(reader, runId),
    faultKinds(reader, runId),
    agreementCounts(reader, runId, gradingVersion),
    failedAttempts(reader, runId, request.maxFailed ?? 500),
    request.compare !== undefined || request.baseline !== undefined
      ? compareStoredRuns(reader, request.baseline !== undefined ? { baseline: request.baseline, runB: runId } : { runA: request.compare!, runB: runId })
      : Promise.resolve(null),
  ])
  // a run of a fault sweep: the curve is drawn from the sweep's runs (stamped fault_sweep_id and fault_rate)
  const sweepId = stats.run?.fault_sweep_id
  const sweep = sweepId ? await getRecoveryCurve(reader, sweepId) : null
  const sources = agreementFromCounts(agreementRows)
  const judged = sources.some((s) => s.agreement.n > 0 || s.judge_only > 0) || (stats.run?.judge_model ?? '') !== ''
  return {
    generated_at: request.now,
    run_id: runId,
    stats,
    stamps: stampsView(stats.run, models, kinds),
    banner: harnessBanner(stats.failure_buckets['harness_error'] ?? 0, stats.attempts),
    latency: logHistogram(latency),
    cost: logHistogram(cost),
    recovery: recoveryFigures(faultCounts),
    sweep,
    fault_kinds: kinds,
    agreement: judged ? { grading_version: gradingVersion, sources } : null,
    comparison,
    failed,
  }
}

function stampsView(run: RunRecord | undefined, models: { model: string; n: number }[], kinds: FaultKindRow[]): RunStampsView {
  return {
    suite: run?.suite ?? '',
    suite_hash: run?.suite_hash ?? '',
    adapter: run?.adapter ?? '',
    config_id: run?.config_id ?? '',
    models,
    price_table: run === undefined || run.price_table_version === '' ? 'not recorded' : `${run.price_table_version} (${run.price_table_date || 'no date'})`,
    // the profile stamped on the run (issue 13), and what the tool calls show
    fault_profile: run?.fault_profile_hash
      ? `${run.fault_profile_hash.slice(0, 12)} (${run.fault_mode ?? ''}, rate ${run.fault_rate ?? 0}${run.fault_sweep_id ? `, sweep ${run.fault_sweep_id}` : ''})${kinds.length === 0 ? '' : `; tool calls hit: ${kinds.map((k) => `${k.fault} ×${k.calls}`).join(', ')}`}`
      : kinds.length === 0
        ? 'none (no fault was injected)'
        : `injected: ${kinds.map((k) => `${k.fault} ×${k.calls}`).join(', ')} (profile not stamped on the run)`,
    seed: run?.seed ?? '',
    status: run?.status ?? 'no run record',
    started_at: run?.started_at ?? null,
    finished_at: run?.finished_at ?? null,
    // what the workflow planned (a sequential run's early stops plan fewer); runs before the completeness check lack it
    planned_attempts: run ? (run.planned_attempts > 0 ? run.planned_attempts : run.attempts * run.task_count) : null,
    judge: run === undefined || run.judge_model === '' ? 'none' : `${run.judge_model}${run.judge_prompt_version ? ` (prompt ${run.judge_prompt_version})` : ''}`,
  }
}

export interface WriteReportOptions extends ReportRequest {
  /** the report file */
  out: string
  /** trace pages written for failed attempts (default 200; 0 = none), into `<report name>-traces/` */
  maxTraces?: number
}

export interface WrittenReport {
  run_id: string
  out: string
  bytes: number
  traces_dir: string | null
  traces_written: number
  failed_attempts: number
  failed_listed: number
  attempts: number
  harness_banner: boolean
}

/** Builds the report, writes trace pages for the first failed attempts, and writes the report file. */
export async function writeRunReport(reader: StoreReader, opts: WriteReportOptions): Promise<WrittenReport> {
  if (extname(opts.out).toLowerCase() !== '.html' && extname(opts.out).toLowerCase() !== '.htm') {
    throw new ConfigError(`--out must name an .html file, got "${opts.out}"`)
  }
  const model = await buildRunReport(reader, opts)
  const maxTraces = opts.maxTraces ?? 200
  const wanted = model.failed.attempts.slice(0, maxTraces)
  const tracesDir = join(dirname(opts.out), `${basename(opts.out, extname(opts.out))}-traces`)
  let written = 0
  if (wanted.length > 0) {
    mkdirSync(tracesDir, { recursive: true })
    const reportHref = relative(tracesDir, opts.out).split('\\').join('/')
    // bounded batches: a trace may be up to ~1 MB
    for (let i = 0; i < wanted.length; i += 25) {
      const batch = wanted.slice(i, i + 25)
      const uids = batch.map((a) => a.attempt_uid)
      const [traces, tier2] = await Promise.all([getStoredTraces(reader, model.run_id, uids), tier2Results(reader, model.run_id, 1, uids)])
      const byUid = new Map(traces.map((t) => [t.attempt_uid, t]))
      for (const entry of batch) {
        const stored = byUid.get(entry.attempt_uid)
        if (!stored) continue
        const file = traceFileName(entry)
        const view = buildTraceView(stored, {
          model: entry.model,
          cost_usd: entry.cost_usd,
          latency_ms: entry.latency_ms,
          input_tokens: entry.input_tokens,
          output_tokens: entry.output_tokens,
          tier2: tier2.get(entry.attempt_uid) ?? null,
        })
        writeFileSync(join(tracesDir, file), renderTrace(view, { backHref: reportHref, backLabel: `report of run ${model.run_id}` }))
        entry.trace_href = `${basename(tracesDir)}/${file}`
        written++
      }
    }
  }
  const html = renderReport(model)
  mkdirSync(dirname(opts.out), { recursive: true })
  writeFileSync(opts.out, html)
  return {
    run_id: model.run_id,
    out: opts.out,
    bytes: Buffer.byteLength(html),
    traces_dir: written > 0 ? tracesDir : null,
    traces_written: written,
    failed_attempts: model.failed.total,
    failed_listed: model.failed.attempts.length,
    attempts: model.stats.attempts,
    harness_banner: model.banner !== null,
  }
}

/** A file name for an attempt's trace page: task and attempt, made safe, plus the config when it is not the only one. */
export function traceFileName(entry: Pick<AttemptListEntry, 'task_id' | 'attempt' | 'config_id'>): string {
  const safe = (s: string) => s.replace(/[^A-Za-z0-9._-]/g, '_')
  return `${safe(entry.task_id)}-${entry.attempt}-${safe(entry.config_id)}.html`
}
