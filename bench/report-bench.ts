/**
 * Bench parts for seeing inside runs (FORGE_BENCH_ONLY=report | ui):
 *   report — `forge report` of a 10,000-attempt run: time to build and write it (with its trace
 *            pages), the report's size, and (where Chromium exists) the time to render it;
 *   ui     — `forge ui` pages over a 100,000-attempt run: runs list, run, task, a deep task page,
 *            a filtered run-wide page, an attempt's trace and the run's report, best of 3.
 * Rows are generated inside chDB (INSERT … SELECT FROM numbers), traces included, so only reads are timed.
 */
import { readSetting } from '../config/index.js'
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { writeRunReport } from '../app/report.js'
import { startUi } from '../app/ui.js'
import { openReader } from '../app/store-access.js'
import type { StoredTrace } from '../core/contracts/index.js'
import { resolveConfig } from '../stack/config.js'
import { directReader, openClickHouse, type ClickHouseClient } from '../store/clickhouse.js'
import { migrate } from '../store/migrations.js'
import { insertRuns } from '../store/repositories.js'

const TEMPLATE: StoredTrace = {
  attempt_uid: 'UIDX', run_id: 'RUNX', config_id: 'c0', suite: 'bench', task_id: 'TASKX', attempt: 777777,
  outcome: 'fail', validity: 'valid', failure_bucket: 'wrong_answer',
  grades: [{ grader: 'exact', passed: false, score: 0, detail: 'expected "42", got "41"' }],
  invariants: [],
  trace: {
    output: '41',
    tool_calls: [
      { index: 0, name: 'kv_get', args: { key: 'a' }, result: { value: 1 }, retry_index: 0, started_ms: 2, duration_ms: 3 },
      { index: 1, name: 'add', args: { a: 1, b: 40 }, result: 41, retry_index: 0, started_ms: 6, duration_ms: 1 },
    ],
    spans: [
      { span_id: 'attempt', parent_span_id: null, category: 'attempt', name: 'UIDX', start_ms: 0, duration_ms: 12, attributes: {} },
      { span_id: 'agent', parent_span_id: 'attempt', category: 'agent', name: 'mock', start_ms: 1, duration_ms: 9, attributes: { result: 'returned' } },
      { span_id: 'tool-0', parent_span_id: 'agent', category: 'tool', name: 'kv_get', start_ms: 2, duration_ms: 3, attributes: { status: 'ok' } },
      { span_id: 'tool-1', parent_span_id: 'agent', category: 'tool', name: 'add', start_ms: 6, duration_ms: 1, attributes: { status: 'ok' } },
      { span_id: 'grading', parent_span_id: 'attempt', category: 'grading', name: 'grade', start_ms: 11, duration_ms: 1, attributes: {} },
    ],
    state_snapshots: [], errors: [], usage: { input_tokens: 120, output_tokens: 20 }, duration_ms: 9, refused: false,
  },
  env: null, truncated: [], stored_at: 0,
}

