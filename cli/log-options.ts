/**
 * The log flags of `forge run` (`--log-level`, `--log-only`, `--log-exclude`, `--log-format`) and
 * what they print: run events and per-attempt records (indented by span depth, or JSON lines), and
 * live progress — a redrawn status line on a terminal, plain lines at every 10% otherwise.
 */
import { Flags } from '@oclif/core'
import type { RunEvent, RunObserver as ObserveRun } from '../app/run.js'
import { observeRun, type RunObserver } from '../app/progress.js'
import { formatRecord, LOG_CATEGORIES, LOG_FORMATS, LOG_LEVELS, runRecord, shows, type LogCategory, type LogFilter, type LogFormat, type LogRecord } from '../core/log-records.js'
import { crossedMilestone, progressLine, type ProgressSnapshot } from '../core/progress.js'
import { terminalSafe } from '../core/terminal-text.js'
import { ConfigError } from '../stack/errors.js'

export const logFlags = {
  'log-level': Flags.string({
    summary: 'silent | progress (default: one line per task) | steps (each attempt\'s steps) | calls (+ model and tool calls) | trace (+ arguments and results).',
    options: [...LOG_LEVELS],
    default: 'progress',
  }),
  'log-only': Flags.string({ summary: `Only these categories, comma-separated: ${LOG_CATEGORIES.join(', ')}.` }),
  'log-exclude': Flags.string({ summary: `Leave out these categories, comma-separated: ${LOG_CATEGORIES.join(', ')}.` }),
  'log-format': Flags.string({ summary: 'pretty (indented by span depth) or jsonl (one JSON object per record).', options: [...LOG_FORMATS], default: 'pretty' }),
}

export interface LogOptions {
  filter: LogFilter
  format: LogFormat
}

function categories(flag: string, value: string | undefined): LogCategory[] {
  if (value === undefined) return []
  const names = value.split(',').map((s) => s.trim()).filter((s) => s !== '')
  const unknown = names.filter((n) => !(LOG_CATEGORIES as readonly string[]).includes(n))
  if (unknown.length > 0) throw new ConfigError(`--${flag}: unknown categor${unknown.length > 1 ? 'ies' : 'y'} ${unknown.map((u) => `"${u}"`).join(', ')} (known: ${LOG_CATEGORIES.join(', ')})`)
  if (names.length === 0) throw new ConfigError(`--${flag} names no category (known: ${LOG_CATEGORIES.join(', ')})`)
  return names as LogCategory[]
}

/** The log options the flags ask for; a ConfigError naming the flag and value when they make no sense. */
export function parseLogOptions(flags: { 'log-level'?: string | undefined; 'log-only'?: string | undefined; 'log-exclude'?: string | undefined; 'log-format'?: string | undefined }): LogOptions {
  const level = flags['log-level'] ?? 'progress'
  if (!(LOG_LEVELS as readonly string[]).includes(level)) throw new ConfigError(`--log-level must be one of ${LOG_LEVELS.join(', ')}, got "${level}"`)
  const format = flags['log-format'] ?? 'pretty'
  if (!(LOG_FORMATS as readonly string[]).includes(format)) throw new ConfigError(`--log-format must be pretty or jsonl, got "${format}"`)
  const only = categories('log-only', flags['log-only'])
  const exclude = categories('log-exclude', flags['log-exclude'])
  const both = only.filter((c) => exclude.includes(c))
  if (both.length > 0) throw new ConfigError(`--log-only and --log-exclude both name ${both.join(', ')}`)
  return { filter: { level: level as LogFilter['level'], only, exclude }, format: format as LogFormat }
}

export interface RunOutputSinks {
  /** stdout lines (records, plain progress): the command's log, which shows terminal controls as escapes (ForgeCommand.log) */
  out(line: string): void
  /** stderr, for the status line and for plain progress under --json */
  err: NodeJS.WritableStream
  /** stdout and stderr are a terminal: progress is a redrawn status line instead of plain lines */
  tty: boolean
  /** --json: stdout belongs to the JSON answer; records and progress go to stderr */
  json: boolean
  /** the terminal's width: the status line is cut to it so it redraws in place */
  columns?: number | undefined
  now?: () => number
}

/**
 * What `forge run` prints while it runs. `onEvent` takes the run's events (scheduler records at
 * `progress`); `observe` follows progress and, at `steps` and above, each attempt's records.
 */
export function runOutput(
  options: LogOptions,
  sinks: RunOutputSinks,
  describe: (event: RunEvent) => string,
): { onEvent(event: RunEvent): void; observe: ObserveRun; finish(): void } {
  const now = sinks.now ?? Date.now
  // records carry agents' text (errors, tool arguments): shown escaped, never obeyed (core/terminal-text.ts);
  // `out` is the command's log, which escapes already
  const write = (line: string) => (sinks.json ? sinks.err.write(`${terminalSafe(line)}\n`) : sinks.out(line))
  const live = sinks.tty && !sinks.json && options.filter.level !== 'silent'
  let statusShown = false
  let runId = ''
  let lastDone = 0
  let latest: ProgressSnapshot | undefined
  let timer: NodeJS.Timeout | undefined
  let observer: RunObserver | undefined

  const clearStatus = () => {
    if (statusShown) sinks.err.write('\r\x1b[2K')
    statusShown = false
  }
  const drawStatus = () => {
    if (!latest) return
    const line = progressLine(latest)
    const width = Math.max(20, (sinks.columns ?? 120) - 1)
    sinks.err.write(`\r\x1b[2K${line.length > width ? `${line.slice(0, width - 1)}…` : line}`)
    statusShown = true
  }
  const emit = (record: LogRecord) => {
    if (!shows(options.filter, record)) return
    clearStatus()
    write(formatRecord(record, options.format, options.format === 'jsonl' ? now() : undefined))
    if (live) drawStatus()
  }
  const progressRecord = (s: ProgressSnapshot) =>
    runRecord(runId, `progress ${progressLine(s)}`, { data: { done: s.done, planned: s.planned, rate: s.rate, eta_s: s.eta_s, pass_rate: s.pass_rate, harness_errors: s.harness_errors, workers: s.workers } })

  return {
    onEvent(event) {
      if (event.kind === 'started') {
        runId = event.run_id
        observer?.tracker.startAt(now())
      }
      const line = describe(event)
      const depth = Math.floor((line.length - line.trimStart().length) / 2)
      emit({ ...runRecord(runId, line.trim(), { ...(event.kind === 'task-done' ? { task_id: event.task_id } : {}), data: { event: event.kind } }), depth })
    },
    observe(nc, id, planned) {
      runId = id
      const following = observeRun(nc, id, {
        filter: options.filter,
        planned,
        now,
        onRecord: emit,
        onProgress(snapshot) {
          latest = snapshot
          // plain output: a line at every 10% of the planned attempts, never timing-dependent
          if (!live && crossedMilestone(lastDone, snapshot.done, planned)) emit(progressRecord(snapshot))
          lastDone = snapshot.done
        },
      })
      observer = following
      // the status line is redrawn on a timer so its rate and ETA stay current between attempts
      if (live) timer = setInterval(drawStatus, 250)
      return {
        stop() {
          if (timer) clearInterval(timer)
          timer = undefined
          following.stop()
          clearStatus()
        },
      }
    },
    finish() {
      if (timer) clearInterval(timer)
      clearStatus()
    },
  }
}
