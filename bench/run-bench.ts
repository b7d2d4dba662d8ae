/**
 * `npm run bench`: end-to-end orchestration throughput and memory on the embedded stack
 * (a mock agent never waits, so this measures Forge's own cost), plus raw ingest into chDB.
 *   FORGE_BENCH_ATTEMPTS (default 1000), FORGE_BENCH_WORKERS (default 1)
 *   FORGE_BENCH_ONLY=e2e|ingest|stats|report|ui|model|faults|sandbox|latency|scale|workers|hostile runs one part; the stats part times forge stats / compare over 1,000,000 attempts,
 *   report and ui (bench/report-bench.ts) the report of 10,000 attempts and forge ui pages over 100,000;
 *   the model part measures the local model server on its own (bench/model-bench.ts), apart from the harness's figures;
 *   the faults part the fault wrapper's cost per tool call with and without a profile (bench/fault-bench.ts);
 *   the sandbox part the agent sandbox's cost per attempt, on and off (bench/sandbox-bench.ts);
 *   the workers part what `forge run --workers 50` starts and costs on one machine (bench/workers-bench.ts);
 *   the hostile part what a megabyte of adversarial agent text costs a worker per attempt (bench/hostile-text-bench.ts).
 * The e2e part runs Forge's engine in one process before and after forge run (bench/throughput-bench.ts).
 * Only when asked for (they take minutes): FORGE_BENCH_ONLY=latency, the scaling curve of a mock agent
 * that thinks 200 ms (bench/latency-bench.ts); FORGE_BENCH_ONLY=scale, one run of
 * FORGE_BENCH_SCALE_ATTEMPTS (default 100,000) attempts (bench/scale-bench.ts). Peers: bench/peers/.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AttemptResult } from '../core/contracts/index.js'
import { resolveConfig } from '../stack/config.js'
import { openClickHouse } from '../store/clickhouse.js'
import { migrate } from '../store/migrations.js'
import { insertAttempts, insertRuns } from '../store/repositories.js'
import { getRunStats } from '../app/stats.js'
import { compareStoredRuns } from '../app/compare.js'
import { directReader } from '../store/clickhouse.js'
import { reportAtScale, uiAtScale } from './report-bench.js'
import { modelServerBench } from './model-bench.js'
import { faultWrapperBench } from './fault-bench.js'
import { sandboxOverhead } from './sandbox-bench.js'
import { engineVsForgeRun } from './throughput-bench.js'
import { scaleSweep } from './scale-bench.js'
import { latencyCurve } from './latency-bench.js'
import { workersFootprint } from './workers-bench.js'
import { hostileTextBench } from './hostile-text-bench.js'

async function ingest(rows: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'forge-bench-ch-'))
  const client = await openClickHouse({ kind: 'embedded', path: dir })
  try {
    await migrate(client)
    const base: AttemptResult = {
      attempt_uid: '', run_id: 'bench', config_id: 'c0', suite: 'bench', task_id: '', attempt: 0, adapter: 'mock',
      outcome: 'pass', validity: 'valid', failure_bucket: null, budget_limit: null,
      grades: [{ grader: 'exact', passed: true, score: 1, detail: 'expected "x", got "x"' }], invariants: [],
      instruction: 'Add the two numbers.', output: '42', self_report: '', error: '', cost_usd: 0.0001, latency_ms: 12,
      tool_call_count: 2, input_tokens: 120, output_tokens: 20, model: 'mock', decoding: {}, price_table_version: 'v1',
      seed: '1', worker_id: 'w', started_at: 1_764_470_000_000, finished_at: 1_764_470_000_012,
      tool_calls: [
        { index: 0, name: 'add', args: { a: 1, b: 2 }, result: 3, retry_index: 0, started_ms: 0, duration_ms: 1 },
        { index: 1, name: 'echo', args: { text: '3' }, result: '3', retry_index: 0, started_ms: 1, duration_ms: 1 },
      ],
    }
    const batch = 5_000
    const started = performance.now()
    for (let offset = 0; offset < rows; offset += batch) {
      const attempts = Array.from({ length: Math.min(batch, rows - offset) }, (_, i) => {
        const n = offset + i
        const task = `t${n % 100}`
        return { ...base, task_id: task, attempt: n, attempt_uid: `bench/c0/${task}/${n}` }
      })
      await insertAttempts(client, attempts, Date.now())
    }
    const seconds = (performance.now() - started) / 1000
    console.log(`ingest: ${rows} attempt rows (+${rows * 2} tool_calls rows) into chDB in ${seconds.toFixed(2)} s → ${(rows / seconds).toFixed(0)} rows/s (target ≥ 20,000)`)
  } finally {
    await client.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * `forge stats` and `forge compare` over 1,000,000 attempts per run (100 tasks, ~1.5 tool calls
 * each), rows generated inside chDB (INSERT … SELECT FROM numbers) so only the reads are timed.
 */