/** A run of `rows` attempts over `tasks` tasks in chDB: attempts, 2 tool calls each (every 7th attempt meets an injected fault), traces. */
async function fillRun(client: ClickHouseClient, runId: string, rows: number, tasks: number): Promise<void> {
  const task = `concat('t', toString(number % ${tasks}))`
  const attempt = `intDiv(number, ${tasks})`
  const uid = `concat('${runId}/c0/', ${task}, '/', toString(${attempt}))`
  const pass = `cityHash64(number, '${runId}') % 100 < 75`
  const harness = `cityHash64(number, 9) % 1000 = 0`
  await client.command({
    query: `INSERT INTO attempts (attempt_uid, run_id, config_id, suite, task_id, attempt, adapter, outcome, validity, failure_bucket, grades,
        error, cost_usd, latency_ms, tool_call_count, input_tokens, output_tokens, model, worker_id, started_at, finished_at, ingested_at)
      SELECT ${uid}, '${runId}', 'c0', 'bench', ${task}, ${attempt}, 'mock', if(${pass} AND NOT ${harness}, 'pass', 'fail'), 'valid',
        multiIf(${harness}, 'harness_error', ${pass}, '', 'wrong_answer'), '[{"grader":"exact","passed":true,"score":1,"detail":""}]',
        if(${harness}, 'adapter threw', ''), (cityHash64(number, 1) % 1000) / 1e6, (cityHash64(number, 2) % 50000) / 10, 2,
        100 + cityHash64(number, 4) % 900, 10 + cityHash64(number, 5) % 90, 'gpt-4o-mini', concat('w', toString(number % 4)), now64(3), now64(3), now64(3)
      FROM numbers(${rows})`,
  })
  await client.command({
    query: `INSERT INTO tool_calls (attempt_uid, run_id, task_id, call_index, name, args, result, injected_fault, retry_index, started_ms, duration_ms, ingested_at)
      SELECT ${uid}, '${runId}', ${task}, c, ['kv_get', 'add'][c + 1], '{}', '', if(c = 0 AND number % 7 = 0, 'timeout', ''), 0, c, 1, now64(3)
      FROM numbers(${rows}) ARRAY JOIN [0, 1] AS c`,
  })
  const template = JSON.stringify(TEMPLATE).replace('"failure_bucket":"wrong_answer"', '"failure_bucket":BUCKETX').replace('"outcome":"fail"', '"outcome":"OUTCOMEX"')
  const stored = `replaceAll(replaceAll(replaceAll(replaceAll(replaceAll(replaceAll({template:String}, 'UIDX', ${uid}), 'RUNX', '${runId}'), 'TASKX', ${task}), '777777', toString(${attempt})),
    'OUTCOMEX', if(${pass} AND NOT ${harness}, 'pass', 'fail')), 'BUCKETX', multiIf(${harness}, '"harness_error"', ${pass}, 'null', '"wrong_answer"'))`
  await client.command({
    query: `INSERT INTO traces (attempt_uid, run_id, config_id, suite, task_id, attempt, stored, bytes, truncated, stored_at, ingested_at)
      SELECT ${uid}, '${runId}', 'c0', 'bench', ${task}, ${attempt}, ${stored}, length(${stored}), [], now64(3), now64(3) FROM numbers(${rows})`,
    query_params: { template },
  })
  const at = Date.now()
  await insertRuns(client, [
    {
      run_id: runId, suite: 'bench', suite_path: '', adapter: 'mock', config_id: 'c0', attempts: rows / tasks, task_count: tasks, seed: 'bench',
      status: 'completed', started_at: at, finished_at: at, updated_at: at, price_table_version: 'bench', price_table_date: '2026-11-30',
      suite_hash: '', judge_model: '', judge_prompt_version: '', stop_width: 0, stopped_tasks: [],
    },
  ])
}

async function timeBest(runs: number, fn: () => Promise<unknown>): Promise<{ first: number; best: number }> {
  const times: number[] = []
  for (let i = 0; i < runs; i++) {
    const started = performance.now()
    await fn()
    times.push(performance.now() - started)
  }
  return { first: times[0]!, best: Math.min(...times) }
}

const CHROMIUM = [readSetting('chromium')].find((p) => existsSync(p))

/** How long Chromium takes to load and lay out a page (navigation to the load event), best of 3; null without Chromium. */
async function renderMs(url: string): Promise<number | null> {
  if (!CHROMIUM) return null
  const { chromium } = await import('playwright-core')
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] })
  try {
    const times: number[] = []
    for (let i = 0; i < 3; i++) {
      const page = await browser.newPage()
      const started = performance.now()
      await page.goto(url, { waitUntil: 'load' })
      await page.evaluate('document.body.getBoundingClientRect().height')
      times.push(performance.now() - started)
      await page.close()
    }
    return Math.min(...times)
  } finally {
    await browser.close()
  }
}

