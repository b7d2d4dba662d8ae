/** Terminal views of fault statistics: recovery and robustness of a run, a recovery curve, two curves compared, scores per mutation family. */
import type { FamilyFigures } from '../core/adversarial.js'
import type { CurveComparison, RecoveryCurve } from '../core/fault-stats.js'
import type { FaultStats } from '../app/fault-stats.js'
import { interval, pct, pp, pValue, table } from './format.js'

const kn = (r: { k: number; n: number }): string => `${r.k}/${r.n}`

/** The fault section of `forge stats`: the profile, recovery per kind and task, the robustness drop. */
export function printFaultStats(log: (line: string) => void, faults: FaultStats): void {
  const p = faults.profile
  log('')
  log(
    `fault profile ${p.hash.slice(0, 12)} (${p.mode}, rate ${p.rate}${p.sweep_id ? `, sweep ${p.sweep_id}` : ''}): ${faults.injected} faults injected; ` +
      `${faults.recovery.attempts_met} of ${faults.recovery.attempts} attempts met one`,
  )
  const r = faults.recovery.overall
  log(`recovery rate (met ≥ 1 disruptive fault and still passed): ${kn(r)} ${pct(r.rate)} ${interval(r.low, r.high)}`)
  if (faults.recovery.by_kind.length > 0) {
    log(
      table(
        ['fault kind', 'faults', 'attempts met', 'still passed', 'recovery', 'wilson 95%'],
        faults.recovery.by_kind.map((k) => [k.kind, k.calls, k.n, k.k, pct(k.rate), interval(k.low, k.high)]),
        ['l', 'r', 'r', 'r', 'r', 'l'],
      ),
    )
  }
  if (faults.recovery.by_task.length > 0) {
    log(table(['task (disruptive faults)', 'recovered', 'recovery', 'wilson 95%'], faults.recovery.by_task.map((t) => [t.task_id, kn(t), pct(t.rate), interval(t.low, t.high)]), ['l', 'r', 'r', 'l']))
  }
  const d = faults.robustness
  if ('unavailable' in d) log(`robustness drop: unavailable: ${d.unavailable}`)
  else {
    log(
      `robustness drop vs fault-free run ${d.clean_run_id}: ${pct(d.clean.rate)} → ${pct(d.faulted.rate)} (${pp(d.drop === null ? null : -d.drop)}), ` +
        `${d.test} p = ${pValue(d.p)}${d.significant ? ' — significant' : ' — not significant'}`,
    )
    const hit = d.per_task.filter((t) => t.significant)
    if (hit.length > 0) log(`  tasks that dropped significantly (BH): ${hit.map((t) => `${t.task_id} ${pct(t.clean.rate)}→${pct(t.faulted.rate)}`).join(', ')}`)
  }
}

/** A sweep's recovery curve: one row per fail rate. */
export function printRecoveryCurve(log: (line: string) => void, curve: RecoveryCurve): void {
  log(`recovery curve of sweep ${curve.sweep_id} (${curve.mode})`)
  log(
    table(
      ['fail rate', 'mode', 'pass k/n', 'pass', 'wilson 95%', 'recovery k/n', 'recovery', 'wilson 95%', 'drop', 'p', 'run'],
      curve.points.map((pt) => [
        String(pt.rate),
        pt.mode || curve.mode,
        kn(pt.pass),
        pct(pt.pass.rate),
        interval(pt.pass.low, pt.pass.high),
        kn(pt.recovery),
        pct(pt.recovery.rate),
        interval(pt.recovery.low, pt.recovery.high),
        pt.drop === null ? '—' : pp(-pt.drop),
        pt.p === null ? '—' : `${pValue(pt.p)}${pt.significant ? ' *' : ''}`,
        pt.run_id,
      ]),
      ['r', 'l', 'r', 'r', 'l', 'r', 'r', 'l', 'r', 'r', 'l'],
    ),
  )
  log('drop and p: against the lowest rate of the sweep; * = a significant drop (5 %)')
}

export function printCurveComparison(log: (line: string) => void, c: CurveComparison): void {
  log(`recovery curves: sweep ${c.a} (a) vs ${c.b} (b)`)
  log(
    table(
      ['fail rate', 'a pass', 'b pass', 'b − a', 'p', 'q (BH)'],
      c.points.map((p) => [String(p.rate), `${kn(p.a)} ${pct(p.a.rate)}`, `${kn(p.b)} ${pct(p.b.rate)}`, pp(p.delta), pValue(p.p), `${pValue(p.q)}${p.significant ? ' *' : ''}`]),
      ['r', 'r', 'r', 'r', 'r', 'r'],
    ),
  )
  log(`mean pass rate over the shared rates: a ${pct(c.mean_a)}, b ${pct(c.mean_b)}; * = significant after Benjamini–Hochberg (5 %)`)
  for (const w of c.warnings) log(`warning: ${w}`)
}

/** One line per mutation family of a generated adversarial suite. */
export function printFamilies(log: (line: string) => void, families: readonly FamilyFigures[]): void {
  log('')
  log('adversarial mutation families (attempts pooled over each family’s tasks):')
  for (const f of families) log(`  ${f.label}: ${f.k}/${f.n} (${pct(f.rate)}, ${interval(f.low, f.high)}; ${f.tasks} task${f.tasks === 1 ? '' : 's'})`)
}
