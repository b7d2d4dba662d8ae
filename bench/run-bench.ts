/**
 * `npm run bench`: end-to-end orchestration throughput and memory on the embedded stack
 * (a mock agent never waits, so this measures Forge's own cost), plus raw ingest into chDB.
 *   FORGE_BENCH_ATTEMPTS (default 1000), FORGE_BENCH_WORKERS (default 1)
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runSuite } from '../app/run.js'
import type { AttemptResult } from '../core/contracts.js'
import { resolveConfig } from '../stack/config.js'
import { readStackState, stackDown, stackUp } from '../stack/local-stack.js'
import { openClickHouse } from '../store/clickhouse.js'
import { migrate } from '../store/migrations.js'
import { insertAttempts } from '../store/repositories.js'

function rssKiB(pid: number, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number {
  try {
    const match = new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match ? Number(match[1]) : 0
  } catch {
    return 0
  }
}

async function endToEnd(attemptsTotal: number, workers: number): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), 'forge-bench-'))
  const config = resolveConfig({ ...process.env, FORGE_HOME: home, FORGE_TEMPORAL_ADDRESS: '', FORGE_NATS_URL: '', FORGE_CLICKHOUSE_URL: '' })
  try {
    await stackUp(config)
    const state = readStackState(home)
    const peaks = new Map<string, number>()
    const watch = new Map<string, number>([
      ['temporal', state.temporal?.pid ?? 0],
      ['nats-server', state.nats?.pid ?? 0],
      ['ingester', state.ingester?.pid ?? 0],
      ['cli (this process)', process.pid],
    ])
    const sample = () => {
      for (const [name, pid] of watch) peaks.set(name, Math.max(peaks.get(name) ?? 0, rssKiB(pid)))
    }
    const timer = setInterval(sample, 100)
    const perTask = Math.ceil(attemptsTotal / 5)
    // warm-up run: JIT, workflow bundle load, SQLite pages
    await runSuite(config, { suite: 'smoke', adapter: 'mock', attempts: 2, workers, concurrency: 100, seed: 'warm' })
    const report = await runSuite(
      config,
      { suite: 'smoke', adapter: 'mock', attempts: perTask, workers, concurrency: 100, seed: 'bench', maxInFlight: 500 },
      (event) => {
        if (event.kind === 'workers') event.pids.forEach((pid, i) => watch.set(`worker ${i}`, pid))
      },
    )
    sample()
    clearInterval(timer)
    console.log(`end to end: ${report.expected_attempts} attempts (smoke × ${perTask}) on ${workers} workers`)
    console.log(`  wall ${(report.wall_ms / 1000).toFixed(2)} s → ${report.attempts_per_second.toFixed(1)} attempts/s (target ≥ 100)`)
    console.log(`  stored rows ${report.attempts} of ${report.expected_attempts}; not executed ${report.not_executed}`)
    console.log('  peak RSS by process:')
    for (const [name, kib] of peaks) console.log(`    ${name.padEnd(20)} ${(kib / 1024).toFixed(0).padStart(6)} MiB`)
  } finally {
    await stackDown(config)
    rmSync(home, { recursive: true, force: true })
  }
}

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

const attempts = Number(process.env['FORGE_BENCH_ATTEMPTS'] ?? 1000)
const workers = Number(process.env['FORGE_BENCH_WORKERS'] ?? 1)
await endToEnd(attempts, workers)
await ingest(100_000)
