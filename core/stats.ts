/** Rates with their denominators and Wilson intervals; suite rates as unweighted means of task rates. */

export interface Interval {
  low: number
  high: number
}

export interface Rate extends Interval {
  k: number
  n: number
  /** k/n, or null when nothing was measured (n = 0): unavailable, never zero */
  rate: number | null
}

export interface SuiteRate {
  /** the unweighted mean of per-task rates, or null when no task has a measurement */
  rate: number | null
  /** how many tasks the mean is over (those with n > 0) */
  tasks: number
}

const clamp01 = (x: number): number => Math.min(1, Math.max(0, x))

function checkCounts(k: number, n: number): void {
  if (!Number.isFinite(k) || !Number.isFinite(n) || n < 0 || k < 0 || k > n) {
    throw new RangeError(`need 0 ≤ k ≤ n, got k=${k}, n=${n}`)
  }
}

/** The Wilson score interval for k successes out of n (z = 1.96 → 95%); n = 0 gives [0, 1]. */
export function wilsonInterval(k: number, n: number, z = 1.96): Interval {
  checkCounts(k, n)
  if (n === 0) return { low: 0, high: 1 }
  const p = k / n
  const z2 = z * z
  const denominator = 1 + z2 / n
  const centre = (p + z2 / (2 * n)) / denominator
  const halfWidth = (z * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / denominator
  // pin the ends exactly where floating point would leave them a hair inside
  return {
    low: k === 0 ? 0 : clamp01(centre - halfWidth),
    high: k === n ? 1 : clamp01(centre + halfWidth),
  }
}

/** k, n, the rate and its Wilson 95% interval together, so a rate never travels without its denominator. */
export function rateOf(k: number, n: number): Rate {
  const { low, high } = wilsonInterval(k, n)
  return { k, n, rate: n === 0 ? null : k / n, low, high }
}

/** The unweighted mean of per-task rates over tasks with n > 0 (tasks with more attempts don't count more). */
export function suiteRate(tasks: readonly { k: number; n: number }[]): SuiteRate {
  const measured = tasks.filter((task) => task.n > 0)
  if (measured.length === 0) return { rate: null, tasks: 0 }
  const sum = measured.reduce((total, task) => {
    checkCounts(task.k, task.n)
    return total + task.k / task.n
  }, 0)
  return { rate: sum / measured.length, tasks: measured.length }
}

/** How many times each value occurs; values that never occur are absent. */
export function countBy<T extends string>(values: readonly T[]): Record<T, number> {
  const counts = new Map<T, number>()
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1)
  return Object.fromEntries(counts) as Record<T, number>
}

/** The full width (high − low) of the Wilson 95% interval of k out of n. */
export function wilsonWidth(k: number, n: number, z = 1.96): number {
  const { low, high } = wilsonInterval(k, n, z)
  return high - low
}

/**
 * pass@k: the chance that at least one of k attempts succeeds, estimated without bias from c
 * successes in n attempts as 1 − C(n−c, k)/C(n, k) (Chen et al. 2021, "Evaluating Large Language
 * Models Trained on Code", eq. 1). Null when k > n: n attempts cannot estimate it.
 */
export function passAtK(n: number, c: number, k: number): number | null {
  checkCounts(c, n)
  checkK(k)
  if (k > n) return null
  if (n - c < k) return 1
  // C(n−c, k)/C(n, k) = ∏_{i=n−c+1..n} (1 − k/i), stable for large n
  let allFail = 1
  for (let i = n - c + 1; i <= n; i++) allFail *= 1 - k / i
  return 1 - allFail
}

/**
 * pass^k: the chance that all of k attempts succeed, estimated without bias as C(c, k)/C(n, k)
 * (Yao et al. 2024, "τ-bench"). Null when k > n.
 */
export function passHatK(n: number, c: number, k: number): number | null {
  checkCounts(c, n)
  checkK(k)
  if (k > n) return null
  if (c < k) return 0
  let all = 1
  for (let i = 0; i < k; i++) all *= (c - i) / (n - i)
  return all
}

/**
 * Consistency across repeated attempts: the chance that two different attempts of the task agree
 * (both pass or both fail), [C(c,2) + C(n−c,2)] / C(n,2). 1 for a task that always or never passes,
 * 0.5 at the coin-flip worst. Null when n < 2.
 */
export function consistency(n: number, c: number): number | null {
  checkCounts(c, n)
  if (n < 2) return null
  return (c * (c - 1) + (n - c) * (n - c - 1)) / (n * (n - 1))
}

function checkK(k: number): void {
  if (!Number.isInteger(k) || k < 1) throw new RangeError(`k must be a whole number ≥ 1, got ${k}`)
}

/**
 * The q-quantile of values by linear interpolation between order statistics (Hyndman & Fan type 7,
 * numpy's default; ClickHouse's quantileExactInclusive). Null for no values.
 */
export function quantile(values: readonly number[], q: number): number | null {
  if (!(q >= 0 && q <= 1)) throw new RangeError(`need 0 ≤ q ≤ 1, got ${q}`)
  if (values.length === 0) return null
  const sorted = [...values].sort((a, b) => a - b)
  const h = (sorted.length - 1) * q
  const lo = Math.floor(h)
  const below = sorted[lo]!
  const above = sorted[Math.min(lo + 1, sorted.length - 1)]!
  return below + (h - lo) * (above - below)
}

/** The unweighted mean of the values that are not null, with how many there were. */
export function meanOfAvailable(values: readonly (number | null)[]): { mean: number | null; count: number } {
  const present = values.filter((v): v is number => v !== null)
  if (present.length === 0) return { mean: null, count: 0 }
  return { mean: present.reduce((a, b) => a + b, 0) / present.length, count: present.length }
}
