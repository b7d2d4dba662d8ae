/**
 * The report of a finished run (`forge run`, `forge run --resume`): once the store holds what the
 * run published, its statistics and its sealed audit chain. A module of its own so that `forge run`
 * loads it while the run's workflow runs, not before it starts (issue 15: the statistics, the audit
 * trail and what they import were ~40 ms of every run's start-up).
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { ForgeConfig } from '../config/index.js'
import type { RunPlan, RunRecord } from '../core/contracts/index.js'
import { DEFAULT_KS } from '../core/report.js'
import { isolationOf } from '../engine/sandbox/config.js'
import { waitForIngestedBacklog, type NatsConnection } from '../store/bus.js'
import { countAttempts, getRun } from '../store/repositories.js'
import type { RunWorkflowResult } from '../workflows/run.js'
import { sealRun, sealRunWhenStored } from './audit.js'
import type { RunEvent, RunReport } from './run.js'
import { getRunStats } from './stats.js'
import { openReader } from './store-access.js'

/** how long a report waits for the ingester's acks before it looks in the store */
const ACKED_WAIT_MS = 10_000

/** The report of a finished run: once the store holds it, its statistics, with what its workflow counted. */
export async function reportRun(
  config: ForgeConfig,
  plan: RunPlan,
  result: RunWorkflowResult,
  wallMs: number,
  ingestTimeoutMs: number,
  onEvent: (event: RunEvent) => void,
  opts: { bus?: NatsConnection } = {},
): Promise<RunReport> {
  // a sequential run schedules fewer attempts than tasks × attempts when tasks stop early
  const scheduled = result.total
  const reader = await openReader(config, opts)
  try {
    // the completeness check already waited for the store; the final run record may still be on its way
    const checked = result.completeness !== undefined && result.completeness.unchecked === undefined
    const published = result.completeness?.stored ?? Object.values(result.tally.outcomes).reduce((a, b) => a + b, 0)
    const stored = await waitForStorage(reader, plan.run_id, { published, counted: checked }, ingestTimeoutMs, onEvent, opts.bus)
    const judged = result.tally.judged ?? 0
    // the final record the wait read: the statistics and the seal do not read it again (~6 ms each)
    const known = stored.run !== undefined && stored.run.status !== 'running' ? { run: stored.run } : {}
    // every stored result is hash-linked into the run's chain; its head goes on the run record.
    // A checked run's store held every attempt it published, audit entries included, before its workflow
    // returned (the check waited until the ingester had stored the whole results stream): the seal does
    // not count the entries first, and its reads go out before the statistics' on this reader, so its
    // links are stored while the statistics are read (~20 ms of every run's report, issue 15).
    // Otherwise the seal waits for the audit entries of the attempts the statistics found.
    const [audit, stats] = checked
      ? await Promise.all([sealRun(config, plan.run_id, { ...known, ...opts, reader }), getRunStats(reader, plan.run_id, DEFAULT_KS, known)])
      : await getRunStats(reader, plan.run_id).then(async (s) => [await sealRunWhenStored(config, plan.run_id, { attempts: s.attempts, judged }, ingestTimeoutMs, opts), s] as const)
    return {
      ...stats,
      run_id: plan.run_id,
      seed: plan.seed,
      suite: plan.suite,
      adapter: plan.adapter,
      isolation: isolationOf(plan.adapter, plan.adapter_config),
      expected_attempts: scheduled,
      not_executed: result.tally.not_executed,
      wall_ms: wallMs,
      attempts_per_second: scheduled / Math.max(wallMs / 1000, 0.001),
      ...(plan.judge !== undefined ? { judged: result.tally.judged ?? 0, judge_not_executed: result.tally.judge_not_executed ?? 0 } : {}),
      status: result.status,
      completeness: result.completeness ?? null,
      audit,
    }
  } finally {
    await reader.close()
  }
}

/**
 * Waits (at most `timeoutMs`) until the store holds the run's final record and every published attempt;
 * `counted`: the run's completeness check found them stored already, so only the record is looked for.
 */
async function waitForStorage(
  reader: Awaited<ReturnType<typeof openReader>>,
  runId: string,
  attempts: { published: number; counted: boolean },
  timeoutMs: number,
  onEvent: (event: RunEvent) => void,
  bus?: NatsConnection,
): Promise<{ run?: RunRecord }> {
  const { published, counted } = attempts
  const deadline = Date.now() + timeoutMs
  // the ingester acks the final record once it is stored (sealed, workers/ingester-seal.ts): a checked
  // run's report waits for that on the bus, where a look costs no store read, then reads the record once
  // (looking every 20 ms, each look a store read that queued behind the seal, was ~25 ms of its end)
  if (counted && bus !== undefined) await waitForIngestedBacklog(bus, { timeoutMs: Math.min(timeoutMs, ACKED_WAIT_MS), pollMs: 5 }).catch(() => undefined)
  let last = 0
  let record: RunRecord | undefined
  const count = async () => {
    try {
      const [stored, run] = await Promise.all([counted ? published : countAttempts(reader, runId), getRun(reader, runId)])
      record = run
      // the run's final record travels the same stream; count it as stored once it landed
      last = run?.status === 'running' || run === undefined ? Math.min(stored, published - 1) : stored
    } catch {
      // the ingester is restarting: ask again
    }
    return last
  }
  let stored = await count()
  let lastReport = 0
  while (stored < published && Date.now() < deadline) {
    if (Date.now() - lastReport > 2_000) {
      onEvent({ kind: 'ingesting', stored, expected: published })
      lastReport = Date.now()
    }
    // the record was published before the workflow returned and the ingester was asked to insert at once
    await sleep(20)
    stored = await count()
  }
  if (stored < published) onEvent({ kind: 'ingesting', stored, expected: published })
  return record !== undefined ? { run: record } : {}
}
