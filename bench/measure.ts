/**
 * Pure helpers of the throughput benches (issue 15): summaries of sampled series, targets as ratios,
 * the ideal line of a scaling curve and plain-text tables.
 * No clock and no I/O here: the benches measure, these only count and format (test/bench/measure.test.ts).
 */

/** start / peak / end of a series sampled over a run (e.g. a process's RSS every second) */
export interface SeriesSummary {
  start: number
  /** the sample halfway through: with start and end, whether the series stayed flat */
  middle: number
  peak: number
  end: number
  samples: number
}

/** start, middle, peak and end of the samples, ignoring zeros (a process not yet started or already gone); undefined when none remain */
export function summarizeSeries(samples: readonly number[]): SeriesSummary | undefined {
  const present = samples.filter((value) => value > 0)
  if (present.length === 0) return undefined
  return { start: present[0]!, middle: present[Math.floor((present.length - 1) / 2)]!, peak: Math.max(...present), end: present.at(-1)!, samples: present.length }
}

/** arithmetic mean; NaN for no values */
export function mean(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : values.reduce((a, b) => a + b, 0) / values.length
}

/** the middle value (the mean of the two middle ones for an even count); NaN for none */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** the measurement in the middle by `key` (the lower of the two middle ones for an even count): a real one, not an average; undefined for none */
export function middleOf<T>(items: readonly T[], key: (item: T) => number): T | undefined {
  const sorted = [...items].sort((a, b) => key(a) - key(b))
  return sorted[Math.floor((sorted.length - 1) / 2)]
}

/** attempts per second of `attempts` in `ms` milliseconds (a zero-length interval counts as 1 ms) */
export function perSecond(attempts: number, ms: number): number {
  return attempts / (Math.max(ms, 1) / 1000)
}

/**
 * Attempts per second between the moments the `from` and `to` fractions of all attempts had finished
 * (default the middle 80 %): the steady rate, without worker start-up at the front and the last
 * stragglers and storage wait at the back. `finishedAt` are finish times (ms, any order).
 * Undefined when there are too few finishes to measure an interval.
 */
export function steadyRate(finishedAt: readonly number[], from = 0.1, to = 0.9): number | undefined {
  if (!(from >= 0 && from < to && to <= 1)) throw new RangeError(`steadyRate: need 0 ≤ from < to ≤ 1, got ${from}, ${to}`)
  const sorted = [...finishedAt].sort((a, b) => a - b)
  const first = Math.floor(from * (sorted.length - 1))
  const last = Math.ceil(to * (sorted.length - 1))
  if (last <= first) return undefined
  const ms = sorted[last]! - sorted[first]!
  return ms > 0 ? ((last - first) * 1000) / ms : undefined
}

/** A target on a measured figure: met or missed, and how the figure compares. */
export interface TargetCheck {
  target: string
  met: boolean
  detail: string
}

/** `value` ≥ `minimum` (e.g. attempts/s ≥ 500) */
export function atLeast(label: string, value: number, minimum: number, unit: string): TargetCheck {
  return { target: `${label} ≥ ${minimum} ${unit}`, met: value >= minimum, detail: `${fixed(value)} ${unit}` }
}

/**
 * `a` at least `times` × `b` (e.g. forge run ≥ 5× promptfoo, in attempts/s), or — with `within` —
 * `b` at most `times` × `a` (forge run within 1.5× of the in-process loop: in-process ÷ forge run ≤ 1.5).
 */
export function ratioTarget(label: string, a: number, b: number, times: number, mode: 'at-least' | 'within'): TargetCheck {
  if (mode === 'at-least') {
    const ratio = a / b
    return { target: `${label} ≥ ${times}×`, met: ratio >= times, detail: `${fixed(ratio)}×` }
  }
  const ratio = b / a
  return { target: `${label} within ${times}×`, met: ratio <= times, detail: `${fixed(ratio)}×` }
}

/**
 * The most a CPU-bound run can reach: `cpuMsPerAttempt` of CPU per attempt over all its processes on
 * `cores` cores allows at most cores × 1000 / cpuMsPerAttempt attempts/s, and no better than
 * `referencePerSecond` ÷ that as a ratio to a reference (the in-process loop). A run near its ceiling
 * is limited by the CPU its processes spend, not by waiting.
 */
