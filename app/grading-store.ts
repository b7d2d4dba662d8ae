/**
 * Writes of grading records made outside a run (forge regrade, forge review resolve) go where the
 * store's writer is: a ClickHouse server directly; in embedded mode through the running ingester
 * (chDB's single owner, over JetStream), or straight into chDB when no ingester runs. Nothing is
 * ever updated in place: regrades and resolutions are new rows.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { AttemptRegrade, ReviewResolution } from '../core/contracts/index.js'
import { jetstream } from '@nats-io/jetstream'
import { connectBus, publishRegrade, publishReviewResolution } from '../store/bus.js'
import { busReader } from '../store/bus-reader.js'
import { openClickHouse, type StoreReader } from '../store/clickhouse.js'
import { ConfigError } from '../core/errors.js'
import { StoreError } from '../store/errors.js'
import { insertRegrades, insertResolutions } from '../store/grading-repositories.js'
import { migrate } from '../store/migrations.js'
import type { ForgeConfig } from '../stack/config.js'
import { currentEndpoints } from '../stack/local-stack.js'
import { gradingAuditEntries, sealRun, storeGradingAuditEntries } from './audit.js'

export interface GradingRecords {
  regrades?: AttemptRegrade[]
  resolutions?: ReviewResolution[]
}

/**
 * Stores the records and returns once they are readable. `stored` tells, from a reader, whether
 * they all landed (used when the ingester writes them asynchronously).
 */
export async function writeGradingRecords(
  config: ForgeConfig,
  records: GradingRecords,
  stored: (reader: StoreReader) => Promise<boolean>,
  now: () => number = Date.now,
): Promise<void> {
  await writeGradingRows(config, records, stored, now)
  // regrades and resolutions extend their runs' audit chains; nothing already linked is rewritten
  await storeGradingAuditEntries(config, gradingAuditEntries(records))
  const runs = new Set([...(records.regrades ?? []), ...(records.resolutions ?? [])].map((r) => r.run_id))
  for (const runId of runs) {
    // a run without a record (written by hand, or before runs were recorded) has no chain to extend
    await sealRun(config, runId).catch((error: unknown) => {
      if (!(error instanceof ConfigError)) throw error
    })
  }
}

async function writeGradingRows(
  config: ForgeConfig,
  records: GradingRecords,
  stored: (reader: StoreReader) => Promise<boolean>,
  now: () => number,
): Promise<void> {
  const direct = async (location: Parameters<typeof openClickHouse>[0]): Promise<void> => {
    const client = await openClickHouse(location)
    try {
      await migrate(client)
      const at = now()
      await insertRegrades(client, records.regrades ?? [], at)
      await insertResolutions(client, records.resolutions ?? [])
    } finally {
      await client.close()
    }
  }
  if (config.clickhouseUrl) return direct({ kind: 'server', url: config.clickhouseUrl })
  const endpoints = currentEndpoints(config)
  if (!endpoints.ingesterRunning || !endpoints.natsUrl) return direct({ kind: 'embedded', path: config.storePath })
  const nc = await connectBus(endpoints.natsUrl, 'forge-grading')
  try {
    const js = jetstream(nc)
    // a bounded number of publishes in flight: each waits for its JetStream acknowledgement
    const publishes = [...(records.regrades ?? []).map((r) => () => publishRegrade(js, r)), ...(records.resolutions ?? []).map((r) => () => publishReviewResolution(js, r))]
    for (let i = 0; i < publishes.length; i += 100) await Promise.all(publishes.slice(i, i + 100).map((publish) => publish()))
    const reader = busReader(nc)
    const deadline = Date.now() + 30_000 + publishes.length * 20
    while (!(await stored(reader))) {
      if (Date.now() > deadline) {
        throw new StoreError('the running ingester did not store the grading records in time; it may predate grading: restart the stack (forge stack down, then forge stack up)')
      }
      await sleep(100)
    }
  } finally {
    await nc.drain().catch(() => undefined)
  }
}
