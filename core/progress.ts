/**
 * Live progress of a run from its per-attempt progress events: attempts done of planned, rate,
 * ETA, pass rate so far, harness errors and what each worker did. Duplicate events (a retried
 * activity publishes again) count once. Pure: the clock is a parameter.
 */

export interface ProgressInput {
  attempt_uid: string
  task_id: string
  outcome: string
  failure_bucket: string | null
  /** absent from workers that predate it */
  worker_id?: string
}

export interface WorkerActivity {
  worker_id: string
  done: number
  /** the task of the newest attempt it finished */
  last_task: string
}

export interface ProgressSnapshot {
  done: number
  planned: number
  passed: number
  harness_errors: number
  /** passed / done; null before the first attempt */
  pass_rate: number | null
  /** attempts per second since the run started; null before the first attempt */
  rate: number | null
  /** seconds left at the current rate; null when unknown */
  eta_s: number | null
  elapsed_s: number
  workers: WorkerActivity[]
}

export class ProgressTracker {
  private readonly seen = new Set<string>()
  private passed = 0
  private harnessErrors = 0
  private readonly workers = new Map<string, WorkerActivity>()

  constructor(
    readonly planned: number,
    private startedAt: number,
  ) {}

  /** Measures rate and ETA from here (the run's workflow started; stack start-up does not count). */
  startAt(at: number): void {
    if (this.seen.size === 0) this.startedAt = at
  }

  /** Counts one event; false when it was a duplicate. */
  record(event: ProgressInput): boolean {
    if (this.seen.has(event.attempt_uid)) return false
    this.seen.add(event.attempt_uid)
    if (event.outcome === 'pass') this.passed++
    if (event.failure_bucket === 'harness_error') this.harnessErrors++
    const id = event.worker_id ?? 'unknown'
    const worker = this.workers.get(id) ?? { worker_id: id, done: 0, last_task: '' }
    worker.done++
    worker.last_task = event.task_id
    this.workers.set(id, worker)
    return true
  }

  get done(): number {
    return this.seen.size
  }

  snapshot(now: number): ProgressSnapshot {
    const done = this.seen.size
    const elapsed = Math.max(0, now - this.startedAt) / 1000
    const rate = done === 0 || elapsed === 0 ? null : done / elapsed
    const left = Math.max(0, this.planned - done)
    return {
      done,
      planned: this.planned,
      passed: this.passed,
      harness_errors: this.harnessErrors,
      pass_rate: done === 0 ? null : this.passed / done,
      rate,
      eta_s: rate === null ? null : left / rate,
      elapsed_s: elapsed,
      workers: [...this.workers.values()].sort((a, b) => (a.worker_id < b.worker_id ? -1 : a.worker_id > b.worker_id ? 1 : 0)),
    }
  }
}

function duration(s: number): string {
  if (s < 60) return `${Math.round(s)}s`
  if (s < 3600) return `${Math.floor(s / 60)}m${String(Math.round(s % 60)).padStart(2, '0')}s`
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`
}

/** One line of progress: done/planned, rate, ETA, pass rate so far, harness errors, per-worker counts. */
export function progressLine(s: ProgressSnapshot): string {
  const percent = s.planned === 0 ? 100 : Math.floor((s.done / s.planned) * 100)
  const parts = [
    `${s.done}/${s.planned} attempts (${percent}%)`,
    s.rate === null ? 'rate n/a' : `${s.rate.toFixed(1)}/s`,
    s.eta_s === null ? 'ETA n/a' : s.done >= s.planned ? `done in ${duration(s.elapsed_s)}` : `ETA ${duration(s.eta_s)}`,
    `pass ${s.pass_rate === null ? 'n/a' : `${(s.pass_rate * 100).toFixed(1)}%`}`,
    `harness errors ${s.harness_errors}`,
  ]
  if (s.workers.length > 0) parts.push(`workers ${s.workers.map((w) => `${w.worker_id}:${w.done}`).join(' ')}`)
  return parts.join(' · ')
}

/** The progress milestones (every `step` of planned, as a fraction) that `done` crossed since `before`: when plain-text output prints a line. */
export function crossedMilestone(before: number, done: number, planned: number, step = 0.1): boolean {
  if (planned <= 0) return false
  const bucket = (n: number) => Math.floor((n / planned) / step + 1e-9)
  return bucket(done) > bucket(before) || (done === planned && before < planned)
}
