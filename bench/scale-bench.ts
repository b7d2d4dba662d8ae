/**
 * FORGE_BENCH_ONLY=scale (issue 15): one `forge run`-equivalent run (runSuite) of the smoke suite ×
 * FORGE_BENCH_SCALE_ATTEMPTS / 5 with the mock agent on a fresh embedded stack. Reports wall time and
 * attempts/s; the exact stored row count (attempt rows in ClickHouse, with FINAL and without, and the
 * run record's final_stored), which must equal the attempts planned; Temporal's history of RunWorkflow
 * and of the largest ShardWorkflow (events and bytes, by describe, and RunWorkflow's events fetched
 * again as a check); and RSS start / peak / end of the worker process(es), the ingester, temporal and
 * nats-server, sampled every second. Progress goes to stdout every 30 s, so a log shows a run that stalls.
 */
import { Client, Connection } from '@temporalio/client'
import { rmSync } from 'node:fs'
import { openReader } from '../app/store-access.js'
import { runSuite, type RunReport } from '../app/run.js'
import { readSetting } from '../config/index.js'
import { stackDown, stackUp, readStackState } from '../stack/local-stack.js'
import { getRun } from '../store/repositories.js'
import { connectBus, RESULTS_STREAM } from '../store/bus.js'
import { jetstreamManager } from '@nats-io/jetstream'
import { followFinishes } from './progress.js'
import { fixed, formatTable, mib, perSecond, steadyRate } from './measure.js'
import { ProcessSampler } from './proc.js'
import { benchConfig, BENCH_CONCURRENCY, SMOKE_TASKS } from './throughput-bench.js'

interface HistoryFigure {
  workflow_id: string
  run_id: string
  events: number
  bytes: number | undefined
}

export async function scaleSweep(workers: number): Promise<void> {
  const attemptsTotal = readSetting('benchScaleAttempts')
  const perTask = Math.ceil(attemptsTotal / SMOKE_TASKS)
  const { config, home } = benchConfig('forge-bench-scale-')
  const sampler = new ProcessSampler()
  let report: RunReport | undefined
  let failure: unknown
  let runId = ''
  const started = performance.now()
  const finishes = followFinishes()
  const elapsed = () => `${((performance.now() - started) / 1000).toFixed(0)} s`
  console.log(`scale: smoke × ${perTask} = ${perTask * SMOKE_TASKS} attempts, mock agent, ${workers} worker(s) × concurrency ${BENCH_CONCURRENCY} (FORGE_BENCH_SCALE_ATTEMPTS=${attemptsTotal})`)
  try {
    const endpoints = await stackUp(config)
    const state = readStackState(home)
    sampler.watch('temporal', state.temporal?.pid)
    sampler.watch('nats-server', state.nats?.pid)
    sampler.watch('ingester', state.ingester?.pid)
    sampler.start(1_000)
    const ticker = setInterval(() => {
      const done = finishes.times.length
      const rss = [...sampler.rssSeries()].map(([name, s]) => `${name} ${mib(s.end)}`).join(', ')
      console.log(`  [${elapsed()}] ${done} attempts finished (${fixed(perSecond(done, performance.now() - started))} attempts/s so far); RSS now: ${rss}`)
    }, 30_000)
    const runStarted = performance.now()
    try {
      report = await runSuite(
        config,
        { suite: 'smoke', adapter: 'mock', attempts: perTask, workers, concurrency: BENCH_CONCURRENCY, max_in_flight: BENCH_CONCURRENCY, seed: 'scale', ingest_timeout_ms: 1_800_000 },
        (event) => {
          if (event.kind === 'workers') event.pids.forEach((pid, i) => sampler.watch(`worker ${i}`, pid))
          else if (event.kind === 'stack' || event.kind === 'notice') console.log(`  [${elapsed()}] ${event.message}`)
          else if (event.kind === 'started') {
            runId = event.run_id
            console.log(`  [${elapsed()}] run ${event.run_id} started`)
          }
          else if (event.kind === 'ingesting') console.log(`  [${elapsed()}] ingesting: ${event.stored} of ${event.expected} stored`)
        },
        undefined,
        finishes.observe,
      )
    } catch (error) {
      failure = error
    } finally {
      clearInterval(ticker)
      sampler.stop()
    }
    const wallMs = performance.now() - runStarted
    if (failure !== undefined) {
      console.log(`scale: the run FAILED after ${(wallMs / 1000).toFixed(1)} s (${finishes.times.length} attempts had finished): ${failure instanceof Error ? `${failure.name}: ${failure.message}` : String(failure)}`)
    }
    if (report !== undefined) {
      console.log(`scale: run ${runId}: status ${report.status}, wall ${(report.wall_ms / 1000).toFixed(1)} s → ${fixed(report.attempts_per_second)} attempts/s (until the report was in hand ${(wallMs / 1000).toFixed(1)} s)`)
    }
    const steady = steadyRate(finishes.times)
    const last = finishes.times.at(-1)
    if (last !== undefined) console.log(`  the last attempt finished ${((last - runStarted) / 1000).toFixed(1)} s into the run → ${fixed(perSecond(finishes.times.length, last - runStarted))} attempts/s until then`)
    if (steady !== undefined) console.log(`  steady rate (10 %–90 % of finishes, from ${finishes.times.length} progress events): ${fixed(steady)} attempts/s`)
    if (runId !== '') {
      // also after a failure: what did reach the store and Temporal is the point
      await storedCounts(config, runId, perTask * SMOKE_TASKS).catch((error: unknown) => console.log(`  stored rows could not be counted: ${(error as Error).message}`))
      await histories(endpoints.temporalAddress, config.temporal.namespace, runId).catch((error: unknown) => console.log(`  Temporal histories could not be read: ${(error as Error).message}`))
    }
    await streamFootprint(endpoints.natsUrl, config.resultsKeepSeconds).catch((error: unknown) => console.log(`  the results stream could not be read: ${(error as Error).message}`))
    console.log('  RSS by process, sampled every second (start / middle / peak / end):')
    const rows = [...sampler.rssSeries()].map(([name, s]) => [name, mib(s.start), mib(s.middle), mib(s.peak), mib(s.end), String(s.samples)] as const)
    console.log(indent(formatTable(['process', 'start', 'middle', 'peak', 'end', 'samples'], rows)))
  } finally {
    await stackDown(config).catch((error: unknown) => console.log(`  stack down failed: ${(error as Error).message}`))
    // a failed run keeps its FORGE_HOME: the processes' logs are under logs/
    if (failure === undefined) rmSync(home, { recursive: true, force: true })
    else console.log(`  kept ${home} (logs under ${home}/logs)`)
  }
  if (failure !== undefined) process.exitCode = 1
}

