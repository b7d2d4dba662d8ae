/**
 * Rank tests for per-attempt measurements (latency, tool calls, cost) of two runs: the Mann–Whitney
 * U test per task and van Elteren's stratified version per suite (tasks as strata). Both need only
 * each sample's size, the rank sum of the second sample in the pooled ranking and the tie term, so
 * the store can compute those in SQL over every attempt (`RankSums`) and nothing unbounded is
 * loaded. Pure: no I/O, no randomness.
 */
import { normalCdf } from './hypothesis.js'

/**
 * What a rank test of two samples needs. Ranks are 1…n1+n2 over both samples pooled, tied values
 * sharing their mean rank; `tie_term` is Σ(t³ − t) over the groups of t tied values.
 */
export interface RankSums {
  n1: number
  n2: number
  /** the sum of the second sample's ranks */
  rank_sum_2: number
  tie_term: number
}

/** The pooled ranking of x and y (mean ranks for ties): the second sample's rank sum and the tie term. */
export function rankSums(x: readonly number[], y: readonly number[]): RankSums {
  const pooled = [...x.map((v) => ({ v, second: false })), ...y.map((v) => ({ v, second: true }))]
  for (const { v } of pooled) if (Number.isNaN(v)) throw new RangeError('rank tests need numbers, got NaN')
  pooled.sort((p, q) => p.v - q.v)
  let rankSum2 = 0
  let tieTerm = 0
  for (let start = 0; start < pooled.length; ) {
    let end = start
    while (end + 1 < pooled.length && pooled[end + 1]!.v === pooled[start]!.v) end++
    const t = end - start + 1
    // ranks start+1 … end+1 share their mean
    const meanRank = (start + end) / 2 + 1
    for (let i = start; i <= end; i++) if (pooled[i]!.second) rankSum2 += meanRank
    tieTerm += t ** 3 - t
    start = end + 1
  }
  return { n1: x.length, n2: y.length, rank_sum_2: rankSum2, tie_term: tieTerm }
}

export interface RankTest {
  test: 'mann-whitney u'
  /** exact null distribution (no ties, a sample of ≤ 8), else the normal approximation */
  method: 'exact' | 'normal'
  /** U of the second sample: pairs (x, y) with y > x, plus half the tied pairs */
  u: number
  /** u / (n1·n2) = P(Y > X) + ½·P(Y = X): 0.5 when neither sample tends to be larger */
  effect: number
  /** the standardized statistic with continuity correction (normal method only; 0 when every value is tied) */
  z: number | null
  /** two-sided p-value */
  p: number
}

function checkSums(s: RankSums): void {
  if (!Number.isInteger(s.n1) || !Number.isInteger(s.n2) || s.n1 < 1 || s.n2 < 1) {
    throw new RangeError(`rank tests need at least one value in each sample, got n1=${s.n1}, n2=${s.n2}`)
  }
}

/**
 * The two-sided Mann–Whitney U test from rank sums, as scipy.stats.mannwhitneyu (method 'auto',
 * continuity correction): exact when there are no ties and a sample has at most 8 values, else the
 * normal approximation with tie correction. When every value is tied, p = 1.
 */
export function mannWhitneyTest(s: RankSums): RankTest {
  checkSums(s)
  const { n1, n2 } = s
  const u = s.rank_sum_2 - (n2 * (n2 + 1)) / 2
  const effect = u / (n1 * n2)
  const larger = Math.max(u, n1 * n2 - u)
  if (s.tie_term === 0 && Math.min(n1, n2) <= 8) {
    return { test: 'mann-whitney u', method: 'exact', u, effect, z: null, p: Math.min(1, 2 * exactUpperTail(Math.round(larger), n1, n2)) }
  }
  const n = n1 + n2
  const spread = n + 1 - s.tie_term / (n * (n - 1))
  // every value tied (up to rounding of the tie term): nothing to tell the samples apart
  if (spread <= 1e-9 * (n + 1)) return { test: 'mann-whitney u', method: 'normal', u, effect, z: 0, p: 1 }
  const z = (larger - (n1 * n2) / 2 - 0.5) / Math.sqrt(((n1 * n2) / 12) * spread)
  return { test: 'mann-whitney u', method: 'normal', u, effect, z, p: Math.min(1, 2 * normalCdf(-z)) }
}

/** The Mann–Whitney U test of two samples of numbers (see mannWhitneyTest). */
export function mannWhitneyU(x: readonly number[], y: readonly number[]): RankTest {
  return mannWhitneyTest(rankSums(x, y))
}

/**
 * P(U ≥ k) under the null with no ties. U's generating function is the Gaussian binomial
 * [n1+n2 choose m]_q (m = the smaller size); it is built one factor (1 − q^{n+i}) / (1 − q^i) at a
 * time. By symmetry P(U ≥ k) = P(U ≤ n1·n2 − k), summed from the low coefficients.
 */
function exactUpperTail(k: number, n1: number, n2: number): number {
  const m = Math.min(n1, n2)
  const n = Math.max(n1, n2)
  const size = m * n + 1
  const counts = new Float64Array(size)
  counts[0] = 1
  for (let i = 1; i <= m; i++) {
    for (let u = i; u < size; u++) counts[u]! += counts[u - i]!
    for (let u = size - 1; u >= n + i; u--) counts[u]! -= counts[u - n - i]!
  }
  let total = 0
  let tail = 0
  const limit = m * n - k
  for (let u = 0; u < size; u++) {
    const c = Math.max(0, counts[u]!)
    total += c
    if (u <= limit) tail += c
  }
  return tail / total
}

export interface StratifiedRankTest {
  test: 'van elteren'
  /** strata with values in both samples (the others carry no information) */
  strata: number
  /** standardized statistic (no continuity correction); positive when the second sample ranks higher */
  z: number
  /** two-sided p-value (normal approximation); 1 when no stratum can tell the samples apart */
  p: number
}

/**
 * Van Elteren's stratified Wilcoxon–Mann–Whitney test: each stratum's rank sum of the second sample
 * weighted by 1 / (stratum size + 1), with the tie-corrected variance, so every stratum (task) weighs
 * about the same whatever its attempts. Strata with an empty sample are skipped.
 */
export function vanElterenTest(strata: readonly RankSums[]): StratifiedRankTest {
  let statistic = 0
  let variance = 0
  let used = 0
  for (const s of strata) {
    if (s.n1 === 0 || s.n2 === 0) continue
    const n = s.n1 + s.n2
    const weight = 1 / (n + 1)
    statistic += weight * (s.rank_sum_2 - (s.n2 * (n + 1)) / 2)
    const spread = n + 1 - s.tie_term / (n * (n - 1))
    // a stratum whose values are all tied (up to rounding) adds no variance
    if (spread > 1e-9 * (n + 1)) variance += weight * weight * ((s.n1 * s.n2) / 12) * spread
    used++
  }
  if (variance <= 0) return { test: 'van elteren', strata: used, z: 0, p: 1 }
  const z = statistic / Math.sqrt(variance)
  return { test: 'van elteren', strata: used, z, p: Math.min(1, 2 * normalCdf(-Math.abs(z))) }
}
