/**
 * Every out-of-process adapter end to end on the real embedded stack: Temporal → worker
 * processes (from dist/) → the adapter and its agent → NATS JetStream → ingester → chDB, with
 * statistics read back from ClickHouse. `npm run build` first: workers run from dist/.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runSuite, type RunReport } from '../../app/run.js'
import { openReader } from '../../app/store-access.js'
import { packageRoot } from '../../stack/paths.js'
import { livingGroupMembers } from '../../engine/process-group.js'
import { forge, startTestStack, type TestStack } from '../helpers/stack.js'
import { makeSuite, removeTempSuites } from '../suites/temp-suite.js'

let stack: TestStack
const root = packageRoot()
const example = (file: string): string => `${root}/examples/agents/${file}`
const testAgent = (file: string): string => fileURLToPath(new URL(`../adapters/agents/${file}`, import.meta.url))

beforeAll(async () => {
  stack = await startTestStack('adapters-oop')
})
afterAll(async () => {
  await stack?.down()
  removeTempSuites()
})

async function sql<T>(query: string, params: Record<string, unknown> = {}): Promise<T[]> {
  const reader = await openReader(stack.config)
  try {
    return await reader.query<T>(query, params)
  } finally {
    await reader.close()
  }
}

type Row = { task_id: string; outcome: string; validity: string; failure_bucket: string | null; budget_limit: string | null; error: string; tool_call_count: number }

async function rows(runId: string): Promise<Row[]> {
  return sql<Row>(
    'SELECT task_id, outcome, validity, failure_bucket, budget_limit, error, tool_call_count FROM attempts FINAL WHERE run_id = {run:String} ORDER BY task_id, attempt',
    { run: runId },
  )
}

function run(adapter: string, adapterConfig: Record<string, unknown>, extra: { attempts?: number; taskIds?: string[]; suite?: string } = {}): Promise<RunReport> {
  return runSuite(stack.config, {
    suite: extra.suite ?? 'smoke',
    adapter,
    adapter_config: adapterConfig,
    attempts: extra.attempts ?? 2,
    workers: 1,
    concurrency: 10,
    seed: `oop-${adapter}`,
    ...(extra.taskIds ? { task_ids: extra.taskIds } : {}),
  })
}

/** Every attempt of the run passed with valid measurement, stored exactly once. */
async function expectAllPassed(report: RunReport, expected: number): Promise<void> {
  const stored = await rows(report.run_id)
  expect(stored.map((r) => [r.task_id, r.outcome, r.validity, r.error])).toEqual(stored.map((r) => [r.task_id, 'pass', 'valid', '']))
  expect({ stored: stored.length, attempts: report.attempts, rate: report.suite_rate }).toEqual({ stored: expected, attempts: expected, rate: 1 })
}