export async function reportAtScale(rows = 10_000): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'forge-bench-report-'))
  const client = await openClickHouse({ kind: 'embedded', path: join(dir, 'store') })
  try {
    await migrate(client)
    const filled = performance.now()
    await fillRun(client, 'bench10k', rows, 50)
    console.log(`report at scale: ${rows.toLocaleString('en-US')} attempts (50 tasks, traces) generated in chDB in ${((performance.now() - filled) / 1000).toFixed(1)} s`)
    const reader = directReader(client)
    const out = join(dir, 'out', 'report.html')
    let written: Awaited<ReturnType<typeof writeRunReport>> | undefined
    const report = await timeBest(3, async () => {
      written = await writeRunReport(reader, { runId: 'bench10k', out, now: Date.now() })
    })
    const tracesDir = written!.traces_dir!
    const traceBytes = readdirSync(tracesDir).reduce((t, f) => t + statSync(join(tracesDir, f)).size, 0)
    console.log(`  forge report (+ ${written!.traces_written} trace pages): first ${(report.first / 1000).toFixed(2)} s, best of 3 ${(report.best / 1000).toFixed(2)} s`)
    console.log(`  report size ${(written!.bytes / 1024).toFixed(0)} KiB (${written!.failed_listed} of ${written!.failed_attempts} failed attempts listed); trace pages ${(traceBytes / 1024).toFixed(0)} KiB in all`)
    const render = await renderMs(pathToFileURL(out).href)
    console.log(render === null ? '  render: skipped (no Chromium)' : `  render in Chromium (load event, best of 3): ${(render / 1000).toFixed(2)} s (target: seconds)`)
  } finally {
    await client.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

export async function uiAtScale(rows = 100_000): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), 'forge-bench-ui-'))
  const config = resolveConfig({ ...process.env, FORGE_HOME: home, FORGE_TEMPORAL_ADDRESS: '', FORGE_NATS_URL: '', FORGE_CLICKHOUSE_URL: '' })
  const client = await openClickHouse({ kind: 'embedded', path: config.storePath })
  try {
    await migrate(client)
    const filled = performance.now()
    await fillRun(client, 'bench100k', rows, 100)
    console.log(`ui at scale: ${rows.toLocaleString('en-US')} attempts (100 tasks, traces) generated in chDB in ${((performance.now() - filled) / 1000).toFixed(1)} s`)
  } finally {
    await client.close()
  }
  // no stack runs: forge ui opens the embedded store per request (the slowest of its three ways in)
  const open = await timeBest(3, async () => (await openReader(config)).close())
  console.log(`  (each page below includes opening and closing the embedded store: ${open.best.toFixed(0)} ms of it, best of 3)`)
  const ui = await startUi(config, { host: '127.0.0.1', port: 0 })
  try {
    const deep = Math.floor(rows / 100) - 50
    const pages: [string, string][] = [
      ['runs list', '/'],
      ['run (stats of all tasks)', '/runs/bench100k'],
      ['task, first page', '/runs/bench100k/tasks/t42'],
      [`task, page after attempt ${deep}`, `/runs/bench100k/tasks/t42?after=t42%2F${deep}`],
      ['run-wide, harness errors only', '/runs/bench100k/attempts?bucket=harness_error'],
      ['attempt trace', `/attempts/${encodeURIComponent('bench100k/c0/t42/7')}`],
      ['run report (500 failed listed)', '/runs/bench100k/report'],
    ]
    for (const [label, path] of pages) {
      let bytes = 0
      let status = 0
      const t = await timeBest(3, async () => {
        const res = await fetch(new URL(path, ui.url))
        status = res.status
        bytes = (await res.arrayBuffer()).byteLength
      })
      console.log(`  ${label.padEnd(34)} ${status} ${(bytes / 1024).toFixed(0).padStart(5)} KiB  first ${t.first.toFixed(0).padStart(5)} ms, best of 3 ${t.best.toFixed(0).padStart(5)} ms`)
    }
  } finally {
    await ui.close()
    rmSync(home, { recursive: true, force: true })
  }
}
