/**
 * The ingester seals a run as its final record comes in (issue 15): the record the completeness check
 * publishes once the store held everything the run published, so every attempt's audit entry is
 * stored by then. The chain is extended here, where the store is (its entries read and its links
 * written without crossing the bus), and the record goes in carrying the head — the links first, so a
 * reader that sees the record sees its chain. `forge run`'s report then finds the run sealed with one
 * read instead of reading every entry, hashing the chain and waiting for the ingester to store it
 * (~70 ms of a 1,000-attempt run's end). A head is signed (FORGE_AUDIT_KEY) by whoever holds the key,
 * never here: `forge run` and `forge audit seal` sign an unsigned head (app/audit.ts).
 */
import type { ClickHouseClient } from '@clickhouse/client'
import { sealLinks } from '../core/audit.js'
import type { RunRecord } from '../core/contracts/index.js'
import { auditChain, auditEntryHeads, insertAuditLinks } from '../store/audit.js'
import { directReader } from '../store/clickhouse.js'
import type { Logger } from '../engine/logger.js'
import { runFields } from './ingester-log.js'

/**
 * Runs of more planned attempts are sealed by `forge run` as before: their entries (~180 bytes each)
 * would pass through the ingester's memory at once, and its RSS stays flat over a long sweep.
 */
export const SEAL_ON_ARRIVAL_MAX_ATTEMPTS = 20_000

const CHECKED_STATUSES: ReadonlySet<string> = new Set(['completed', 'degraded', 'incomplete'])

/** A final record the completeness check published (it counts the planned attempts) that no one sealed yet. */
export function sealsOnArrival(run: RunRecord): boolean {
  return CHECKED_STATUSES.has(run.status) && run.audit_head === '' && run.planned_attempts > 0 && run.planned_attempts <= SEAL_ON_ARRIVAL_MAX_ATTEMPTS
}

/**
 * `runs` as they are to be inserted: each final record `sealsOnArrival` with its run's chain extended
 * (links inserted) and its head on it. A seal that fails leaves its record as it came (logged): the
 * report's seal does it then, as it did before this existed.
 */
export async function sealFinalRecords(store: ClickHouseClient, runs: readonly RunRecord[], now: number, logger: Logger): Promise<RunRecord[]> {
  if (!runs.some(sealsOnArrival)) return [...runs]
  // read-only reads on the ingester's own connection (never closed here: it is the ingester's)
  const reader = directReader(store)
  const sealed: RunRecord[] = []
  for (const run of runs) {
    if (!sealsOnArrival(run)) {
      sealed.push(run)
      continue
    }
    try {
      const [chain, entries] = await Promise.all([auditChain(reader, run.run_id), auditEntryHeads(reader, run.run_id)])
      const { links, head } = sealLinks(run.run_id, chain, entries)
      await insertAuditLinks(store, links, now)
      sealed.push({ ...run, audit_head: head })
    } catch (error) {
      logger.warn({ ...runFields(run.run_id, 'store'), err: error }, 'could not seal the run as its final record came in; its report seals it')
      sealed.push(run)
    }
  }
  return sealed
}
