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
