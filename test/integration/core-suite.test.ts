/**
 * The core suite end to end on the real embedded stack: Temporal → worker processes (each with
 * its own environment pool: workspaces, SQLite databases, HTTP fixture services) → NATS →
 * ingester → chDB. With the mock agent, and with the react adapter against a scripted model
 * server that plays each task's golden — so every attempt must pass through the real environment.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runSuite } from '../../app/run.js'
import { openReader } from '../../app/store-access.js'
import type { AgentTrace } from '../../core/contracts/index.js'
import type { LoadedSuite } from '../../core/plugins.js'
import { loadSuite } from '../../engine/suite-loader.js'
import { startScriptedOpenAI, type ChatRequest, type ScriptedOpenAI, type ScriptedReply } from '../fakes/scripted-openai.js'
import { startTestStack, type TestStack } from '../helpers/stack.js'

let stack: TestStack
let model: ScriptedOpenAI
const core = await loadSuite('core')
const saved = { base: process.env['OPENAI_BASE_URL'], key: process.env['OPENAI_API_KEY'] }

/** A tool outcome as the react adapter shows it to the model. */
function shown(call: AgentTrace['tool_calls'][number]): string {
  if (call.error !== undefined) return `Error: ${call.error}`
  return typeof call.result === 'string' ? call.result : (JSON.stringify(call.result) ?? 'null')
}

/**
 * A model that knows every golden: it finds the task by its verbatim instruction and — for
 * same-words tasks, which share it — by the tool results it has seen so far, then makes the
 * golden's next call, or gives the golden's answer.
 */
function goldenModel(suite: LoadedSuite) {
  return (request: ChatRequest, turn: number): ScriptedReply => {
    const user = request.messages.find((m) => m.role === 'user')
    const instruction = String(user?.content ?? '').split('\n\nInput:\n')[0]
    const seen = request.messages.filter((m) => m.role === 'tool').map((m) => String(m.content))
    const golden = suite.tasks
      .filter((t) => t.instruction === instruction)
      .map((t) => suite.goldens.get(t.id) as AgentTrace)
      .find((g) => seen.every((content, i) => g.tool_calls[i] !== undefined && shown(g.tool_calls[i]) === content))
    if (golden === undefined) return { content: 'I do not know.' }
    const call = golden.tool_calls[turn]
    if (call !== undefined) return { tool_calls: [{ name: call.name, arguments: call.args as Record<string, unknown> }] }
    return { content: typeof golden.output === 'string' ? golden.output : JSON.stringify(golden.output) }
  }
}

beforeAll(async () => {
  model = await startScriptedOpenAI(goldenModel(core))
  // worker processes inherit the environment of `forge run` (here: this process)
  process.env['OPENAI_BASE_URL'] = model.baseURL
  process.env['OPENAI_API_KEY'] = 'sk-core-upstream'
  stack = await startTestStack('core')
})
afterAll(async () => {
  await stack?.down()
  await model?.close()
  for (const [name, value] of [['OPENAI_BASE_URL', saved.base], ['OPENAI_API_KEY', saved.key]] as const) {
    if (value === undefined) delete process.env[name]
    else process.env[name] = value
  }
})

async function sql<T>(query: string, params: Record<string, unknown>): Promise<T[]> {
  const reader = await openReader(stack.config)
  try {
    return await reader.query<T>(query, params)
  } finally {
    await reader.close()
  }
}

describe('forge run --suite core on the embedded stack', () => {
  it('--adapter mock: every attempt runs in its own verified environment and lands in ClickHouse once', async () => {
    const report = await runSuite(stack.config, { suite: 'core', adapter: 'mock', attempts: 3, workers: 2, concurrency: 8, seed: 'core-mock' })
    expect({ attempts: report.attempts, tasks: report.tasks.length, not_executed: report.not_executed }).toEqual({ attempts: 96, tasks: 32, not_executed: 0 })
    const [row] = await sql<{ n: string; uids: string; invalid: string; quarantined: string; passed: string; calls: string }>(
      `SELECT count() AS n, uniqExact(attempt_uid) AS uids, countIf(validity = 'invalid') AS invalid,
              countIf(position(error, 'quarantined') > 0) AS quarantined, countIf(outcome = 'pass') AS passed,
              (SELECT count() FROM tool_calls FINAL WHERE run_id = {run:String}) AS calls
       FROM attempts FINAL WHERE run_id = {run:String}`,
      { run: report.run_id },
    )
    expect({ n: Number(row?.n), uids: Number(row?.uids), invalid: Number(row?.invalid), quarantined: Number(row?.quarantined) }).toEqual({ n: 96, uids: 96, invalid: 0, quarantined: 0 })
    // the mock agent makes progress on some tasks and fails others, through the real tools
    expect(Number(row?.calls)).toBeGreaterThan(96)
    expect(Number(row?.passed)).toBeGreaterThan(0)
    expect(Number(row?.passed)).toBeLessThan(96)
    for (const task of report.tasks) expect(task.n).toBe(3)
  })

  it('--adapter react against a scripted model that plays the goldens: every task passes', async () => {
    const before = model.requests.length
    const report = await runSuite(stack.config, {
      suite: 'core',
      adapter: 'react',
      attempts: 1,
      workers: 2,
      concurrency: 8,
      seed: 'core-react',
      adapter_config: { model: 'scripted-golden', max_steps: 40 },
    })
    const failed = await sql<{ task_id: string; outcome: string; error: string; grades: string }>(
      "SELECT task_id, outcome, error, grades FROM attempts FINAL WHERE run_id = {run:String} AND outcome != 'pass' ORDER BY task_id",
      { run: report.run_id },
    )
    expect(failed).toEqual([])
    expect({ attempts: report.attempts, outcomes: report.outcomes }).toEqual({ attempts: 32, outcomes: { pass: 32 } })
    const goldenCalls = core.tasks.reduce((n, t) => n + (core.goldens.get(t.id)?.tool_calls.length ?? 0), 0)
    // one model call per golden tool call, plus one answer per task
    expect(model.requests.length - before).toBe(goldenCalls + core.tasks.length)
  })
})
