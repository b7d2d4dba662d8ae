/**
 * The audit trail's use cases: seal a run (link every audit entry not yet in its chain, in the
 * fixed order, and store the new head — signed with FORGE_AUDIT_KEY when set — on the run record),
 * store the entries of regrades and resolutions, and verify a run from its stored rows. Writes go
 * where the store's writer is: a ClickHouse server directly, the running ingester over JetStream,
 * else chDB opened directly. Links and entries are only ever added.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { readSetting, type ForgeConfig } from '../config/index.js'
import { auditEntryOf, sealLinks, signHead, verifyAudit, type AuditEntry, type AuditLink, type AuditReport } from '../core/audit.js'
import type { AttemptRegrade, AuditRecord, ReviewResolution, RunRecord } from '../core/contracts/index.js'
import type { AuditEntryHead } from '../core/audit.js'
import { ConfigError } from '../core/errors.js'
import { auditChain, auditEntries, auditEntryHeads, auditRowsOfRun, countAuditEntries, insertAuditRecords, regradeAuditRows, regradeKey, resolutionAuditRows, sealState, sealStored } from '../store/audit.js'
import { jetstream } from '@nats-io/jetstream'
import { connectBus, publishAuditRecord, publishRunRecord, waitForIngestedBacklog, type NatsConnection } from '../store/bus.js'
import { busReader } from '../store/bus-reader.js'
import { openClickHouse, type StoreReader } from '../store/clickhouse.js'
import { StoreError } from '../store/errors.js'
import { getRun, insertRuns } from '../store/repositories.js'
import { currentEndpoints } from '../stack/local-stack.js'
import { openReader } from './store-access.js'


export interface SealReport {
  run_id: string
  /** the chain's head after sealing; also on the run record */
  head: string
  /** HMAC-SHA256 of the head under FORGE_AUDIT_KEY; '' without a key */
  signature: string
  links: number
  /** links this seal added (0: everything was sealed already) */
  added: number
}

/** The audit entries of regrades and resolutions, as their writers store them. */
export function gradingAuditEntries(records: { regrades?: readonly AttemptRegrade[]; resolutions?: readonly ReviewResolution[] }): AuditEntry[] {
  return [
    ...(records.regrades ?? []).map((r) => auditEntryOf(r.run_id, 'regrade', regradeKey(r), regradeAuditRows(r))),
    ...(records.resolutions ?? []).map((r) => auditEntryOf(r.run_id, 'resolution', r.resolution_id, resolutionAuditRows(r))),
  ]
}

/**
 * Stores audit entries and links, and a run record, where the store's writer is; returns once they are
 * readable. `bus`: a connection to the local stack's bus this process holds already (left open).
 */
async function writeAudit(config: ForgeConfig, record: AuditRecord, run: RunRecord | undefined, stored: (reader: StoreReader) => Promise<boolean>, id: string, bus?: NatsConnection): Promise<void> {
  const direct = async (location: Parameters<typeof openClickHouse>[0]): Promise<void> => {
    const { migrate } = await import('../store/migrations.js')
    const client = await openClickHouse(location)
    try {
      await migrate(client)
      await insertAuditRecords(client, [record], Date.now())
      if (run !== undefined) await insertRuns(client, [run])
    } finally {
      await client.close()
    }
  }
  if (config.clickhouseUrl) return direct({ kind: 'server', url: config.clickhouseUrl })
  const endpoints = currentEndpoints(config)
  if (!endpoints.ingesterRunning || !endpoints.natsUrl) return direct({ kind: 'embedded', path: config.storePath })
  const nc = bus ?? (await connectBus(endpoints.natsUrl, 'forge-audit'))
  try {
    const js = jetstream(nc)
    // in pieces that stay well under NATS's 1 MiB message limit
    const pieces = [
      ...chunks(record.entries, 200).map((entries) => ({ entries, links: [] })),
      ...chunks(record.links, 2000).map((links) => ({ entries: [], links })),
    ]
    for (const [i, piece] of pieces.entries()) await publishAuditRecord(js, piece, `${id}#${i}`)
    if (run !== undefined) await publishRunRecord(js, run)
    // this process waits for them next: until the ingester has acked the stream up to them (it acks a
    // message once its rows are in), then until the store answers with them (one look, normally)
    const deadline = Date.now() + 30_000
    await waitForIngestedBacklog(nc, { timeoutMs: 30_000, pollMs: 10 })
    const reader = busReader(nc)
    while (!(await stored(reader))) {
      if (Date.now() > deadline) throw new StoreError('the running ingester did not store the audit records in time; it may predate the audit trail: restart the stack (forge stack down, then forge stack up)')
      await sleep(20)
    }
  } finally {
    if (bus === undefined) await nc.drain().catch(() => undefined)
  }
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}

/** Stores the audit entries of regrades and resolutions (their rows are stored already); seal their runs afterwards. */
export async function storeGradingAuditEntries(config: ForgeConfig, entries: readonly AuditEntry[]): Promise<void> {
  if (entries.length === 0) return
  const expected = new Map<string, number>()
  for (const e of entries) expected.set(e.run_id, (expected.get(e.run_id) ?? 0) + 1)
  const before = new Map<string, number>()
  const reader = await openReader(config)
  try {
    for (const runId of expected.keys()) before.set(runId, (await countAuditEntries(reader, runId, 'regrade')) + (await countAuditEntries(reader, runId, 'resolution')))
  } finally {
    await reader.close()
  }
  await writeAudit(
    config,
    { entries: [...entries], links: [] },
    undefined,
    async (r) => {
      for (const [runId, n] of expected) {
        const now = (await countAuditEntries(r, runId, 'regrade')) + (await countAuditEntries(r, runId, 'resolution'))
        if (now < (before.get(runId) ?? 0) + n) return false
      }
      return true
    },
    `audit-entries-${entries.map((e) => e.content_hash.slice(0, 8)).join('')}`.slice(0, 200),
  )
}

