/**
 * Baselines: a versioned store in ClickHouse of runs tagged with a name, the commit hash and agent
 * version they measured. Writes go where the store's writer is: a ClickHouse server directly; in
 * embedded mode through the running ingester (chDB's single owner, over JetStream), or straight
 * into chDB when no ingester runs.
 */
import { execFileSync } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { BaselineRecord, type RunRecord } from '../core/contracts/index.js'
import { jetstream } from '@nats-io/jetstream'
import { connectBus, publishBaseline } from '../store/bus.js'
import { busReader } from '../store/bus-reader.js'
import { openClickHouse, type StoreReader } from '../store/clickhouse.js'
import { StoreError } from '../store/errors.js'
import { migrate } from '../store/migrations.js'
import { findBaseline, getRun, insertBaselines, listBaselines, nextBaselineVersion } from '../store/repositories.js'
import type { ForgeConfig } from '../stack/config.js'
import { ConfigError } from '../stack/errors.js'
import { currentEndpoints } from '../stack/local-stack.js'
import { newestRunId } from './compare.js'
import { getRunStats, type RunStats } from './stats.js'
import { openReader } from './store-access.js'

export interface SetBaselineRequest {
  /** the run to tag; default the newest */
  runId?: string
  name: string
  /** default: `git rev-parse HEAD` in the working directory, else empty */
  commit?: string
  /** default: FORGE_AGENT_VERSION (config.agentVersion), else the run's config id */
  agentVersion?: string
  note?: string
  now?: () => number
}

/** Tags a stored run as the next version of a baseline name and returns the stored record. */
export async function setBaseline(config: ForgeConfig, request: SetBaselineRequest): Promise<BaselineRecord> {
  const reader = await openReader(config)
  let record: BaselineRecord
  try {
    const runId = request.runId ?? (await newestRunId(reader))
    const run = await getRun(reader, runId)
    if (!run) throw new ConfigError(`no run "${runId}" is stored (see forge runs list)`)
    if (run.status !== 'completed') throw new ConfigError(`run ${runId} is ${run.status}: only a completed run can be a baseline`)
    const parsed = BaselineRecord.safeParse({
      name: request.name,
      version: await nextBaselineVersion(reader, request.name),
      run_id: runId,
      suite: run.suite,
      commit_hash: (request.commit ?? gitHead() ?? '').toLowerCase(),
      agent_version: request.agentVersion ?? config.agentVersion ?? run.config_id,
      note: request.note ?? '',
      created_at: (request.now ?? Date.now)(),
    })
    if (!parsed.success) {
      throw new ConfigError(`invalid baseline: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`)
    }
    record = parsed.data
  } finally {
    await reader.close()
  }
  await storeBaseline(config, record)
  return record
}

async function storeBaseline(config: ForgeConfig, record: BaselineRecord): Promise<void> {
  if (config.clickhouseUrl) {
    const client = await openClickHouse({ kind: 'server', url: config.clickhouseUrl })
    try {
      await migrate(client)
      await insertBaselines(client, [record])
    } finally {
      await client.close()
    }
    return
  }
  const endpoints = currentEndpoints(config)
  if (endpoints.ingesterRunning && endpoints.natsUrl) {
    const nc = await connectBus(endpoints.natsUrl, 'forge-baseline')
    try {
      await publishBaseline(jetstream(nc), record)
      const reader = busReader(nc)
      const deadline = Date.now() + 15_000
      while (!(await findBaseline(reader, `${record.name}@${record.version}`))) {
        if (Date.now() > deadline) {
          throw new StoreError(
            'the running ingester did not store the baseline within 15 s; it may predate baselines: restart the stack (forge stack down, then forge stack up)',
          )
        }
        await sleep(50)
      }
    } finally {
      await nc.drain().catch(() => undefined)
    }
    return
  }
  const client = await openClickHouse({ kind: 'embedded', path: config.storePath })
  try {
    await migrate(client)
    await insertBaselines(client, [record])
  } finally {
    await client.close()
  }
}

export async function baselineList(reader: StoreReader, opts: { name?: string; limit: number }): Promise<BaselineRecord[]> {
  return listBaselines(reader, opts)
}

export interface BaselineDetail {
  baseline: BaselineRecord
  run: RunRecord | undefined
  stats: RunStats
}

/** A baseline (by `latest`, name, name@version or commit) with its run's statistics. */
export async function showBaseline(reader: StoreReader, ref: string): Promise<BaselineDetail> {
  const baseline = await findBaseline(reader, ref)
  if (!baseline) throw new ConfigError(`no baseline matches "${ref}" (see forge baseline list)`)
  const stats = await getRunStats(reader, baseline.run_id)
  return { baseline, run: stats.run, stats }
}

function gitHead(): string | undefined {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() || undefined
  } catch {
    return undefined
  }
}