async function statsAtScale(rows: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'forge-bench-stats-'))
  const client = await openClickHouse({ kind: 'embedded', path: dir })
  try {
    await migrate(client)
    const fill = async (runId: string, passPercent: number): Promise<void> => {
      const uid = `concat('${runId}/c0/t', toString(number % 100), '/', toString(intDiv(number, 100)))`
      await client.command({
        query: `INSERT INTO attempts (attempt_uid, run_id, config_id, suite, task_id, attempt, adapter, outcome, validity,
            failure_bucket, cost_usd, latency_ms, tool_call_count, input_tokens, output_tokens, model, started_at, finished_at, ingested_at)
          SELECT ${uid}, '${runId}', 'c0', 'bench', concat('t', toString(number % 100)), intDiv(number, 100), 'mock',
            if(cityHash64(number, '${runId}') % 100 < ${passPercent}, 'pass', 'fail'), 'valid',
            if(cityHash64(number, '${runId}') % 100 < ${passPercent}, '', 'wrong_answer'),
            (cityHash64(number, 1) % 1000) / 1e6, (cityHash64(number, 2) % 50000) / 10, cityHash64(number, 3) % 4,
            100 + cityHash64(number, 4) % 900, 10 + cityHash64(number, 5) % 90, 'gpt-4o-mini', now64(3), now64(3), now64(3)
          FROM numbers(${rows})`,
      })
      await client.command({
        query: `INSERT INTO tool_calls (attempt_uid, run_id, task_id, call_index, name, args, result, retry_index, started_ms, duration_ms, ingested_at)
          SELECT ${uid}, '${runId}', concat('t', toString(number % 100)), c, ['kv_get', 'echo', 'add'][1 + (cityHash64(number, c) % 3)], '{}', '', 0, c, 1, now64(3)
          FROM numbers(${rows}) ARRAY JOIN range(toUInt8(cityHash64(number, 3) % 4)) AS c`,
      })
      const at = Date.now()
      await insertRuns(client, [
        {
          run_id: runId, suite: 'bench', suite_path: '', adapter: 'mock', config_id: 'c0', attempts: rows / 100, task_count: 100, seed: '',
          status: 'completed', started_at: at, finished_at: at, updated_at: at, price_table_version: 'bench', price_table_date: '2026-11-30',
          suite_hash: '', judge_model: '', judge_prompt_version: '', stop_width: 0, stopped_tasks: [],
        },
      ])
    }
    const filled = performance.now()
    await fill('bench1m-a', 80)
    await fill('bench1m-b', 78)
    console.log(`stats at scale: 2 runs × ${rows.toLocaleString('en-US')} attempts (100 tasks) generated in chDB in ${((performance.now() - filled) / 1000).toFixed(1)} s`)
    const reader = directReader(client)
    const time = async (label: string, target: string, fn: () => Promise<unknown>): Promise<void> => {
      const runs: number[] = []
      for (let i = 0; i < 3; i++) {
        const started = performance.now()
        await fn()
        runs.push(performance.now() - started)
      }
      console.log(`  ${label}: first ${(runs[0]! / 1000).toFixed(2)} s, best of 3 ${(Math.min(...runs) / 1000).toFixed(2)} s (${target})`)
    }
    const stats = await getRunStats(reader, 'bench1m-a')
    console.log(`  (read back: ${stats.attempts.toLocaleString('en-US')} attempts, ${stats.tasks.length} tasks, suite success ${((stats.suite_rate ?? 0) * 100).toFixed(1)}%)`)
    await time(`forge stats over ${rows.toLocaleString('en-US')} attempts`, 'target < 1 s', () => getRunStats(reader, 'bench1m-a'))
    await time(`forge compare of two ${rows.toLocaleString('en-US')}-attempt runs (with tool sequences)`, 'no target', () =>
      compareStoredRuns(reader, { runA: 'bench1m-a', runB: 'bench1m-b' }),
    )
  } finally {
    await client.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

const { attempts, workers, only } = resolveConfig().bench
if (!only || only === 'e2e') await engineVsForgeRun(attempts, workers)
if (!only || only === 'ingest') await ingest(100_000)
if (!only || only === 'stats') await statsAtScale(1_000_000)
if (!only || only === 'report') await reportAtScale(10_000)
if (!only || only === 'ui') await uiAtScale(100_000)
if (!only || only === 'model') await modelServerBench()
if (!only || only === 'faults') await faultWrapperBench()
if (!only || only === 'sandbox') await sandboxOverhead(20)
if (!only || only === 'workers') await workersFootprint()
if (!only || only === 'hostile') await hostileTextBench()
// long: only when asked for
if (only === 'latency') await latencyCurve(workers)
if (only === 'scale') await scaleSweep(workers)
