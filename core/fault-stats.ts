/**
 * Statistics of runs under injected faults, pure:
 * - recovery rate: of the attempts that met at least one disruptive injected fault (anything but
 *   `slow`), how many still passed — k/n with a Wilson interval, overall, per kind and per task;
 * - robustness drop: the pass rate under faults against the same agent without them, with a
 *   two-proportion test (Fisher's exact when counts are small) and Benjamini–Hochberg across tasks;
 * - the recovery curve: pass rate and recovery rate at each fail rate of a sweep, each point's drop
 *   tested against the sweep's fault-free point.
 * The store aggregates the counts (store/fault-queries.ts); this turns them into figures.
 */
import { FAULT_KINDS } from './faults.js'
import { benjaminiHochberg, compareProportions } from './hypothesis.js'
import { rateOf, suiteRate, type Rate } from './stats.js'

/** How many attempts of a task ran and passed. */
export interface TaskCount {
  task_id: string
  n: number
  k: number
}

/** Attempts that met a fault (of one kind, or any disruptive kind) and how many of them passed. */
export interface FaultedCount {
  /** a fault kind, or '' for "any disruptive kind" */
  kind: string
  task_id: string
  /** attempts that met it */
  n: number
  /** of those, attempts that passed */
  k: number
  /** injected faults of this kind over those attempts (tool and model calls) */
  calls: number
}

export interface RecoveryFigures {
  /** attempts that met ≥ 1 disruptive fault and still passed */
  overall: Rate
  /** per kind met (slow included: it tests patience, not recovery) */
  by_kind: (Rate & { kind: string; calls: number })[]
  /** per task, disruptive faults only */
  by_task: (Rate & { task_id: string })[]
  /** attempts that met any injected fault, and the share of all attempts they are */
  attempts_met: number
  attempts: number
}

/** Recovery figures from per-task counts (`kind` '' = any disruptive kind). */
export function recoveryFigures(rows: readonly FaultedCount[], attempts: number, attemptsMet: number): RecoveryFigures {
  const sum = (list: readonly FaultedCount[]) => list.reduce((acc, r) => ({ n: acc.n + r.n, k: acc.k + r.k, calls: acc.calls + r.calls }), { n: 0, k: 0, calls: 0 })
  const disruptive = rows.filter((r) => r.kind === '')
  const all = sum(disruptive)
  const order = (kind: string) => {
    const at = (FAULT_KINDS as readonly string[]).indexOf(kind)
    return at < 0 ? FAULT_KINDS.length : at
  }
  const kinds = [...new Set(rows.filter((r) => r.kind !== '').map((r) => r.kind))].sort((a, b) => order(a) - order(b))
  return {
    overall: rateOf(all.k, all.n),
    by_kind: kinds.map((kind) => {
      const s = sum(rows.filter((r) => r.kind === kind))
      return { kind, calls: s.calls, ...rateOf(s.k, s.n) }
    }),
    by_task: disruptive.filter((r) => r.n > 0).map((r) => ({ task_id: r.task_id, ...rateOf(r.k, r.n) })).sort((a, b) => (a.task_id < b.task_id ? -1 : 1)),
    attempts_met: attemptsMet,
    attempts,
  }
}

export interface RobustnessDrop {
  /** the fault-free run it is measured against */
  clean_run_id: string
  clean: Rate
  faulted: Rate
  /** clean − faulted pass rate (pooled over the tasks both ran); positive = worse under faults */
  drop: number | null
  test: string
  p: number
  /** significant at 5 % and a drop (not a gain) */
  significant: boolean
  per_task: { task_id: string; clean: Rate; faulted: Rate; drop: number | null; p: number; q: number; significant: boolean }[]
}

/**
 * The pass rate under faults against the same agent without, over the tasks both runs have. With
 * equal attempts per task the pooled rate is the suite's unweighted mean of task rates.
 */
export function robustnessDrop(cleanRunId: string, clean: readonly TaskCount[], faulted: readonly TaskCount[], alpha = 0.05): RobustnessDrop {
  const byTask = new Map(clean.map((t) => [t.task_id, t]))
  const shared = faulted.filter((t) => byTask.has(t.task_id)).sort((a, b) => (a.task_id < b.task_id ? -1 : 1))
  const tests = shared.map((f) => {
    const c = byTask.get(f.task_id)!
    return { task_id: f.task_id, c, f, p: compareProportions(c.k, c.n, f.k, f.n).p }
  })
  const qs = benjaminiHochberg(tests.map((t) => t.p))
  const total = (list: readonly TaskCount[]) => list.reduce((acc, t) => ({ n: acc.n + t.n, k: acc.k + t.k }), { n: 0, k: 0 })
  const c = total(tests.map((t) => t.c))
  const f = total(tests.map((t) => t.f))
  const test = compareProportions(c.k, c.n, f.k, f.n)
  const cleanRate = rateOf(c.k, c.n)
  const faultedRate = rateOf(f.k, f.n)
  const drop = cleanRate.rate === null || faultedRate.rate === null ? null : cleanRate.rate - faultedRate.rate
  return {
    clean_run_id: cleanRunId,
    clean: cleanRate,
    faulted: faultedRate,
    drop,
    test: test.test,
    p: test.p,
    significant: test.p < alpha && (drop ?? 0) > 0,
    per_task: tests.map((t, i) => {
      const cr = rateOf(t.c.k, t.c.n)
      const fr = rateOf(t.f.k, t.f.n)
      const d = cr.rate === null || fr.rate === null ? null : cr.rate - fr.rate
      return { task_id: t.task_id, clean: cr, faulted: fr, drop: d, p: t.p, q: qs[i]!, significant: qs[i]! < alpha && (d ?? 0) > 0 }
    }),
  }
}

