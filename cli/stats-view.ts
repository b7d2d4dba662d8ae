import type { RunStats } from '../app/stats.js'
import { counts, interval, pct, table } from './format.js'

/** The per-task table, suite rate, outcome and failure-bucket counts of one run. */
export function printRunStats(log: (line: string) => void, stats: RunStats): void {
  const run = stats.run
  log(`run ${stats.run_id}${run ? `  suite ${run.suite}  adapter ${run.adapter}  status ${run.status}` : ''}`)
  log(
    table(
      ['task', 'k/n', 'success', 'wilson 95%', 'failure buckets'],
      stats.tasks.map((t) => [t.task_id, `${t.k}/${t.n}`, pct(t.rate), interval(t.low, t.high), counts(t.failure_buckets)]),
      ['l', 'r', 'r', 'l', 'l'],
    ),
  )
  log('')
  log(`suite success (unweighted mean of ${stats.tasks.length} task rates): ${pct(stats.suite_rate)}`)
  log(`outcomes: ${counts(stats.outcomes)}   validity: ${counts(stats.validity)}   (n = ${stats.attempts})`)
  log(`failure buckets: ${counts(stats.failure_buckets)}`)
}
