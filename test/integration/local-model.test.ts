/**
 * `forge run --model local` on the real embedded stack: Temporal → worker processes → each
 * attempt's LLM gateway → the stack's one model server (SmolLM2-135M-Instruct on node-llama-cpp)
 * → NATS → ingester → chDB. No API key, no server to start by hand. The model's answers are poor;
 * this asserts what Forge records, and that the same seed reproduces them.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runSuite, type RunReport } from '../../app/run.js'
import { openReader } from '../../app/store-access.js'
import { loadPriceTable } from '../../engine/llm/price-table.js'
import { isAlive, readStackState, stackDown, stackStatus } from '../../stack/local-stack.js'
import { startTestStack, type TestStack } from '../helpers/stack.js'

let stack: TestStack
const saved = process.env['FORGE_LOCAL_MODEL_URL']

beforeAll(async () => {
  delete process.env['FORGE_LOCAL_MODEL_URL']
  stack = await startTestStack('local-model')
})
afterAll(async () => {
  await stack?.down()
  if (saved !== undefined) process.env['FORGE_LOCAL_MODEL_URL'] = saved
})

const MODEL = 'local:smollm2-135m-instruct'

async function query<T>(sql: string, params: Record<string, unknown>): Promise<T[]> {
  const reader = await openReader(stack.config)
  try {
    return await reader.query<T>(sql, params)
  } finally {
    await reader.close()
  }
}

interface AttemptRow {
  task_id: string
  outcome: string
  validity: string
  model: string
  decoding: string
  input_tokens: string
  output_tokens: string
  cost_usd: number | null
  price_table_version: string
  output: string
  tool_call_count: string
  error: string
}

const attempts = (runId: string) =>
  query<AttemptRow>(
    `SELECT task_id, outcome, validity, model, decoding, input_tokens, output_tokens, cost_usd, price_table_version, output, tool_call_count, error
     FROM attempts FINAL WHERE run_id = {run:String} ORDER BY task_id`,
    { run: runId },
  )

interface StoredSpan {
  category: string
  attributes: Record<string, unknown>
}
/** The model spans of each stored trace of a run, by task; traces land on the ingester's slower lane, so wait for all `count`. */
async function modelSpans(runId: string, count: number): Promise<StoredSpan[][]> {
  const deadline = Date.now() + 60_000
  let rows = await query<{ stored: string }>('SELECT stored FROM traces FINAL WHERE run_id = {run:String} ORDER BY task_id', { run: runId })
  while (rows.length < count && Date.now() < deadline) {
    await sleep(100)
    rows = await query<{ stored: string }>('SELECT stored FROM traces FINAL WHERE run_id = {run:String} ORDER BY task_id', { run: runId })
  }
  return rows.map((r) => ((JSON.parse(r.stored) as { trace: { spans: StoredSpan[] } }).trace.spans ?? []).filter((s) => s.category === 'model'))
}

const run = (adapter: string, seed: string, extra: Record<string, unknown> = {}, concurrency = 3): Promise<RunReport> =>
  runSuite(stack.config, { suite: 'toy_math', adapter, attempts: 1, workers: 1, concurrency, seed, adapter_config: { model: 'local', max_steps: 4, ...extra } })