export function cpuBound(cpuMsPerAttempt: number, cores: number, referencePerSecond: number): { ceiling: number; best_ratio: number } {
  if (!(cpuMsPerAttempt > 0) || !(cores > 0)) throw new RangeError(`cpuBound: CPU per attempt and cores must be positive (got ${cpuMsPerAttempt} ms, ${cores} cores)`)
  const ceiling = (cores * 1000) / cpuMsPerAttempt
  return { ceiling, best_ratio: referencePerSecond / ceiling }
}

/** "met" / "MISSED" with the figure, for one line of bench output */
export function describeTarget(check: TargetCheck): string {
  return `${check.met ? 'met   ' : 'MISSED'} ${check.target}: ${check.detail}`
}

/** One point of a latency-bound scaling curve: attempt slots (workers × concurrency) and the measured rate. */
export interface CurvePoint {
  slots: number
  attemptsPerSecond: number
}

/** attempts/s a latency-bound agent allows with `slots` attempts at once, each taking `attemptMs` (no harness cost) */
export function idealRate(slots: number, attemptMs: number): number {
  return (slots * 1000) / attemptMs
}

/**
 * Whether the harness, not the agent, has become the limit: the last point reached less than
 * `efficiency` (default 50 %) of its ideal rate, or doubling the slots gained less than 10 %.
 */
export function harnessLimited(points: readonly CurvePoint[], attemptMs: number, efficiency = 0.5): boolean {
  const last = points.at(-1)
  if (last === undefined) return false
  if (last.attemptsPerSecond < efficiency * idealRate(last.slots, attemptMs)) return true
  const before = points.at(-2)
  return before !== undefined && last.slots >= 2 * before.slots && last.attemptsPerSecond < 1.1 * before.attemptsPerSecond
}

/** The slots of a doubling curve: 1, 2, 4, … up to and including `max` (when a power of two). */
export function doublings(max: number): number[] {
  const points: number[] = []
  for (let slots = 1; slots <= max; slots *= 2) points.push(slots)
  return points
}

/** A plain-text table: columns padded to their widest cell, numbers right-aligned. */
export function formatTable(headers: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  const cells = [headers.map(String), ...rows.map((row) => row.map((cell) => (typeof cell === 'number' ? fixed(cell) : cell)))]
  const widths = headers.map((_, column) => Math.max(...cells.map((row) => (row[column] ?? '').length)))
  const numeric = headers.map((_, column) => rows.length > 0 && rows.every((row) => typeof row[column] === 'number'))
  const line = (row: readonly string[]): string =>
    row
      .map((cell, column) => (numeric[column] ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!)))
      .join('  ')
      .trimEnd()
  return [line(cells[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n')
}

/** a figure with sensible precision: 1234 → "1234", 56.78 → "56.8", 1.234 → "1.23", 0.01234 → "0.0123" */
export function fixed(value: number): string {
  if (!Number.isFinite(value)) return String(value)
  const magnitude = Math.abs(value)
  if (magnitude >= 100) return value.toFixed(0)
  if (magnitude >= 10) return value.toFixed(1)
  if (magnitude >= 1) return value.toFixed(2)
  return value.toPrecision(3)
}

/** MiB from KiB, rounded */
export function mib(kib: number): string {
  return `${(kib / 1024).toFixed(0)} MiB`
}

/** One line on what starting Node costs here (bench/proc.ts nodeStart), for the peers' table. */
export function describeNodeStart(start: { ms: number; extra_ca?: { file: string; without_ms: number } }): string {
  const base = `a Node process starts and exits here in ${fixed(start.ms)} ms`
  if (start.extra_ca === undefined) return base
  return `${base} (${fixed(start.ms - start.extra_ca.without_ms)} ms of it parsing NODE_EXTRA_CA_CERTS=${start.extra_ca.file}, which Node reads before any JavaScript; ${fixed(start.extra_ca.without_ms)} ms without it): forge run's client and promptfoo's process each pay it once, Inspect AI (Python) not; left as it is`
}