/**
 * Seals a run: links every audit entry not yet in its chain (the fixed order: attempts by uid, then
 * regrades and resolutions) and stores the head on a new version of the run record, signed with
 * FORGE_AUDIT_KEY when it is set. Sealing again adds only what is new.
 */
export async function sealRun(
  config: ForgeConfig,
  runId: string,
  opts: { key?: string | undefined; now?: () => number; run?: RunRecord; bus?: NatsConnection; reader?: StoreReader } = {},
): Promise<SealReport> {
  const key = opts.key ?? readSetting('auditKey')
  const now = opts.now ?? Date.now
  // `opts.reader`: the caller's, left open; its reads go out as this is called, before whatever the caller asks next
  const reader = opts.reader ?? (await openReader(config, opts))
  let run: RunRecord | undefined
  let chain: AuditLink[] = []
  let entries: AuditEntryHead[] = []
  let sealedAlready: { links: number } | undefined
  try {
    // `opts.run`: the run's stored record as the caller just read it (forge run, after its final record landed)
    const [stored, state] = await Promise.all([opts.run ?? getRun(reader, runId), sealState(reader, runId)])
    run = stored
    // sealed already — by the ingester as the run's final record came in (workers/ingester-seal.ts), or
    // by an earlier seal: one read says so, and nothing of the chain is read
    if (run !== undefined && run.audit_head !== '' && run.audit_head === state.tail && state.links === state.entries) sealedAlready = { links: state.links }
    else [chain, entries] = await Promise.all([auditChain(reader, runId), auditEntryHeads(reader, runId)])
  } finally {
    if (opts.reader === undefined) await reader.close()
  }
  if (run === undefined) throw new ConfigError(`no run ${runId} in the store (forge runs list shows the stored runs)`)
  const signing = key !== undefined && key !== ''
  if (sealedAlready !== undefined) {
    // an unsigned head is signed when the key is held here; a signature is never replaced
    if (!signing || run.audit_signature !== '') return { run_id: runId, head: run.audit_head, signature: run.audit_signature, links: sealedAlready.links, added: 0 }
    const signature = signHead(runId, run.audit_head, key)
    const signed: RunRecord = { ...run, audit_signature: signature, updated_at: Math.max(now(), run.updated_at + 1) }
    await writeAudit(config, { entries: [], links: [] }, signed, async (r) => (await getRun(r, runId))?.audit_signature === signature, `audit-sign-${runId}-${run.audit_head}`, opts.bus)
    return { run_id: runId, head: run.audit_head, signature, links: sealedAlready.links, added: 0 }
  }
  const { links, head } = sealLinks(runId, chain, entries)
  const tail = chain.at(-1)
  if (links.length === 0 && tail !== undefined && run.audit_head === tail.link_hash) {
    return { run_id: runId, head: run.audit_head, signature: run.audit_signature, links: chain.length, added: 0 }
  }
  const signature = signing ? signHead(runId, head, key) : ''
  const sealed: RunRecord = { ...run, audit_head: head, audit_signature: signature, updated_at: Math.max(now(), run.updated_at + 1) }
  await writeAudit(
    config,
    { entries: [], links },
    sealed,
    // counted, not read back: a 100,000-attempt run's chain is ~15 MB of rows
    async (r) => {
      const stored = await sealStored(r, runId)
      return stored.head === head && stored.links === chain.length + links.length
    },
    `audit-seal-${runId}-${head}`,
    opts.bus,
  )
  return { run_id: runId, head, signature, links: chain.length + links.length, added: links.length }
}

/**
 * Waits (at most `timeoutMs`) until the store holds the audit entries of `stored.attempts` attempts
 * and `stored.judged` judge outcomes of the run (the ingester stores them on its grading lane), then
 * seals it.
 */
export async function sealRunWhenStored(config: ForgeConfig, runId: string, stored: { attempts: number; judged: number }, timeoutMs: number, opts: { bus?: NatsConnection } = {}): Promise<SealReport> {
  const reader = await openReader(config, opts)
  try {
    const deadline = Date.now() + timeoutMs
    const landed = async (): Promise<boolean> =>
      (await countAuditEntries(reader, runId, 'attempt')) >= stored.attempts && (stored.judged === 0 || (await countAuditEntries(reader, runId, 'judgement')) >= stored.judged)
    while (!(await landed()) && Date.now() < deadline) await sleep(50)
  } finally {
    await reader.close()
  }
  return sealRun(config, runId, opts)
}

/** `forge audit verify`: recomputes the run's chain, entries and rows from the store; the run is the newest when not given. */
export async function verifyRun(config: ForgeConfig, runId: string | undefined, opts: { key?: string | undefined } = {}): Promise<AuditReport> {
  const key = opts.key ?? readSetting('auditKey')
  const reader = await openReader(config)
  try {
    const id: string = runId ?? (await (await import('./compare.js')).newestRunId(reader))
    const run = await getRun(reader, id)
    if (run === undefined) throw new ConfigError(`no run ${id} in the store (forge runs list shows the stored runs)`)
    const [links, entries] = await Promise.all([auditChain(reader, id), auditEntries(reader, id)])
    const { rows, unclaimed } = await auditRowsOfRun(reader, id, entries)
    return verifyAudit({ runId: id, head: run.audit_head, signature: run.audit_signature, links, entries, rows, unclaimed, key })
  } finally {
    await reader.close()
  }
}
