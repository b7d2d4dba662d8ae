/**
 * `forge run` starts and follows its RunWorkflow over the local dev server's HTTP API
 * (stack/temporal-http.ts, app/run-temporal.ts) instead of loading the gRPC SDK. Against the real
 * dev server the embedded stack starts, with a real Temporal worker serving small workflows on a
 * private task queue: every way a workflow can close, continue-as-new followed, a taken workflow
 * id, an unknown namespace, a server that cannot be reached, and a forge run CLI that indeed loads
 * no @temporalio module while its workers are warm.
 */
import { spawnSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openRunTemporal } from '../../app/run-temporal.js'
import { RunIdInUseError } from '../../app/run-id.js'
import { currentTemporalHttpUrl, freePorts } from '../../stack/local-stack.js'
import { GRPC_ALREADY_EXISTS, GRPC_NOT_FOUND, GRPC_UNAVAILABLE, temporalHttpClient, TemporalHttpError, TemporalWorkflowEndedError, type TemporalHttpClient } from '../../stack/temporal-http.js'
import { packageRoot } from '../../stack/paths.js'
import { waitForWarmWorkers } from '../../stack/warm-workers.js'
import { startTestStack, type TestStack } from '../helpers/stack.js'

const TASK_QUEUE = `http-client-${randomUUID()}`

let stack: TestStack
let http: TemporalHttpClient
let worker: Worker
let running: Promise<void>
let connection: NativeConnection

