/** Terminal views of sweeps and schedules. */
import type { SweepRecord } from '../core/contracts/sweep.js'
import type { ScheduleInfo } from '../app/schedules.js'
import type { SweepSummary } from '../store/sweep-repositories.js'
import { pct, pp, table } from './format.js'

export function printSweep(log: (line: string) => void, sweep: SweepRecord): void {
  const finished = sweep.finished_at === null ? 'running' : `finished ${new Date(sweep.finished_at).toISOString()}`
  log(`sweep ${sweep.sweep_id} (${sweep.name}${sweep.schedule_id ? `, schedule ${sweep.schedule_id}` : ''}): started ${new Date(sweep.started_at).toISOString()}, ${finished}`)
  log('')
  log(
    table(
      ['cell', 'suite', 'adapter', 'model', 'seed', 'run', 'n', 'success', 'baseline', 'base', 'delta', 'verdict'],
      sweep.cells.map((c) => [
        c.cell,
        c.suite,
        c.adapter,
        c.model || '—',
        c.seed,
        c.run_id,
        c.attempts,
        pct(c.pass_rate),
        c.baseline_version === null ? (c.promoted_version === null ? '—' : `${c.baseline} (new v${c.promoted_version})`) : `${c.baseline}@${c.baseline_version}`,
        pct(c.baseline_pass_rate),
        c.pass_rate !== null && c.baseline_pass_rate !== null ? pp(c.pass_rate - c.baseline_pass_rate) : '—',
        c.verdict.toUpperCase() + (c.error ? `: ${c.error}` : ''),
      ]),
      ['r', 'l', 'l', 'l', 'l', 'l', 'r', 'r', 'l', 'r', 'r', 'l'],
    ),
  )
  const by = (v: string) => sweep.cells.filter((c) => c.verdict === v).length
  log('')
  log(
    `${sweep.verdict.toUpperCase()}: ${sweep.cells.length} cells — ${by('pass')} pass, ${by('regressed')} regressed, ${by('failed')} failed, ${by('no_baseline')} without a baseline${by('pending') > 0 ? `, ${by('pending')} pending` : ''}`,
  )
}

export function printSweepList(log: (line: string) => void, sweeps: SweepSummary[]): void {
  if (sweeps.length === 0) {
    log('no sweeps stored yet')
    return
  }
  log(
    table(
      ['sweep', 'name', 'schedule', 'started', 'status', 'cells', 'regressed', 'failed', 'verdict'],
      sweeps.map((s) => [s.sweep_id, s.name, s.schedule_id || '—', s.started_at, s.status, `${s.cells_done}/${s.cell_count}`, s.regressed, s.failed, s.verdict]),
      ['l', 'l', 'l', 'l', 'l', 'r', 'r', 'r', 'l'],
    ),
  )
}

export function printSchedules(log: (line: string) => void, schedules: ScheduleInfo[]): void {
  if (schedules.length === 0) {
    log('no sweep schedules')
    return
  }
  log(
    table(
      ['schedule', 'sweep', 'cron', 'time zone', 'state', 'next run', 'last started'],
      schedules.map((s) => [s.id, s.sweep, s.cron, s.timezone, s.paused ? `paused${s.note ? ` (${s.note})` : ''}` : 'active', s.next_runs[0] ?? '—', s.recent.at(-1)?.workflow_id ?? '—']),
    ),
  )
}
