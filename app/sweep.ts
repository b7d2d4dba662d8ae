/**
 * `forge sweep sweep.yaml`: a matrix of suites × adapters × models × seeds run as one tracked sweep
 * (SweepWorkflow: a run per cell, each compared with its baseline, the verdicts stored), and
 * `forge sweep show | list`. Locally it brings up the stack and starts worker processes like `forge
 * run`; against a fleet (`--workers 0`, the chart's CronJob) the fleet's workers run the cells.
 */
import { Client, Connection, WorkflowFailedError } from '@temporalio/client'
import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { dirname, isAbsolute, join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { parse as parseYaml } from 'yaml'
import { SweepSpec, type SweepRecord } from '../core/contracts/sweep.js'
import { SWEEP_WORKFLOW_PREFIX, sweepCells } from '../core/sweep.js'
import type { StoreReader } from '../store/clickhouse.js'
import { homeResultsKey } from '../store/bus-auth.js'
import { grantSweep } from '../store/grants.js'
import { getSweep, listSweeps, type SweepSummary } from '../store/sweep-repositories.js'
import type { ForgeConfig } from '../stack/config.js'
import { ConfigError } from '../stack/errors.js'
import { stackUp } from '../stack/local-stack.js'
import { temporalConnectOptions } from '../stack/temporal-connection.js'
import { SuiteLoadError } from '../engine/errors.js'
import type { SweepWorkflow, SweepWorkflowResult } from '../workflows/sweep.js'
import { planRun } from './plan-run.js'
import { resolveConfig } from '../config/index.js'
import { openReader } from './store-access.js'
import { watchFleetWorkers, type PollerWatch } from './fleet-workers.js'
import { startWorkerPool } from './worker-pool.js'

/**
 * Reads a sweep file: YAML checked against SweepSpec with every problem named at once (file, field,
 * message); suite directories and the price table resolve relative to the file, so the spec means
 * the same wherever a worker runs it.
 */
export async function loadSweepFile(file: string): Promise<SweepSpec> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (error) {
    throw new ConfigError(`cannot read the sweep file ${file}: ${(error as Error).message}`, { cause: error })
  }
  let data: unknown
  try {
    data = parseYaml(text)
  } catch (error) {
    throw new ConfigError(`${file}: not valid YAML: ${(error as Error).message}`, { cause: error })
  }
  const parsed = SweepSpec.safeParse(data)
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `  ${file}: ${i.path.map(String).join('.') || '(top level)'}: ${i.message}`)
    throw new ConfigError(`invalid sweep file (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${problems.join('\n')}`)
  }
  const base = dirname(resolve(file))
  const spec = parsed.data
  // a path (./x, ../x, /x) is a directory next to the sweep file; a bare name is a built-in suite or a package
  const asPath = (ref: string) => (isAbsolute(ref) || ref.startsWith('.') ? resolve(base, ref) : ref)
  return { ...spec, suites: spec.suites.map(asPath), ...(spec.price_table ? { price_table: resolve(base, spec.price_table) } : {}) }
}

/**
 * Plans every distinct cell (suite × adapter × model) here before anything starts, so a sweep with a
 * broken suite or an unknown adapter fails at once with every problem listed, not at 2 a.m. on a worker.
 */
export async function checkSweep(spec: SweepSpec): Promise<void> {
  const seen = new Set<string>()
  const problems: string[] = []
  for (const cell of sweepCells(spec, 'check')) {
    const key = JSON.stringify([cell.suite_ref, cell.adapter, cell.adapter_config])
    if (seen.has(key)) continue
    seen.add(key)
    try {
      await planRun(resolveConfig(), {
        suite: cell.suite_ref,
        adapter: cell.adapter,
        adapter_config: cell.adapter_config,
        attempts: spec.attempts,
        seed: cell.seed,
        ...(spec.tasks ? { task_ids: spec.tasks } : {}),
        ...(spec.price_table ? { price_table: spec.price_table } : {}),
        workers: 1,
        concurrency: 1,
      })
    } catch (error) {
      if (!(error instanceof ConfigError || error instanceof SuiteLoadError)) throw error
      problems.push(`  ${cell.suite_ref} × ${cell.adapter}${cell.model ? ` × ${cell.model}` : ''}: ${error.message.split('\n').join('\n    ')}`)
    }
  }
  if (problems.length > 0) throw new ConfigError(`the sweep "${spec.name}" cannot run:\n${problems.join('\n')}`)
}

export function newSweepId(name: string, now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')
  return `${name}-${stamp}-${randomBytes(2).toString('hex')}`
}

export interface SweepOptions {
  file: string
  /** worker processes to start here; 0: the fleet's workers run the cells */
  workers: number
  /** attempts each started worker runs at once */
  concurrency: number
  /** start the sweep and return without waiting for it */
  detach?: boolean
  sweepId?: string
  /** how long to wait for the stored sweep record after the workflow finished */
  storeTimeoutMs?: number
  signal?: AbortSignal
}

export type SweepEvent =
  | { kind: 'stack'; message: string }
  | { kind: 'started'; sweep_id: string; workflow_id: string; cells: number; workers: number }

export type SweepOutcome = { detached: true; sweep_id: string; workflow_id: string; cells: number } | ({ detached: false } & SweepRecord)

