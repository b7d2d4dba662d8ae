/**
 * Audit contracts (core/audit.ts computes them): an entry per stored result with its content hash
 * and manifest, a link of a run's hash chain, and the AuditRecord message that carries entries of
 * regrades and resolutions and the links of a seal to the store.
 */
import { z } from 'zod'

const AuditEntryKind = z.enum(['attempt', 'judgement', 'regrade', 'resolution'])

export const AuditEntryMessage = z.object({
  run_id: z.string(),
  entry_kind: AuditEntryKind,
  entry_key: z.string(),
  content_hash: z.string(),
  manifest: z.object({
    version: z.number().int(),
    columns: z.record(z.string(), z.array(z.string())),
    rows: z.array(z.object({ table: z.string(), key: z.string(), digest: z.string(), fields: z.string() })),
  }),
})
export type AuditEntryMessage = z.infer<typeof AuditEntryMessage>

export const AuditLinkMessage = z.object({
  run_id: z.string(),
  seq: z.uint32(),
  entry_kind: AuditEntryKind,
  entry_key: z.string(),
  content_hash: z.string(),
  prev_hash: z.string(),
  link_hash: z.string(),
})

/** What is published on `forge.results.audit`. */
export const AuditRecord = z.object({ entries: z.array(AuditEntryMessage).default([]), links: z.array(AuditLinkMessage).default([]) })
export type AuditRecord = z.infer<typeof AuditRecord>