describe('out-of-process adapters on the embedded stack', () => {
  it('subprocess: the JavaScript example agent over stdio solves smoke', async () => {
    const report = await run('subprocess', { command: ['node', example('echo-agent.mjs')] })
    await expectAllPassed(report, 10)
    const [calls] = await sql<{ n: string }>('SELECT count() AS n FROM tool_calls FINAL WHERE run_id = {run:String}', { run: report.run_id })
    expect(Number(calls!.n)).toBe(12)
  })

  it('subprocess: the Python example agent over stdio solves smoke', async () => {
    await expectAllPassed(await run('subprocess', { command: ['python3', example('echo_agent.py')] }), 10)
  })

  it('subprocess: an agent calling tools over the HTTP endpoint and answering in prose solves smoke', async () => {
    await expectAllPassed(await run('subprocess', { command: ['node', example('http-tools-agent.mjs')], protocol: 'http' }), 10)
  })

  it('subprocess: an agent that sleeps forever is stopped at max_duration_ms and stored as budget_exhausted', async () => {
    const suite = makeSuite({
      'tasks/alpha.yaml': 'id: alpha\ninstruction: Echo the message.\ninput: { message: hi }\ntools: [echo]\nbudget: { max_duration_ms: 800 }\ngraders:\n  - type: exact\n    expected: hi\n',
      'tasks/beta.yaml': null,
      'goldens/alpha.json': null,
    })
    const report = await run('subprocess', { command: ['node', testAgent('sleep-forever.mjs')], env: { IGNORE_TERM: '1' } }, { suite, attempts: 3 })
    expect((await rows(report.run_id)).map((r) => [r.outcome, r.validity, r.failure_bucket, r.budget_limit, r.error])).toEqual(
      Array.from({ length: 3 }, () => ['fail', 'valid', 'budget_exhausted', 'max_duration_ms', 'stopped: agent stopped at the attempt deadline (kill)']),
    )
  })

  it('module: the example module agent solves smoke, a fresh instance per attempt', async () => {
    await expectAllPassed(await run('module', { path: example('module-agent.mjs') }), 10)
  })

  describe('http', () => {
    let service: ChildProcess
    let baseUrl: string
    beforeAll(async () => {
      // the example service as its own process, on a free port it prints
      service = spawn(process.execPath, [example('agent-service.mjs')], { env: { ...process.env, PORT: '0' }, stdio: ['ignore', 'pipe', 'inherit'] })
      const [line] = (await createInterface({ input: service.stdout! })[Symbol.asyncIterator]().next()).value.match(/http:\/\/\S+/) as [string]
      baseUrl = line
    })
    afterAll(() => {
      service.kill('SIGTERM')
    })

    it('the example agent service solves smoke, reset before every attempt', async () => {
      await expectAllPassed(await run('http', { base_url: baseUrl }), 10)
    })

    it('a service without a reset still runs, every attempt stored with degraded validity', async () => {
      const report = await run('http', { base_url: baseUrl, reset_path: '/no-reset-here' }, { taskIds: ['echo_greeting'], attempts: 3 })
      expect((await rows(report.run_id)).map((r) => [r.outcome, r.validity])).toEqual(Array.from({ length: 3 }, () => ['pass', 'degraded']))
      expect(report.validity).toEqual({ degraded: 3 })
    })
  })

  it('oracle: every golden of smoke replays to a pass through the real tool proxy', async () => {
    const report = await run('oracle', {}, { taskIds: ['echo_greeting', 'reverse_shout'], attempts: 2 })
    await expectAllPassed(report, 4)
  })

  it('a worker process that exits mid-attempt takes its agents\' process groups with it', async () => {
    // the exit hook of engine/process-group.ts, in a real process: track a detached group, exit
    const script = `
      import { spawn } from 'node:child_process'
      import { trackProcessGroup } from ${JSON.stringify(`${root}/dist/engine/process-group.js`)}
      const agent = spawn('sh', ['-c', 'sleep 1000 & sleep 1000'], { detached: true, stdio: 'ignore' })
      trackProcessGroup(agent.pid)
      setTimeout(() => { console.log(agent.pid); process.exit(0) }, 200)
    `
    const worker = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
    const pgid = Number((await createInterface({ input: worker.stdout! })[Symbol.asyncIterator]().next()).value)
    await new Promise((resolve) => worker.once('exit', resolve))
    expect(pgid).toBeGreaterThan(0)
    // SIGKILL went out before the exit; the kernel ends the processes when it next schedules them
    for (const deadline = Date.now() + 10_000; livingGroupMembers(pgid).length > 0 && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 20))
    expect(livingGroupMembers(pgid)).toEqual([])
  })

  it('forge run --adapter subprocess works from the CLI as a user runs it', () => {
    const r = forge(
      ['run', '--suite', 'smoke', '--task', 'reverse_shout', '--attempts', '2', '--adapter', 'subprocess', '--adapter-config', JSON.stringify({ command: ['node', 'examples/agents/echo-agent.mjs'] }), '--json'],
      { ...stack.env },
    )
    expect(r.status, r.stderr).toBe(0)
    const report = JSON.parse(r.stdout) as RunReport
    expect([report.adapter, report.attempts, report.suite_rate]).toEqual(['subprocess', 2, 1])
  })
})
