/**
 * `forge run --otlp-url`: the workers export each attempt's spans as it finishes
 * (workers/otlp-exporter.ts) and report their counts on `forge.progress.<run>.otlp`; this follows those
 * reports for the run, waits at the end until every stored attempt's export settled (bounded), and
 * says once how the export went — failures never change the run's results.
 */
import { otlpReportSubject, sumOtlpCounts, type OtlpExportCounts } from '../core/otlp.js'
import type { NatsConnection } from '../store/bus.js'

export interface OtlpRunSummary extends OtlpExportCounts {
  /** the collector's traces URL */
  url: string
  /** attempts of the run whose spans should have gone out (the attempts stored) */
  attempts: number
  /** attempts whose export no worker confirmed before the wait ended (a worker died, or the collector hung) */
  unconfirmed_attempts: number
  workers: number
}

export interface OtlpFollower {
  /** resolves once workers report `attempts` settled exports, or after `timeoutMs`; then stops following */
  settled(attempts: number, timeoutMs: number): Promise<OtlpRunSummary>
  stop(): void
}

export function followOtlpExports(nc: NatsConnection, runId: string, url: string): OtlpFollower {
  const byWorker = new Map<string, OtlpExportCounts>()
  let waiter: { attempts: number; resolve: () => void } | undefined
  const total = () => sumOtlpCounts(byWorker.values())
  const sub = nc.subscribe(otlpReportSubject(runId), {
    callback: (error, msg) => {
      if (error) return
      try {
        const report = msg.json<OtlpExportCounts & { worker_id: string }>()
        const { worker_id: worker, ...counts } = report
        // each report holds the worker's counts so far: a late, smaller one never undoes a newer one
        const seen = byWorker.get(worker)
        if (seen === undefined || counts.settled_attempts >= seen.settled_attempts) byWorker.set(worker, counts)
      } catch {
        return
      }
      if (waiter !== undefined && total().settled_attempts >= waiter.attempts) waiter.resolve()
    },
  })
  return {
    async settled(attempts, timeoutMs) {
      if (total().settled_attempts < attempts) {
        let timer: NodeJS.Timeout | undefined
        await new Promise<void>((resolve) => {
          waiter = { attempts, resolve }
          timer = setTimeout(resolve, timeoutMs)
        })
        clearTimeout(timer)
        waiter = undefined
      }
      sub.unsubscribe()
      const counts = total()
      return { ...counts, url, attempts, unconfirmed_attempts: Math.max(0, attempts - counts.settled_attempts), workers: byWorker.size }
    },
    stop: () => sub.unsubscribe(),
  }
}

/** One line for the end of the run: what went to the collector, and how many exports failed. */
export function describeOtlpExport(s: OtlpRunSummary): string {
  const sent = `OTLP: ${s.exported_spans} span(s) of ${s.exported_attempts}/${s.attempts} attempt(s) exported to ${s.url}`
  const problems = [
    ...(s.failed_requests > 0 ? [`${s.failed_requests} export(s) failed (${s.failed_spans} span(s))`] : []),
    ...(s.failed_requests === 0 && s.failed_spans > 0 ? [`the collector rejected ${s.failed_spans} span(s)`] : []),
    ...(s.dropped_spans > 0 ? [`${s.dropped_spans} span(s) dropped (export queue full)`] : []),
    ...(s.unconfirmed_attempts > 0 ? [`${s.unconfirmed_attempts} attempt(s) not confirmed by their worker`] : []),
  ]
  if (problems.length === 0) return sent
  return `${sent}; ${problems.join('; ')}${s.first_error !== undefined ? ` — first error: ${s.first_error}` : ''}`
}