beforeAll(async () => {
  stack = await startTestStack('temporal-http')
  // ERROR: a terminated workflow's last task, refused, is logged at WARN by the SDK's core
  Runtime.install({ logger: new DefaultLogger('ERROR'), telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' }, forward: {} } } })
  connection = await NativeConnection.connect({ address: stack.endpoints.temporalAddress })
  const quiet = { info() {}, warn: console.warn, error: console.error, debug() {}, trace() {}, log() {} }
  const workflowBundle = await bundleWorkflowCode({ workflowsPath: fileURLToPath(new URL('./fixtures/http-workflows.ts', import.meta.url)), logger: quiet })
  worker = await Worker.create({ connection, namespace: stack.config.temporal.namespace, taskQueue: TASK_QUEUE, workflowBundle })
  running = worker.run()
  http = temporalHttpClient(stack.endpoints.temporalHttpUrl!, stack.config.temporal.namespace)
}, 120_000)

afterAll(async () => {
  http?.close()
  worker?.shutdown()
  await running
  await connection?.close()
  await stack?.down()
})

const start = async (workflowType: string, args: unknown[] = []) => {
  const workflowId = `${workflowType}-${randomUUID()}`
  const { runId } = await http.startWorkflow({ workflowId, workflowType, taskQueue: TASK_QUEUE, args })
  return { workflowId, runId }
}

const ended = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  )

describe('the dev server over its HTTP API', () => {
  it('is what the embedded stack hands a local run: its second port, serving the namespace', async () => {
    expect(stack.endpoints.temporalHttpUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    await expect(http.describeNamespace()).resolves.toBeUndefined()
    const other = temporalHttpClient(stack.endpoints.temporalHttpUrl!, 'no-such-namespace')
    try {
      const error = await ended(other.describeNamespace())
      expect(error).toBeInstanceOf(TemporalHttpError)
      expect({ code: (error as TemporalHttpError).code, message: (error as Error).message }).toEqual({ code: GRPC_NOT_FOUND, message: expect.stringContaining('no-such-namespace') })
    } finally {
      other.close()
    }
  })

  it('starts a workflow with JSON arguments and returns its JSON result as the SDK would pass them', async () => {
    // empty arrays and objects too: the API's default payload shorthand returned an empty array as null
    const value = { plan: { run_id: 'r1', attempts: 3, task_ids: ['a', 'b'], nested: { ok: true, none: null, text: 'é ✓ "quoted"', missing: [], empty: {}, deep: [[], [{}]], big: 2 ** 53 - 1 } } }
    const { workflowId, runId } = await start('echo', [value])
    expect(runId).toMatch(/\S/)
    expect(await http.result(workflowId)).toEqual(value)
    // a closed workflow answers at once, by run id too
    expect(await http.result(workflowId, runId)).toEqual(value)
  })

  it('follows a workflow that continues as new to the run that completes', async () => {
    const { workflowId, runId } = await start('countdown', [3])
    expect(await http.result(workflowId, runId)).toBe('done after 4 runs')
  })

  it('reports a failed workflow with its cause chain, the root cause as its message', async () => {
    const { workflowId } = await start('failing')
    const error = await ended(http.result(workflowId))
    expect(error).toBeInstanceOf(TemporalWorkflowEndedError)
    const e = error as TemporalWorkflowEndedError
    expect({ status: e.status, messages: e.messages, message: e.message }).toEqual({
      status: 'failed',
      messages: ['the outer failure', 'suite toy: manifest suite.yaml not found'],
      message: 'suite toy: manifest suite.yaml not found',
    })
  })

  it('cancels and terminates a workflow; its waiter learns how it ended, past the server\'s long-poll limit', async () => {
    const a = await start('waiting')
    const cancelled = ended(http.result(a.workflowId))
    await http.cancel(a.workflowId)
    const c = (await cancelled) as TemporalWorkflowEndedError
    expect({ type: c.constructor, status: c.status }).toEqual({ type: TemporalWorkflowEndedError, status: 'canceled' })

    // the server ends a long poll after ~20 s with no event: the waiter polls again from its page token
    const b = await start('waiting')
    const terminated = ended(http.result(b.workflowId))
    await new Promise((resolve) => setTimeout(resolve, 21_000))
    await http.terminate(b.workflowId, 'forge run: the workers did not start')
    const t = (await terminated) as TemporalWorkflowEndedError
    expect({ status: t.status, message: t.message }).toEqual({ status: 'terminated', message: 'forge run: the workers did not start' })
  }, 60_000)

  it('refuses a workflow id that is taken (forge run: the run id is in use), naming the run', async () => {
    const { workflowId } = await start('waiting')
    const again = await ended(http.startWorkflow({ workflowId, workflowType: 'waiting', taskQueue: TASK_QUEUE, args: [], reusePolicy: 'REJECT_DUPLICATE' }))
    expect((again as TemporalHttpError).code).toBe(GRPC_ALREADY_EXISTS)
    await http.terminate(workflowId, 'test over')

    // forge run's own start: RunWorkflow under forge-run-<run id> (no worker of this stack takes it before it is terminated)
    const temporal = await openRunTemporal({ ...stack.config, temporal: { ...stack.config.temporal, taskQueue: `${TASK_QUEUE}-runs` } }, { address: stack.endpoints.temporalAddress, httpUrl: stack.endpoints.temporalHttpUrl })
    try {
      expect(temporal.via).toBe('http')
      const plan = { run_id: `taken-${randomUUID().slice(0, 8)}` } as never
      const first = await temporal.start(plan)
      const error = await ended(temporal.start(plan))
      expect(error).toBeInstanceOf(RunIdInUseError)
      expect((error as Error).message).toContain(`workflow forge-run-${(plan as { run_id: string }).run_id}`)
      await first.terminate('test over')
    } finally {
      await temporal.close()
    }
  })

  it('calls a server it cannot reach unavailable (code 14, as gRPC does), naming where it called', async () => {
    const [port] = await freePorts(1)
    const nowhere = temporalHttpClient(`http://127.0.0.1:${port}`, 'default')
    try {
      const error = await ended(nowhere.result('anything'))
      expect(error).toBeInstanceOf(TemporalHttpError)
      expect({ code: (error as TemporalHttpError).code, message: (error as Error).message }).toEqual({ code: GRPC_UNAVAILABLE, message: expect.stringContaining(`http://127.0.0.1:${port} is unreachable`) })
    } finally {
      nowhere.close()
    }
  })

  it('asks where the server is for every call: a dev server restarted while its HTTP port was taken moved there', async () => {
    // forge run's waiter reads it from the stack's state (currentTemporalHttpUrl), which the restart rewrote
    expect(currentTemporalHttpUrl(stack.config)).toBe(stack.endpoints.temporalHttpUrl)
    expect(currentTemporalHttpUrl({ ...stack.config, temporal: { ...stack.config.temporal, address: '10.0.0.1:7233' } })).toBeUndefined()
    const [port] = await freePorts(1)
    let at = `http://127.0.0.1:${port}`
    const moving = temporalHttpClient(() => at, stack.config.temporal.namespace)
    try {
      expect(((await ended(moving.describeNamespace())) as TemporalHttpError).code).toBe(GRPC_UNAVAILABLE)
      at = stack.endpoints.temporalHttpUrl!
      await expect(moving.describeNamespace()).resolves.toBeUndefined()
    } finally {
      moving.close()
    }
  })

  it('runs forge run on warm workers without loading the Temporal SDK in the CLI', async () => {
    // node --import the module listing: a warm worker serves only a CLI with its own flags, so the first run
    // (cold: its workflow host loads the SDK) leaves one for the second, which claims it once it has loaded
    const trace = fileURLToPath(new URL('./fixtures/loaded-modules.mjs', import.meta.url))
    const env = { ...stack.env, FORGE_WARM_WORKERS: '1' }
    const cli = () => spawnSync(process.execPath, ['--import', trace, join(packageRoot(), 'bin', 'run.js'), 'run', '--suite', 'smoke', '--adapter', 'mock', '--attempts', '1', '--json'], { env, encoding: 'utf8', timeout: 180_000 })
    const loaded = (stderr: string) => JSON.parse(/\[loaded-modules\] (.*)/.exec(stderr)?.[1] ?? 'null') as { modules: number; packages: string[]; temporal: string[] } | null
    const cold = cli()
    expect(cold.status).toBe(0)
    expect(loaded(cold.stderr)?.temporal.length).toBeGreaterThan(0)
    expect(await waitForWarmWorkers(stack.home, 1, 60_000)).toBe(true)
    const warm = cli()
    expect(warm.status).toBe(0)
    expect(JSON.parse(warm.stdout)).toMatchObject({ attempts: 5, status: 'completed' })
    // the listing sees the CommonJS packages the CLI loads (the NATS client's signing library; oclif and
    // Forge's own code are the CLI bundle's ESM, and pino loads only in a process that makes a logger)
    expect(loaded(warm.stderr)?.packages).toContain('tweetnacl')
    expect(loaded(warm.stderr)?.packages).not.toContain('pino')
    expect(loaded(warm.stderr)?.temporal).toEqual([])
  }, 240_000)
})
