/**
 * Model-backed adapters end to end on the real embedded stack (Temporal → worker processes →
 * NATS → ingester → chDB) against the scripted OpenAI-compatible server: the workers take
 * OPENAI_BASE_URL / OPENAI_API_KEY from the environment of `forge run`, every model call goes
 * through each attempt's LLM gateway, and model, decoding, tokens and cost land in ClickHouse.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runSuite } from '../../app/run.js'
import { openReader } from '../../app/store-access.js'
import { loadPriceTable } from '../../engine/llm/price-table.js'
import { naiveSolver, startScriptedOpenAI, type ScriptedOpenAI } from '../fakes/scripted-openai.js'
import { forgeAsync, startTestStack, type TestStack } from '../helpers/stack.js'

let stack: TestStack
let upstream: ScriptedOpenAI
const saved = { base: process.env['OPENAI_BASE_URL'], key: process.env['OPENAI_API_KEY'] }

beforeAll(async () => {
  upstream = await startScriptedOpenAI(naiveSolver)
  // worker processes inherit the environment of `forge run` (here: this process)
  process.env['OPENAI_BASE_URL'] = upstream.baseURL
  process.env['OPENAI_API_KEY'] = 'sk-integration-upstream'
  stack = await startTestStack('llm')
})
afterAll(async () => {
  await stack?.down()
  await upstream?.close()
  for (const [name, value] of [['OPENAI_BASE_URL', saved.base], ['OPENAI_API_KEY', saved.key]] as const) {
    if (value === undefined) delete process.env[name]
    else process.env[name] = value
  }
})

interface AttemptRow {
  task_id: string
  attempt: number
  outcome: string
  failure_bucket: string
  model: string
  decoding: string
  input_tokens: number
  output_tokens: number
  cost_usd: number | null
  price_table_version: string
  tool_call_count: number
}

async function attemptRows(runId: string): Promise<AttemptRow[]> {
  const reader = await openReader(stack.config)
  try {
    const rows = await reader.query<AttemptRow>(
      `SELECT task_id, attempt, outcome, failure_bucket, model, decoding, input_tokens, output_tokens, cost_usd, price_table_version, tool_call_count
       FROM attempts FINAL WHERE run_id = {run:String} ORDER BY task_id, attempt`,
      { run: runId },
    )
    return rows.map((r) => ({ ...r, attempt: Number(r.attempt), input_tokens: Number(r.input_tokens), output_tokens: Number(r.output_tokens), tool_call_count: Number(r.tool_call_count) }))
  } finally {
    await reader.close()
  }
}

describe('model-backed adapters on the embedded stack', () => {
  it('forge run --adapter react: every smoke task solved through the gateway, with model, decoding, tokens and cost stored', async () => {
    const table = await loadPriceTable()
    const before = upstream.requests.length
    const report = await runSuite(stack.config, {
      suite: 'smoke',
      adapter: 'react',
      attempts: 2,
      workers: 1,
      concurrency: 10,
      seed: 'llm-e2e',
      adapter_config: { model: 'scripted-e2e', temperature: 0, seed: 5 },
    })
    expect(report.attempts).toBe(10)
    expect(report.outcomes).toEqual({ pass: 10 })

    const rows = await attemptRows(report.run_id)
    // the naive script: one call per tool, one answer; usage 10 × turn prompt tokens, 5 completion tokens per call
    const toolsOf: Record<string, number> = { capital_lookup: 1, count_words: 1, echo_greeting: 1, reverse_shout: 2, sum_two_numbers: 1 }
    expect(rows).toEqual(
      Object.keys(toolsOf).flatMap((task) =>
        [0, 1].map((attempt) => {
          const calls = (toolsOf[task] ?? 0) + 1
          return {
            task_id: task,
            attempt,
            outcome: 'pass',
            // the store keeps "no bucket" as ''
            failure_bucket: '',
            model: 'scripted-e2e',
            decoding: JSON.stringify({ temperature: 0, seed: 5 }),
            input_tokens: (10 * calls * (calls + 1)) / 2,
            output_tokens: 5 * calls,
            cost_usd: 0,
            price_table_version: table.version,
            tool_call_count: toolsOf[task],
          }
        }),
      ),
    )
    const requests = upstream.requests.slice(before)
    expect(requests).toHaveLength(rows.reduce((n, r) => n + r.tool_call_count + 1, 0))
    // the upstream sees the worker's key on every call; the agent only had its per-attempt token
    expect(new Set(requests.map((r) => r.authorization))).toEqual(new Set(['Bearer sk-integration-upstream']))
    expect(new Set(requests.map((r) => r.body.model))).toEqual(new Set(['scripted-e2e']))
  })

  it.each(['langgraph', 'pydantic-ai'])('forge run --adapter %s solves a two-tool task through the gateway', async (adapter) => {
    const report = await runSuite(stack.config, {
      suite: 'smoke',
      adapter,
      attempts: 2,
      workers: 1,
      concurrency: 2,
      seed: 'llm-frameworks',
      task_ids: ['reverse_shout'],
      adapter_config: { model: `scripted-${adapter}` },
    })
    expect(report.outcomes).toEqual({ pass: 2 })
    const rows = await attemptRows(report.run_id)
    expect(rows.map((r) => [r.model, r.tool_call_count, r.input_tokens, r.output_tokens, r.cost_usd])).toEqual([
      [`scripted-${adapter}`, 2, 60, 15, 0],
      [`scripted-${adapter}`, 2, 60, 15, 0],
    ])
  })

  it('forge run --model sets the model from the command line (the CLI as a user runs it)', async () => {
    const env = { ...stack.env, OPENAI_BASE_URL: upstream.baseURL, OPENAI_API_KEY: 'sk-integration-upstream' }
    const cli = await forgeAsync(
      ['run', '--suite', 'smoke', '--adapter', 'single_shot', '--model', 'scripted-cli', '--task', 'echo_greeting', '--attempts', '2', '--json'],
      env,
      120_000,
    )
    expect(cli.stderr).toBe('')
    expect(cli.status).toBe(0)
    const report = JSON.parse(cli.stdout) as { run_id: string; attempts: number }
    expect(report.attempts).toBe(2)
    const rows = await attemptRows(report.run_id)
    // one completion without tools: the script's answer to an offer of no tools
    expect(rows.map((r) => [r.model, r.outcome, r.failure_bucket, r.tool_call_count, r.input_tokens, r.output_tokens, r.cost_usd])).toEqual([
      ['scripted-cli', 'fail', 'wrong_answer', 0, 10, 5, 0],
      ['scripted-cli', 'fail', 'wrong_answer', 0, 10, 5, 0],
    ])
    expect(rows.every((r) => typeof (JSON.parse(r.decoding) as { seed?: unknown }).seed === 'number')).toBe(true)
  })
})
