/**
 * Whoever reaches Temporal is not Forge. The embedded dev server listens on 127.0.0.1 with no
 * credentials, so any local user (or a fleet's other pods) can start Forge's workflows with inputs of
 * their own, or schedule its activities from workflow code of their own. On the real binaries — the
 * embedded stack and a `forge worker` serving every run — a plain Temporal client tries: a run of a
 * suite whose tools.mjs writes a marker when imported, the same with a grant copied from a real run,
 * a sweep of that suite, and the attempt, judge and sweep activities called with such inputs. Each is
 * refused before the suite is loaded (no marker, nothing stored). The same suite granted by the
 * stack's key does run — the marker appears — so the check, not the attack, is what stopped it.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client, Connection, WorkflowFailedError } from '@temporalio/client'
import { MockActivityEnvironment } from '@temporalio/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RunPlan, type JudgeSettings } from '../../core/contracts/index.js'
import { SweepSpec, type SweepRecord } from '../../core/contracts/sweep.js'
import { sweepCells } from '../../core/sweep.js'
import { createSweepActivities } from '../../app/sweep-activities.js'
import { readBusSecrets } from '../../store/bus-auth.js'
import { jetstream } from '@nats-io/jetstream'
import { connectBus, type NatsConnection } from '../../store/bus.js'
import { attemptScopeOfPlan } from '../../core/run-scope.js'
import { grantOf, grantPlan, grantSweep } from '../../store/grants.js'
import { createActivities } from '../../workers/activities.js'
import { createJudgeActivities } from '../../workers/judge/activities.js'
import { attemptInputOf } from '../../workflows/tally.js'
import { createLogger } from '../../engine/logger.js'
import { packageRoot } from '../../stack/paths.js'
import { forgeAsync, startTestStack, type TestStack } from '../helpers/stack.js'

let stack: TestStack
let worker: ChildProcess
let workerLog = ''
let client: Client
let connection: Connection
let nc: NatsConnection
let key: string
let scratch: string
let evilSuite: string
let marker: string

beforeAll(async () => {
  stack = await startTestStack('grants')
  key = readBusSecrets(stack.home)!.results_key
  scratch = mkdtempSync(join(tmpdir(), 'forge-grants-'))
  marker = join(scratch, 'pwned')
  // the smoke suite, whose tools module writes a marker as it is imported: proof that code ran
  evilSuite = join(scratch, 'suite')
  cpSync(join(packageRoot(), 'suites', 'smoke'), evilSuite, { recursive: true })
  const tools = readFileSync(join(evilSuite, 'tools.mjs'), 'utf8')
  writeFileSync(join(evilSuite, 'tools.mjs'), `import { writeFileSync as forgeMarker } from 'node:fs'\nforgeMarker(${JSON.stringify(marker)}, String(process.pid))\n${tools}`)
  // a fleet-style worker serving every run on the stack's task queue (workflows and activities)
  worker = spawn(process.execPath, [join(packageRoot(), 'bin', 'run.js'), 'worker', '--concurrency', '2'], { env: { ...stack.env, FORGE_LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] })
  await new Promise<void>((resolve, reject) => {
    const seen = (chunk: Buffer) => {
      workerLog += chunk.toString()
      if (workerLog.includes('"msg":"worker ready"')) resolve()
    }
    worker.stdout!.on('data', seen)
    worker.stderr!.on('data', seen)
    worker.once('exit', (code) => reject(new Error(`forge worker exited ${code}: ${workerLog}`)))
  })
  connection = await Connection.connect({ address: stack.endpoints.temporalAddress })
  client = new Client({ connection, namespace: stack.config.temporal.namespace })
  nc = await connectBus(stack.endpoints.natsUrl, 'grants-test')
}, 180_000)

afterAll(async () => {
  worker?.kill('SIGKILL')
  await nc?.close().catch(() => undefined)
  await connection?.close().catch(() => undefined)
  await stack?.down()
  if (scratch) rmSync(scratch, { recursive: true, force: true })
})

const planOf = (runId: string, extra: Partial<RunPlan> = {}): RunPlan =>
  RunPlan.parse({ run_id: runId, config_id: 'mock-attacker', suite_path: evilSuite, suite: 'smoke', task_ids: ['echo_greeting'], attempts: 1, adapter: 'mock', seed: '1', ...extra })

async function runWorkflow(plan: RunPlan): Promise<{ failed?: string; result?: unknown }> {
  const handle = await client.workflow.start('RunWorkflow', { taskQueue: stack.config.temporal.taskQueue, workflowId: `forge-run-${plan.run_id}`, args: [{ plan }] })
  try {
    return { result: await handle.result() }
  } catch (error) {
    if (!(error instanceof WorkflowFailedError)) throw error
    let cause: unknown = error
    const messages: string[] = []
    while (cause instanceof Error) {
      messages.push(cause.message)
      cause = cause.cause
    }
    return { failed: messages.join(' ← ') }
  }
}

async function storedRows(runId: string): Promise<{ attempts: number; runs: number }> {
  const r = await forgeAsync(['sql', `SELECT (SELECT count() FROM attempts FINAL WHERE run_id = '${runId}') AS attempts, (SELECT count() FROM runs FINAL WHERE run_id = '${runId}') AS runs`, '--json'], stack.env)
  expect(r.status, r.stderr).toBe(0)
  const [row] = JSON.parse(r.stdout) as { attempts: string; runs: string }[]
  return { attempts: Number(row!.attempts), runs: Number(row!.runs) }
}

describe('a workflow started by someone else through Temporal', () => {
  it('RunWorkflow of a suite of its own, without a grant: refused before the suite is imported; nothing stored', async () => {
    const outcome = await runWorkflow(planOf('attacker-ungranted'))
    expect(outcome.failed).toContain('refused the record of run attacker-ungranted: it carries no valid grant')
    expect(existsSync(marker)).toBe(false)
    expect(await storedRows('attacker-ungranted')).toEqual({ attempts: 0, runs: 0 })
  })

  it('a grant copied from a real plan does not carry over to another suite, adapter config or record', async () => {
    const real = grantPlan(planOf('attacker-copied', { suite_path: join(packageRoot(), 'suites', 'smoke') }), key)
    const forged = { ...planOf('attacker-copied'), grants: real.grants }
    const outcome = await runWorkflow(forged)
    expect(outcome.failed).toContain('refused the record of run attacker-copied')
    expect(existsSync(marker)).toBe(false)
    expect(await storedRows('attacker-copied')).toEqual({ attempts: 0, runs: 0 })
  })

  it('SweepWorkflow of that suite without a grant: nothing planned, run or recorded', async () => {
    const spec = SweepSpec.parse({ name: 'attacker', suites: [evilSuite], adapters: ['mock'], attempts: 1, tasks: ['echo_greeting'] })
    const handle = await client.workflow.start('SweepWorkflow', { taskQueue: stack.config.temporal.taskQueue, workflowId: 'forge-sweep-attacker', args: [{ spec, sweep_id: 'attacker' }] })
    await expect(handle.result()).rejects.toThrow(WorkflowFailedError)
    expect(existsSync(marker)).toBe(false)
    const sweeps = await forgeAsync(['sql', "SELECT count() AS n FROM sweeps FINAL WHERE sweep_id = 'attacker'", '--json'], stack.env)
    expect(Number((JSON.parse(sweeps.stdout) as { n: string }[])[0]!.n)).toBe(0)
  })

  it('its own workflow code calling the activities directly: attempts, judging and every sweep step refuse ungranted or altered inputs', async () => {
    const logger = createLogger('grants-test', 'silent')
    const activities = createActivities({ nc, js: jetstream(nc), workerId: 'grants-test', logger, resultsKey: () => key })
    const env = new MockActivityEnvironment()
    const plan = planOf('attacker-direct')
    const input = attemptInputOf(plan, 'echo_greeting', 0)
    await expect(env.run(activities.runAttempt, input)).rejects.toThrow(/refused the attempts of run attacker-direct: it carries no valid grant/)
    // a real attempt grant, over another scope (the suite swapped in)
    const granted = attemptInputOf(grantPlan(planOf('attacker-direct', { suite_path: join(packageRoot(), 'suites', 'smoke') }), key), 'echo_greeting', 0)
    await expect(env.run(activities.runAttempt, { ...granted, suite_path: evilSuite })).rejects.toThrow(/refused the attempts/)
    await expect(env.run(activities.runAttempts, { base: { ...granted, suite_path: evilSuite }, items: [{ task_id: 'echo_greeting', attempt: 0 }] })).rejects.toThrow(/refused the attempts/)
    const judge: JudgeSettings = { model: 'local', task_queue: 'forge-judge', gate: 'none', golden_divergence: true, temperature: 0, seed: 0, max_tokens: 64, response_format: 'none', max_prompt_chars: 2000, min_confidence: 0.5, timeout_ms: 10_000 }
    const judging = createJudgeActivities({ nc, js: jetstream(nc), logger, resultsKey: () => key })
    await expect(
      env.run(judging.judgeAttempt, { attempt_uid: 'x', run_id: 'attacker-direct', config_id: 'c', suite: 'smoke', suite_path: evilSuite, task_id: 'echo_greeting', attempt: 0, judge, golden_divergence: true, metrics: false }),
    ).rejects.toThrow(/refused judging attempt x: it carries no valid grant/)
    const sweeps = createSweepActivities({ js: jetstream(nc), openReader: () => Promise.reject(new Error('never opened')), resultsKey: () => key })
    const spec = SweepSpec.parse({ name: 'attacker', suites: [evilSuite], adapters: ['mock'], attempts: 1 })
    const [cell] = sweepCells(spec, 'attacker')
    await expect(env.run(sweeps.planSweepCell, { sweep_id: 'attacker', cell: cell!, spec })).rejects.toThrow(/refused planning cell 0 of sweep attacker: it carries no valid grant/)
    // a granted spec, a cell it does not make
    const honest = SweepSpec.parse({ name: 'nightly', suites: ['smoke'], adapters: ['mock'], attempts: 1 })
    const honestGrant = grantSweep(honest, key)!
    await expect(env.run(sweeps.planSweepCell, { sweep_id: 'nightly', cell: { ...sweepCells(honest, 'nightly')[0]!, suite_ref: evilSuite }, spec: honest, grant: honestGrant })).rejects.toThrow(
      /refused planning cell 0 of sweep nightly: cell 0 is not a cell of its spec/,
    )
    await expect(
      env.run(sweeps.evaluateSweepCell, { sweep_id: 'nightly', run_id: 'victim', suite: 'smoke', baseline: 'prod', published: 0, promote: true, sweep_started_at: 0, spec: honest, cell: sweepCells(honest, 'nightly')[0]!, grant: 'f'.repeat(64) }),
    ).rejects.toThrow(/refused evaluating cell 0 of sweep nightly: it carries no valid grant/)
    const record: SweepRecord = { sweep_id: 'attacker', name: 'attacker', schedule_id: '', spec, status: 'running', verdict: 'pending', started_at: 0, finished_at: null, revision: 0, cells: [] }
    await expect(env.run(sweeps.recordSweep, record)).rejects.toThrow(
      /refused the record of sweep attacker: it carries no valid grant/,
    )
    expect(existsSync(marker)).toBe(false)
    // the grant is over what the worker is given: the same scope from the plan and from an attempt input
    expect(grantOf(key, 'attempts', attemptScopeOfPlan(plan))).toBe(grantPlan(plan, key).grants!.attempts)
  })

  it('the same suite granted with the stack\'s key runs (the marker appears): the grant, not the attack, decides', async () => {
    const outcome = await runWorkflow(grantPlan(planOf('granted-control'), key))
    expect(outcome.failed).toBeUndefined()
    expect(existsSync(marker)).toBe(true)
    rmSync(marker)
    expect((await storedRows('granted-control')).attempts).toBe(1)
  })
})