/** One run of a sweep, as the store counts it. */
export interface SweepRunCounts {
  run_id: string
  rate: number
  mode: string
  tasks: TaskCount[]
  /** attempts that met ≥ 1 disruptive fault, and how many of them passed */
  faulted: { n: number; k: number }
  /** injected faults over the run */
  injected: number
}

export interface CurvePoint {
  rate: number
  mode: string
  run_id: string
  /** pooled pass rate with its Wilson interval */
  pass: Rate
  /** the unweighted mean of task rates */
  suite_rate: number | null
  recovery: Rate
  injected: number
  /** against the sweep's lowest rate (normally 0, fault-free): clean − this pass rate, its test and p */
  drop: number | null
  p: number | null
  significant: boolean
}

export interface RecoveryCurve {
  sweep_id: string
  /** `uniform`, `burst` or `mixed` (as the runs were stamped) */
  mode: string
  points: CurvePoint[]
}

/** The recovery curve of a sweep: one point per rate, each tested against the lowest rate's point. */
export function recoveryCurve(sweepId: string, runs: readonly SweepRunCounts[], alpha = 0.05): RecoveryCurve {
  const sorted = [...runs].sort((a, b) => a.rate - b.rate)
  const total = (r: SweepRunCounts) => r.tasks.reduce((acc, t) => ({ n: acc.n + t.n, k: acc.k + t.k }), { n: 0, k: 0 })
  const base = sorted[0]
  const baseTotal = base === undefined ? undefined : total(base)
  const points = sorted.map((run): CurvePoint => {
    const t = total(run)
    const pass = rateOf(t.k, t.n)
    const isBase = run === base
    const test = !isBase && baseTotal !== undefined ? compareProportions(baseTotal.k, baseTotal.n, t.k, t.n) : undefined
    const baseRate = baseTotal === undefined || baseTotal.n === 0 ? null : baseTotal.k / baseTotal.n
    const drop = isBase || baseRate === null || pass.rate === null ? null : baseRate - pass.rate
    return {
      rate: run.rate,
      mode: run.mode,
      run_id: run.run_id,
      pass,
      suite_rate: suiteRate(run.tasks).rate,
      recovery: rateOf(run.faulted.k, run.faulted.n),
      injected: run.injected,
      drop,
      p: test?.p ?? null,
      significant: test !== undefined && test.p < alpha && (drop ?? 0) > 0,
    }
  })
  const modes = new Set(sorted.map((r) => r.mode).filter((m) => m !== ''))
  return { sweep_id: sweepId, mode: modes.size === 1 ? [...modes][0]! : modes.size === 0 ? 'uniform' : 'mixed', points }
}

export interface CurveComparison {
  a: string
  b: string
  /** per rate both sweeps measured: pass rates, b − a, the test, BH-adjusted q */
  points: { rate: number; a: Rate; b: Rate; delta: number | null; p: number; q: number; significant: boolean }[]
  /** the mean pass rate over the shared rates (the area under each curve divided by the number of points) */
  mean_a: number | null
  mean_b: number | null
  warnings: string[]
}

/** Two agents' recovery curves compared rate by rate (two-proportion tests, Benjamini–Hochberg across rates). */
export function compareCurves(a: RecoveryCurve, b: RecoveryCurve, alpha = 0.05): CurveComparison {
  const rates = a.points.map((p) => p.rate).filter((rate) => b.points.some((q) => q.rate === rate))
  const warnings: string[] = []
  if (a.mode !== b.mode) warnings.push(`the sweeps inject faults differently (${a.mode} vs ${b.mode}): the curves are not comparable point for point`)
  const missing = [...new Set([...a.points, ...b.points].map((p) => p.rate))].filter((r) => !rates.includes(r))
  if (missing.length > 0) warnings.push(`rates only one sweep measured are left out: ${missing.join(', ')}`)
  const rows = rates.map((rate) => {
    const pa = a.points.find((p) => p.rate === rate)!
    const pb = b.points.find((p) => p.rate === rate)!
    return { rate, a: pa.pass, b: pb.pass, p: compareProportions(pa.pass.k, pa.pass.n, pb.pass.k, pb.pass.n).p }
  })
  const qs = benjaminiHochberg(rows.map((r) => r.p))
  const mean = (list: readonly (number | null)[]) => {
    const known = list.filter((v): v is number => v !== null)
    return known.length === 0 ? null : known.reduce((x, y) => x + y, 0) / known.length
  }
  return {
    a: a.sweep_id,
    b: b.sweep_id,
    points: rows.map((r, i) => ({
      ...r,
      delta: r.a.rate === null || r.b.rate === null ? null : r.b.rate - r.a.rate,
      q: qs[i]!,
      significant: qs[i]! < alpha,
    })),
    mean_a: mean(rows.map((r) => r.a.rate)),
    mean_b: mean(rows.map((r) => r.b.rate)),
    warnings,
  }
}
