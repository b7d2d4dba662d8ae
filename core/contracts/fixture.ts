/**
 * Fixture contracts: the environments a task declares (file, workspace, sqlite, http), their
 * `conditions` (failures layered on the starting state) and the `expect` read back after seeding.
 */
import { z } from 'zod'
import { identifier } from './identifier.js'

/** A relative path under the suite's fixtures directory (checked by suite validation). */
const fixturePath = z.string().min(1)
const recordId = z.union([z.string().min(1), z.number()])

/** Fixture conditions: failures layered on a fixture's starting state (see FixtureSpec). */
const MissingFiles = z.object({ type: z.literal('missing_records'), paths: z.array(z.string().min(1)).min(1) }).strict()
const DuplicateFiles = z
  .object({ type: z.literal('duplicate_records'), paths: z.array(z.string().min(1)).min(1), suffix: z.string().min(1).default(' (copy)') })
  .strict()
/** `where` is a SQL boolean expression over the table's columns; without it every row is affected */
const MissingRows = z.object({ type: z.literal('missing_records'), table: identifier, where: z.string().min(1).optional() }).strict()
const DuplicateRows = z.object({ type: z.literal('duplicate_records'), table: identifier, where: z.string().min(1).optional() }).strict()
const MissingRecords = z.object({ type: z.literal('missing_records'), collection: identifier, ids: z.array(recordId).min(1) }).strict()
const DuplicateRecords = z.object({ type: z.literal('duplicate_records'), collection: identifier, ids: z.array(recordId).min(1) }).strict()
/** the token the service hands out at seeding is already expired: calls get 401 until refreshed */
const ExpiredToken = z.object({ type: z.literal('expired_token') }).strict()
/** requests under `paths` (all when absent) fail with `status`; only the first `requests` of them when given */
const Outage = z
  .object({
    type: z.literal('outage'),
    paths: z.array(z.string().startsWith('/', 'a path starts with /')).min(1).optional(),
    status: z.number().int().min(400).max(599).default(503),
    requests: z.number().int().positive().optional(),
  })
  .strict()

export const WorkspaceCondition = z.discriminatedUnion('type', [MissingFiles, DuplicateFiles])
export type WorkspaceCondition = z.infer<typeof WorkspaceCondition>
export const SqliteCondition = z.discriminatedUnion('type', [MissingRows, DuplicateRows])
export type SqliteCondition = z.infer<typeof SqliteCondition>
export const HttpCondition = z.discriminatedUnion('type', [ExpiredToken, Outage, MissingRecords, DuplicateRecords])
export type HttpCondition = z.infer<typeof HttpCondition>

/** Read-only file contents a task's tools see through `ctx.fixtures` (the original fixture kind). */
export const FileFixture = z.object({ kind: z.literal('file').default('file'), path: fixturePath }).strict()
/** A per-attempt copy of a directory of files in a temp dir (no VCS metadata, nothing else of the suite). */
export const WorkspaceFixture = z
  .object({
    kind: z.literal('workspace'),
    name: identifier.default('workspace'),
    from: fixturePath,
    conditions: z.array(WorkspaceCondition).default([]),
    /** read back after seeding: these paths must exist, those must not */
    expect: z.object({ files: z.array(z.string().min(1)).optional(), absent: z.array(z.string().min(1)).optional() }).strict().optional(),
  })
  .strict()
/**
 * A per-attempt SQLite database seeded from SQL files, then CSV files (`table: file.csv`, header row
 * first), then `sql_after` files (overlays that need the loaded rows).
 */
export const SqliteFixture = z
  .object({
    kind: z.literal('sqlite'),
    name: identifier.default('db'),
    sql: z.union([fixturePath, z.array(fixturePath).min(1)]).optional(),
    csv: z.record(identifier, fixturePath).optional(),
    sql_after: z.union([fixturePath, z.array(fixturePath).min(1)]).optional(),
    conditions: z.array(SqliteCondition).default([]),
    /** read back after seeding: row counts by table */
    expect: z.object({ rows: z.record(identifier, z.number().int().nonnegative()) }).strict().optional(),
  })
  .strict()
  .refine((f) => f.sql !== undefined || f.csv !== undefined, { message: 'a sqlite fixture needs `sql` or `csv` to seed from', path: ['sql'] })
/**
 * A per-attempt HTTP service on 127.0.0.1 serving a directory: every `<name>.json` holding an
 * array is a collection of records with `id`s (GET list with field filters, GET one; POST, PATCH
 * and DELETE when `writable`), every other file is served as a document at its path.
 */
export const HttpFixture = z
  .object({
    kind: z.literal('http'),
    name: identifier.default('api'),
    from: fixturePath,
    writable: z.boolean().default(false),
    conditions: z.array(HttpCondition).default([]),
    /** read back after seeding: record counts by collection */
    expect: z.object({ records: z.record(identifier, z.number().int().nonnegative()) }).strict().optional(),
  })
  .strict()

/** A task's fixture; `kind` defaults to `file`, so `{ path: kv.json }` stays a file fixture. */
export const FixtureSpec = z.discriminatedUnion('kind', [FileFixture, WorkspaceFixture, SqliteFixture, HttpFixture])
export type FixtureSpec = z.infer<typeof FixtureSpec>
export type FileFixture = z.infer<typeof FileFixture>
export type WorkspaceFixture = z.infer<typeof WorkspaceFixture>
export type SqliteFixture = z.infer<typeof SqliteFixture>
export type HttpFixture = z.infer<typeof HttpFixture>
/** The fixtures that get a per-attempt environment instance (every kind but `file`). */
export type EnvironmentFixture = WorkspaceFixture | SqliteFixture | HttpFixture
