/**
 * Hypothesis tests for comparing two runs' success rates: the two-proportion z-test, Fisher's
 * exact test for small counts, Benjamini–Hochberg across tasks, and the sample size that gives a
 * test a stated power. Pure: no I/O, no randomness.
 */

const SQRT_2PI = Math.sqrt(2 * Math.PI)

/** The standard normal density. */
export function normalPdf(x: number): number {
  return Math.exp(-0.5 * x * x) / SQRT_2PI
}

/** The upper tail Q(x) = 1 − Φ(x) for x ≥ 0, accurate to ~1e-15 relative in both regions. */
function upperTail(x: number): number {
  if (x < 3) {
    // Marsaglia (2004): Φ(x) = ½ + φ(x)·(x + x³/3 + x⁵/(3·5) + …)
    let sum = x
    let term = x
    for (let i = 3; sum + term !== sum; i += 2) {
      term = (term * x * x) / i
      sum += term
    }
    return 0.5 - normalPdf(x) * sum
  }
  // Laplace's continued fraction for the Mills ratio, evaluated backwards
  let t = x
  for (let k = 120; k >= 1; k--) t = x + k / t
  return normalPdf(x) / t
}

/** The standard normal distribution function Φ(x). */
export function normalCdf(x: number): number {
  if (Number.isNaN(x)) return Number.NaN
  return x >= 0 ? 1 - upperTail(x) : upperTail(-x)
}

/** The two-sided p-value of a standard normal statistic: 2·(1 − Φ(|z|)), without cancellation. */
export function twoSidedP(z: number): number {
  return Math.min(1, 2 * upperTail(Math.abs(z)))
}

/** Φ⁻¹(p): Acklam's rational approximation refined by one Halley step (~1e-15). */
export function normalQuantile(p: number): number {
  if (!(p > 0 && p < 1)) {
    if (p === 0) return -Infinity
    if (p === 1) return Infinity
    throw new RangeError(`need 0 ≤ p ≤ 1, got ${p}`)
  }
  const a = [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1, 2.506628277459239]
  const b = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1]
  const c = [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783]
  const d = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416]
  const low = 0.02425
  let x: number
  if (p < low) {
    const q = Math.sqrt(-2 * Math.log(p))
    x = (((((c[0]! * q + c[1]!) * q + c[2]!) * q + c[3]!) * q + c[4]!) * q + c[5]!) / ((((d[0]! * q + d[1]!) * q + d[2]!) * q + d[3]!) * q + 1)
  } else if (p <= 1 - low) {
    const q = p - 0.5
    const r = q * q
    x =
      ((((((a[0]! * r + a[1]!) * r + a[2]!) * r + a[3]!) * r + a[4]!) * r + a[5]!) * q) /
      (((((b[0]! * r + b[1]!) * r + b[2]!) * r + b[3]!) * r + b[4]!) * r + 1)
  } else {
    const q = Math.sqrt(-2 * Math.log(1 - p))
    x = -(((((c[0]! * q + c[1]!) * q + c[2]!) * q + c[3]!) * q + c[4]!) * q + c[5]!) / ((((d[0]! * q + d[1]!) * q + d[2]!) * q + d[3]!) * q + 1)
  }
  // one Halley step on e = Φ(x) − p; in the upper half e comes from the tail to keep precision
  const e = p < 0.5 ? normalCdf(x) - p : 1 - p - upperTailSigned(x)
  const u = e * SQRT_2PI * Math.exp((x * x) / 2)
  return x - u / (1 + (x * u) / 2)
}

function upperTailSigned(x: number): number {
  return x >= 0 ? upperTail(x) : 1 - upperTail(-x)
}

export interface ProportionTest {
  test: 'two-proportion z' | 'fisher exact'
  /** two-sided p-value */
  p: number
  /** the z statistic (z-test only); positive when the second rate is higher */
  z: number | null
}

function checkCounts(k: number, n: number): void {
  if (!Number.isInteger(k) || !Number.isInteger(n) || n < 0 || k < 0 || k > n) throw new RangeError(`need whole 0 ≤ k ≤ n, got k=${k}, n=${n}`)
}

/**
 * The pooled two-proportion z-test of k1/n1 against k2/n2, two-sided. When the pooled rate is 0 or 1
 * (nothing differs) p = 1 and z = 0.
 */
export function twoProportionZTest(k1: number, n1: number, k2: number, n2: number): ProportionTest {
  checkCounts(k1, n1)
  checkCounts(k2, n2)
  if (n1 === 0 || n2 === 0) return { test: 'two-proportion z', p: 1, z: 0 }
  const pooled = (k1 + k2) / (n1 + n2)
  const se = Math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
  if (se === 0) return { test: 'two-proportion z', p: 1, z: 0 }
  const z = (k2 / n2 - k1 / n1) / se
  return { test: 'two-proportion z', p: twoSidedP(z), z }
}

/**
 * Fisher's exact test on the 2×2 table [[k1, n1−k1], [k2, n2−k2]], two-sided: the total probability
 * of tables (same margins) no more likely than the observed one — scipy's definition, with its
 * relative tolerance of 1e-7 for ties.
 */