/** Where Temporal and NATS are: the fleet's when both are configured, else the local stack (started if down). */
async function endpointsFor(config: ForgeConfig, log: (line: string) => void): Promise<{ temporalAddress: string; natsUrl: string }> {
  if (config.temporal.address !== undefined && config.natsUrl !== undefined) return { temporalAddress: config.temporal.address, natsUrl: config.natsUrl }
  return stackUp(config, log)
}

export async function runSweep(config: ForgeConfig, opts: SweepOptions, onEvent: (event: SweepEvent) => void = () => undefined): Promise<SweepOutcome> {
  if (!Number.isInteger(opts.workers) || opts.workers < 0 || opts.workers > 256) throw new ConfigError(`--workers must be a whole number from 0 to 256, got ${opts.workers}`)
  const spec = await loadSweepFile(opts.file)
  await checkSweep(spec)
  const sweepId = opts.sweepId ?? newSweepId(spec.name)
  if (!/^[A-Za-z0-9_-]{1,80}$/.test(sweepId)) throw new ConfigError(`--sweep-id may contain only letters, digits, _ and - (at most 80), got "${sweepId}"`)
  const cells = sweepCells(spec, sweepId).length
  const endpoints = await endpointsFor(config, (message) => onEvent({ kind: 'stack', message }))
  const pool =
    opts.workers > 0
      ? startWorkerPool({
          count: opts.workers,
          temporalAddress: endpoints.temporalAddress,
          natsUrl: endpoints.natsUrl,
          namespace: config.temporal.namespace,
          taskQueue: config.temporal.taskQueue,
          concurrency: opts.concurrency,
          logDir: join(config.home, 'logs'),
          runId: sweepId,
          onNotice: (message) => onEvent({ kind: 'stack', message }),
        })
      : undefined
  const connection = await Connection.connect(temporalConnectOptions(endpoints.temporalAddress))
  let fleet: PollerWatch | undefined
  try {
    await pool?.ready
    const client = new Client({ connection, namespace: config.temporal.namespace })
    const workflowId = `${SWEEP_WORKFLOW_PREFIX}${sweepId}`
    const handle = await client.workflow.start<typeof SweepWorkflow>('SweepWorkflow', {
      taskQueue: config.temporal.taskQueue,
      workflowId,
      args: [{ spec, sweep_id: sweepId, ...grantField(spec) }],
    })
    onEvent({ kind: 'started', sweep_id: sweepId, workflow_id: workflowId, cells, workers: opts.workers })
    if (opts.detach) return { detached: true, sweep_id: sweepId, workflow_id: workflowId, cells }
    // --workers 0: the fleet's workers run the cells; while none polls the task queue, say so (as forge run does)
    if (pool === undefined) fleet = watchFleetWorkers(client, config, (event) => onEvent({ kind: 'stack', message: event.message }))
    const cancel = () => void handle.cancel().catch(() => undefined)
    opts.signal?.addEventListener('abort', cancel, { once: true })
    let result: SweepWorkflowResult
    try {
      // every worker of ours gone for good: the sweep stays open (its cells resume when workers poll again)
      result = await Promise.race([handle.result(), ...(pool === undefined ? [] : [pool.lost])])
    } catch (error) {
      if (error instanceof WorkflowFailedError) throw new SweepFailedError(`sweep ${sweepId} failed: ${error.cause?.message ?? error.message}`, { cause: error })
      throw error
    } finally {
      opts.signal?.removeEventListener('abort', cancel)
    }
    await fleet?.settle()
    const reader = await openReader(config)
    try {
      const stored = await waitForStoredSweep(reader, result.sweep_id, opts.storeTimeoutMs ?? 60_000)
      return { detached: false, ...stored }
    } finally {
      await reader.close()
    }
  } finally {
    fleet?.stop()
    await pool?.stop()
    await connection.close()
  }
}

async function waitForStoredSweep(reader: StoreReader, sweepId: string, timeoutMs: number): Promise<SweepRecord> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const sweep = await getSweep(reader, sweepId)
    if (sweep?.status === 'completed') return sweep
    if (Date.now() > deadline) throw new SweepFailedError(`sweep ${sweepId} finished, but the store does not hold its final record after ${timeoutMs / 1000} s: is the ingester running?`)
    await sleep(100)
  }
}

/** `latest`, `latest:<name>` or a sweep id; a ConfigError naming what was asked when none matches. */
export async function showSweep(reader: StoreReader, ref: string): Promise<SweepRecord> {
  const sweep = await getSweep(reader, ref)
  if (!sweep) {
    throw new ConfigError(ref.startsWith('latest') ? `no sweep is stored yet${ref.includes(':') ? ` named "${ref.slice(7)}"` : ''}: start one with forge sweep <sweep.yaml>` : `no sweep "${ref}" is stored (see forge sweep list)`)
  }
  return sweep
}

export async function sweepList(reader: StoreReader, opts: { name?: string; limit: number }): Promise<SweepSummary[]> {
  return listSweeps(reader, opts)
}

/** Thrown when a sweep's workflow failed or its final record never reached the store. */
export class SweepFailedError extends Error {
  override name = 'SweepFailedError'
}

/** A sweep's grant field for its workflow input (none without a results key: nothing checks it then). */
export function grantField(spec: SweepSpec): { grant?: string } {
  const grant = grantSweep(spec, homeResultsKey())
  return grant === undefined ? {} : { grant }
}