/** attempt rows of the run in ClickHouse (FINAL: one per attempt_uid; raw: before merges), distinct uids, and the run record */
async function storedCounts(config: Parameters<typeof openReader>[0], runId: string, planned: number): Promise<void> {
  const reader = await openReader(config)
  try {
    const [counts] = await reader.query<{ final: string | number; raw: string | number; uids: string | number }>(
      `SELECT (SELECT count() FROM attempts FINAL WHERE run_id = {run:String}) AS final,
              (SELECT count() FROM attempts WHERE run_id = {run:String}) AS raw,
              (SELECT uniqExact(attempt_uid) FROM attempts WHERE run_id = {run:String}) AS uids`,
      { run: runId },
      { timeoutSeconds: 120 },
    )
    const run = await getRun(reader, runId)
    const final = Number(counts?.final ?? 0)
    console.log(`  run record: status ${run?.status ?? '(none)'}; audit chain ${run?.audit_head ? `sealed (head ${run.audit_head.slice(0, 12)})` : 'NOT sealed'}`)
    console.log(
      `  stored: ${final} attempt rows (FINAL) of ${planned} planned — ${final === planned ? 'exact' : `OFF BY ${final - planned}`}; ${Number(counts?.raw ?? 0)} rows before merges, ${Number(counts?.uids ?? 0)} distinct attempt_uids; runs.final_stored ${run?.final_stored ?? '(no run record)'}, planned_attempts ${run?.planned_attempts ?? '?'}, missing ${run?.missing_count ?? '?'}`,
    )
  } finally {
    await reader.close()
  }
}

/** events and bytes of RunWorkflow's executions and of the largest ShardWorkflow */
async function histories(address: string, namespace: string, runId: string): Promise<void> {
  const connection = await Connection.connect({ address })
  try {
    const client = new Client({ connection, namespace })
    const workflowId = `forge-run-${runId}`
    const runs: HistoryFigure[] = []
    for await (const execution of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
      const description = await client.workflow.getHandle(workflowId, execution.runId).describe()
      runs.push({ workflow_id: workflowId, run_id: execution.runId, events: description.historyLength, bytes: description.historySize })
    }
    const fetched = (await client.workflow.getHandle(workflowId).fetchHistory()).events?.length ?? 0
    const shards: HistoryFigure[] = []
    for await (const execution of client.workflow.list({ query: `WorkflowType = 'ShardWorkflow'` })) {
      if (!execution.workflowId.startsWith(`${workflowId}/shard-`)) continue
      const description = await client.workflow.getHandle(execution.workflowId, execution.runId).describe()
      shards.push({ workflow_id: execution.workflowId, run_id: execution.runId, events: description.historyLength, bytes: description.historySize })
    }
    const bytes = (b: number | undefined) => (b === undefined ? '?' : `${(b / 1024).toFixed(0)} KiB`)
    for (const r of runs) console.log(`  Temporal: RunWorkflow execution ${r.run_id}: ${r.events} events, ${bytes(r.bytes)} (limits: 51,200 events / 50 MB)`)
    console.log(`  Temporal: RunWorkflow's current execution fetched: ${fetched} events`)
    const largest = shards.reduce<HistoryFigure | undefined>((a, b) => (a === undefined || b.events > a.events ? b : a), undefined)
    if (largest !== undefined) {
      const largestBytes = Math.max(...shards.map((s) => s.bytes ?? 0))
      console.log(`  Temporal: ${shards.length} ShardWorkflows; the largest ${largest.workflow_id}: ${largest.events} events, ${bytes(largest.bytes)} (largest by bytes ${bytes(largestBytes)})`)
    } else {
      console.log('  Temporal: no ShardWorkflow found in visibility')
    }
  } finally {
    await connection.close()
  }
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n')
}

/** What the results stream still holds on the bus's disk at the end of the run (the ingester trims what it stored after FORGE_RESULTS_KEEP). */
async function streamFootprint(natsUrl: string, keepSeconds: number): Promise<void> {
  const nc = await connectBus(natsUrl, 'forge-bench-scale', 'cli')
  try {
    const { state } = await (await jetstreamManager(nc)).streams.info(RESULTS_STREAM)
    console.log(`  results stream at the end: ${state.messages} messages, ${mib(state.bytes / 1024)} (FORGE_RESULTS_KEEP=${keepSeconds} s; stored results older than that are trimmed)`)
  } finally {
    await nc.close()
  }
}