export function fisherExactTest(k1: number, n1: number, k2: number, n2: number): ProportionTest {
  checkCounts(k1, n1)
  checkCounts(k2, n2)
  const successes = k1 + k2
  const lo = Math.max(0, successes - n2)
  const hi = Math.min(successes, n1)
  if (lo === hi) return { test: 'fisher exact', p: 1, z: null }
  // hypergeometric weights by the ratio recurrence, relative to x = lo, in log space to stay finite
  const logWeights: number[] = [0]
  for (let x = lo; x < hi; x++) {
    const ratio = ((successes - x) * (n1 - x)) / ((x + 1) * (n2 - successes + x + 1))
    logWeights.push(logWeights[logWeights.length - 1]! + Math.log(ratio))
  }
  const top = Math.max(...logWeights)
  const weights = logWeights.map((w) => Math.exp(w - top))
  const total = weights.reduce((a, b) => a + b, 0)
  const observed = weights[k1 - lo]!
  let tail = 0
  for (const w of weights) if (w <= observed * (1 + 1e-7)) tail += w
  return { test: 'fisher exact', p: Math.min(1, tail / total), z: null }
}

/**
 * The test a comparison uses: the z-test when every expected cell count of the 2×2 table is at
 * least 5 (Cochran's rule), else Fisher's exact test.
 */
export function compareProportions(k1: number, n1: number, k2: number, n2: number): ProportionTest {
  checkCounts(k1, n1)
  checkCounts(k2, n2)
  const n = n1 + n2
  if (n === 0) return { test: 'fisher exact', p: 1, z: null }
  const pooled = (k1 + k2) / n
  const smallestExpected = Math.min(n1, n2) * Math.min(pooled, 1 - pooled)
  return smallestExpected >= 5 ? twoProportionZTest(k1, n1, k2, n2) : fisherExactTest(k1, n1, k2, n2)
}

/**
 * Benjamini–Hochberg adjusted p-values (q-values), in the input order: a hypothesis is rejected at
 * false-discovery rate q when its adjusted p ≤ q.
 */
export function benjaminiHochberg(pValues: readonly number[]): number[] {
  const m = pValues.length
  const order = pValues.map((p, i) => ({ p, i })).sort((x, y) => x.p - y.p)
  const adjusted = new Array<number>(m)
  let running = 1
  for (let rank = m; rank >= 1; rank--) {
    const { p, i } = order[rank - 1]!
    if (!(p >= 0 && p <= 1)) throw new RangeError(`p-values must lie in [0, 1], got ${p}`)
    running = Math.min(running, (p * m) / rank)
    adjusted[i] = running
  }
  return adjusted
}

export interface PowerPlan {
  /** attempts per task in each run */
  attempts: number
  baseline_rate: number
  detect_drop: number
  alpha: number
  power: number
}

/**
 * Attempts per task (in each of the two runs) for a two-sided two-proportion z-test at level
 * `alpha` to detect a drop from `baselineRate` to `baselineRate − drop` with the given power
 * (Fleiss' normal approximation without continuity correction; statsmodels'
 * `samplesize_proportions_2indep_onetail` gives the same).
 */
export function attemptsForPower(baselineRate: number, drop: number, alpha = 0.05, power = 0.8): PowerPlan {
  if (!(baselineRate > 0 && baselineRate <= 1)) throw new RangeError(`the baseline rate must be in (0, 1], got ${baselineRate}`)
  if (!(drop > 0 && drop <= baselineRate)) throw new RangeError(`the drop must be in (0, baseline rate], got ${drop}`)
  if (!(alpha > 0 && alpha < 1)) throw new RangeError(`alpha must be in (0, 1), got ${alpha}`)
  if (!(power > 0 && power < 1)) throw new RangeError(`power must be in (0, 1), got ${power}`)
  const p1 = baselineRate
  const p2 = baselineRate - drop
  const mean = (p1 + p2) / 2
  const zAlpha = normalQuantile(1 - alpha / 2)
  const zBeta = normalQuantile(power)
  const root = zAlpha * Math.sqrt(2 * mean * (1 - mean)) + zBeta * Math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))
  // a hair below an integer is that integer: floating point must not cost a whole attempt
  const attempts = Math.ceil((root / drop) ** 2 - 1e-9)
  return { attempts, baseline_rate: baselineRate, detect_drop: drop, alpha, power }
}

export interface SweepPlan extends PowerPlan {
  /** tasks the sweep compares */
  tasks: number
  /**
   * attempts per task when the per-task level is alpha / tasks (Bonferroni): an upper bound for
   * what Benjamini–Hochberg across the tasks needs; equal to `attempts` for one task
   */
  attempts_all_tasks: number
  /** attempts_all_tasks × tasks, per run */
  attempts_per_run: number
}

/** How many attempts per task a sweep of `tasks` tasks needs to detect `drop` from `baselineRate`. */
export function planSweep(opts: { baselineRate: number; drop: number; alpha?: number; power?: number; tasks?: number }): SweepPlan {
  const tasks = opts.tasks ?? 1
  if (!Number.isInteger(tasks) || tasks < 1) throw new RangeError(`tasks must be a whole number ≥ 1, got ${tasks}`)
  const single = attemptsForPower(opts.baselineRate, opts.drop, opts.alpha, opts.power)
  const corrected = tasks === 1 ? single.attempts : attemptsForPower(opts.baselineRate, opts.drop, single.alpha / tasks, single.power).attempts
  return { ...single, tasks, attempts_all_tasks: corrected, attempts_per_run: corrected * tasks }
}
