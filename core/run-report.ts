/**
 * Pure parts of a run report (`forge report`): the harness-error banner, log-scale histograms from
 * binned counts, recovery figures under injected faults, and judge agreement from aggregated counts.
 * The store aggregates (store/report-queries.ts); these turn aggregates into what a report shows.
 */
import { cohensKappa, type Agreement, type AgreementPair } from './agreement.js'
import { rateOf, type Rate } from './stats.js'

/** Above this share of harness errors a report leads with a banner: the figures describe the harness, not the agent. */
export const HARNESS_ERROR_BANNER_SHARE = 0.02

export interface HarnessBanner {
  harness_errors: number
  attempts: number
  share: number
  /** every attempt was a harness error */
  total: boolean
  message: string
}

/** The banner a report shows when harness errors exceed 2% of its attempts; null otherwise. */
export function harnessBanner(harnessErrors: number, attempts: number): HarnessBanner | null {
  if (attempts === 0 || harnessErrors / attempts <= HARNESS_ERROR_BANNER_SHARE) return null
  const share = harnessErrors / attempts
  const total = harnessErrors === attempts
  const message = total
    ? `Every attempt (${attempts} of ${attempts}) was a harness error: the agent was never measured, and none of the rates below say anything about it.`
    : `${harnessErrors} of ${attempts} attempts (${(share * 100).toFixed(1)}%) were harness errors — above the 2% the figures tolerate: ` +
      'they count as failures below, so rates understate the agent. Fix the harness (see the failed attempts) and run again.'
  return { harness_errors: harnessErrors, attempts, share, total, message }
}

export interface HistogramBin {
  /** lower edge (inclusive) and upper edge (exclusive); both 0 for the "≤ 0" bin */
  low: number
  high: number
  n: number
}

export interface Histogram {
  bins: HistogramBin[]
  /** values that were unavailable (not counted in any bin) */
  missing: number
  total: number
}

/**
 * A contiguous log-scale histogram from counts per bin index (bin b = [10^(b/steps), 10^((b+1)/steps))),
 * empty bins between filled ones included so bars stand where they belong; values ≤ 0 first.
 */
export function logHistogram(rows: { steps: number; bins: readonly { bin: number; n: number }[]; zero: number; missing: number }): Histogram {
  const bins: HistogramBin[] = []
  if (rows.zero > 0) bins.push({ low: 0, high: 0, n: rows.zero })
  if (rows.bins.length > 0) {
    const counts = new Map(rows.bins.map((b) => [b.bin, b.n]))
    const first = Math.min(...counts.keys())
    const last = Math.max(...counts.keys())
    for (let b = first; b <= last; b++) {
      bins.push({ low: 10 ** (b / rows.steps), high: 10 ** ((b + 1) / rows.steps), n: counts.get(b) ?? 0 })
    }
  }
  return { bins, missing: rows.missing, total: bins.reduce((t, b) => t + b.n, 0) }
}

export interface RecoveryPoint extends Rate {
  /** injected faults the attempt met; the last point is "this many or more" when `or_more` */
  faults: number
  or_more: boolean
}

export interface RecoveryFigures {
  /** attempts that met at least one injected fault */
  faulted: Rate
  /** attempts without one, for contrast */
  clean: Rate
  /** the pass rate by how many faults an attempt met: 0, 1, 2, … up to `cap` (the last bucket `cap`+) */
  curve: RecoveryPoint[]
}

/** Recovery under fault injection, from attempts counted by faults met; null when no fault was injected. */
export function recoveryFigures(rows: readonly { faults: number; n: number; k: number }[], cap = 5): RecoveryFigures | null {
  const faulted = rows.filter((r) => r.faults > 0)
  if (faulted.length === 0) return null
  const sum = (rs: readonly { n: number; k: number }[]) => rs.reduce((t, r) => ({ n: t.n + r.n, k: t.k + r.k }), { n: 0, k: 0 })
  const f = sum(faulted)
  const c = sum(rows.filter((r) => r.faults === 0))
  const maxFaults = Math.max(...rows.map((r) => r.faults))
  const curve: RecoveryPoint[] = []
  for (let faults = 0; faults <= Math.min(cap, maxFaults); faults++) {
    const orMore = faults === cap && maxFaults > cap
    const group = sum(rows.filter((r) => (orMore ? r.faults >= faults : r.faults === faults)))
    curve.push({ faults, or_more: orMore, ...rateOf(group.k, group.n) })
  }
  return { faulted: rateOf(f.k, f.n), clean: rateOf(c.k, c.n), curve }
}

export interface AgreementFigures {
  source: 'judge_grader' | 'correctness_metric'
  agreement: Agreement
  /** attempts judged by this source that had no programmatic grade (outside the overlap set) */
  judge_only: number
}

/**
 * Judge agreement from aggregated counts (store `agreementCounts`): Cohen's κ per judge source on
 * the overlap set, the same figures `forge judge-agreement` computes from single attempts.
 */
export function agreementFromCounts(rows: readonly { programmatic: number; judge_grader: number; correctness: number; n: number }[]): AgreementFigures[] {
  const pairs = { judge_grader: [] as AgreementPair[], correctness_metric: [] as AgreementPair[] }
  const judgeOnly = { judge_grader: 0, correctness_metric: 0 }
  for (const row of rows) {
    const add = (source: 'judge_grader' | 'correctness_metric', judge: number) => {
      if (judge === -1) return
      if (row.programmatic === -1) judgeOnly[source] += row.n
      else for (let i = 0; i < row.n; i++) pairs[source].push({ programmatic: row.programmatic === 1, judge: judge === 1 })
    }
    add('judge_grader', row.judge_grader)
    add('correctness_metric', row.correctness)
  }
  return (['judge_grader', 'correctness_metric'] as const).map((source) => ({ source, agreement: cohensKappa(pairs[source]), judge_only: judgeOnly[source] }))
}