describe('forge run --model local', () => {
  it('runs react and single_shot on toy_math through one model server, storing model spans, token counts and $0 cost', async () => {
    const table = await loadPriceTable()
    let serverPid: number | undefined
    for (const adapter of ['react', 'single_shot']) {
      const report = await run(adapter, 'local-e2e')
      expect(report.attempts).toBe(3)
      expect(report.not_executed).toBe(0)
      const rows = await attempts(report.run_id)
      expect(rows.map((r) => r.task_id)).toEqual(['decimal_division', 'paren_product', 'precedence'])
      for (const row of rows) {
        // the model's answers are its own; the instrument worked
        expect(row).toMatchObject({ validity: 'valid', model: MODEL, cost_usd: 0, price_table_version: table.version, error: '' })
        expect(['pass', 'fail', 'violation']).toContain(row.outcome)
        expect(JSON.parse(row.decoding)).toEqual({ seed: expect.any(Number) })
        expect(Number(row.input_tokens)).toBeGreaterThan(0)
        expect(Number(row.output_tokens)).toBeGreaterThan(0)
        if (adapter === 'single_shot') expect(Number(row.tool_call_count)).toBe(0)
      }
      const spans = await modelSpans(report.run_id, 3)
      expect(spans).toHaveLength(3)
      for (const [i, attemptSpans] of spans.entries()) {
        if (adapter === 'single_shot') expect(attemptSpans).toHaveLength(1)
        else expect(attemptSpans.length).toBeGreaterThanOrEqual(1)
        let input = 0
        for (const span of attemptSpans) {
          expect(span.attributes).toMatchObject({ status: 'ok', model: MODEL, response_model: MODEL, cost_usd: 0, http_status: 200 })
          input += Number(span.attributes['input_tokens'])
        }
        // the stored token count is the sum of what the model server metered, call by call
        expect(input).toBe(Number(rows[i]!.input_tokens))
      }
      // one model server per stack: the second run reused the first one's
      const pid = readStackState(stack.home).model?.pid
      serverPid ??= pid
      expect(pid).toBe(serverPid)
    }
    const status = stackStatus(stack.config).find((s) => s.name === 'model-server')
    expect(status?.state).toBe('running')
    expect(status?.detail).toMatch(new RegExp(`^pid ${serverPid} http://127\\.0\\.0\\.1:\\d+/v1 ${MODEL}, 2 parallel, RSS [1-9]\\d* MiB$`))
  })

  it('the same run seed gives the same completions: outputs, tool calls and token counts of every attempt', async () => {
    // one attempt at a time: requests the server decodes together in one batch may sample differently
    // (llama.cpp's batched kernels round differently), and which requests overlap is a matter of timing
    const first = await run('react', 'local-repro', { temperature: 0.9 }, 1)
    const second = await run('react', 'local-repro', { temperature: 0.9 }, 1)
    const shape = (rows: AttemptRow[]) => rows.map((r) => ({ task: r.task_id, outcome: r.outcome, output: r.output, tools: r.tool_call_count, in: r.input_tokens, out: r.output_tokens, decoding: r.decoding }))
    const a = shape(await attempts(first.run_id))
    expect(a).toHaveLength(3)
    expect(shape(await attempts(second.run_id))).toEqual(a)
    expect(JSON.parse(a[0]!.decoding)).toEqual({ temperature: 0.9, seed: expect.any(Number) })
  })

  it('judges with --judge-model local on the same model server', async () => {
    const report = await runSuite(stack.config, {
      suite: 'smoke',
      adapter: 'mock',
      task_ids: ['echo_greeting'],
      attempts: 1,
      workers: 1,
      concurrency: 1,
      seed: 'local-judge',
      judge: { model: 'local', metrics: ['correctness'], gate: 'none', golden_divergence: false, max_tokens: 64, max_prompt_chars: 2500 },
    })
    expect(report.judged).toBe(1)
    const deadline = Date.now() + 60_000
    const judged = () => query<{ status: string; judge_model: string }>("SELECT status, judge_model FROM metrics FINAL WHERE run_id = {run:String} AND kind = 'judge'", { run: report.run_id })
    let metrics = await judged()
    while (metrics.length === 0 && Date.now() < deadline) {
      await sleep(100)
      metrics = await judged()
    }
    expect(metrics).toHaveLength(1)
    // a 135M judge may write a malformed reply twice: errored is data, and it still names the model
    expect(['scored', 'errored']).toContain(metrics[0]!.status)
    expect(metrics[0]!.judge_model).toBe(MODEL)
    const [stamped] = await query<{ judge_model: string }>('SELECT judge_model FROM runs FINAL WHERE run_id = {run:String}', { run: report.run_id })
    expect(stamped?.judge_model).toBe(MODEL)
  })

  it('a model server that died is seen as stale and started again by the next run', async () => {
    const before = readStackState(stack.home).model!
    process.kill(before.pid, 'SIGKILL')
    const deadline = Date.now() + 30_000
    while (isAlive(before) && Date.now() < deadline) await sleep(50)
    expect(stackStatus(stack.config).find((s) => s.name === 'model-server')).toEqual({ name: 'model-server', state: 'stopped', detail: `stale pid ${before.pid}` })
    const report = await runSuite(stack.config, { suite: 'toy_math', adapter: 'single_shot', task_ids: ['precedence'], attempts: 1, workers: 1, concurrency: 1, seed: 'restart', adapter_config: { model: 'local' } })
    expect((await attempts(report.run_id)).map((r) => [r.validity, r.model, r.error])).toEqual([['valid', MODEL, '']])
    const after = readStackState(stack.home).model!
    expect(after.pid).not.toBe(before.pid)
    expect(isAlive(after)).toBe(true)
  })

  it('forge stack down stops the model server with the rest', async () => {
    const entry = readStackState(stack.home).model
    expect(isAlive(entry)).toBe(true)
    expect(await stackDown(stack.config)).toEqual(['supervisor', 'ingester', 'model', 'nats', 'temporal'])
    expect(isAlive(entry)).toBe(false)
  })
})
