/**
 * The migrations' cluster form (store/cluster-ddl.ts) against ClickHouse itself.
 *
 * - Every statement `clusterStatements()` makes of every migration (up and down) and the replicated
 *   ledger parse in chDB's ClickHouse parser (`formatQuerySingleLine`), keeping ON CLUSTER, the
 *   replicated engine and the dedup window. Runs everywhere.
 * - Where Docker exists (testcontainers): ClickHouse Keeper and two ClickHouse servers, replicas of one
 *   shard of the cluster `forge` (config files written here: remote_servers, macros, zookeeper →
 *   keeper). `migrate()` with the cluster option on one node creates every table on both; an attempt
 *   inserted twice through the Distributed table on one node (merges stopped, so only insert dedup can
 *   make it one row) is one row on the other node; a second `migrate()` on the other node finds the
 *   replicated ledger complete. Skips cleanly, saying why, where `docker info` fails.
 */
import { spawnSync } from 'node:child_process'
import { queryBind } from 'chdb'
import { describe, expect, it } from 'vitest'
import { clusterLedgerStatement, clusterStatements, type ClusterOptions } from '../../store/cluster-ddl.js'
import { directReader, openClickHouse, queryRows, type ClickHouseClient } from '../../store/clickhouse.js'
import { migrate, migrations, sqlOf } from '../../store/migrations.js'
import { countAttempts, insertAttempts } from '../../store/repositories.js'
import { makeAttempt } from './report-fixture.js'

const CLUSTER: ClusterOptions = { cluster: 'forge', keeperPath: '/clickhouse/tables/forge-test' }

/** The statement as ClickHouse's parser reads it back (one line); throws ClickHouse's syntax error. */
function parsed(sql: string): string {
  const [row] = queryBind('SELECT formatQuerySingleLine({sql:String}) AS f', { sql }, 'JSONEachRow')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { f: string })
  return row!.f
}

describe("the cluster DDL in ClickHouse's own parser (chDB)", () => {
  const statements = [
    clusterLedgerStatement(CLUSTER),
    ...migrations.flatMap((m) => [...m.up, ...m.down].flatMap((statement) => clusterStatements(sqlOf(statement), CLUSTER).map((s) => ({ version: m.version, s })))),
  ]

  it('parses every cluster statement of every migration, up and down, and the ledger', () => {
    expect(statements.length).toBeGreaterThan(2 * migrations.length)
    for (const entry of statements) {
      const { version, s } = typeof entry === 'string' ? { version: 0, s: entry } : entry
      let text: string
      try {
        text = parsed(s)
      } catch (error) {
        throw new Error(`migration ${version}: ClickHouse cannot parse\n  ${s}\n${(error as Error).message}`)
      }
      // moving rows between tables runs once, through the Distributed tables; everything else on every node
      if (text.startsWith('INSERT INTO ')) expect(text, s).not.toContain(' ON CLUSTER ')
      else expect(text, s).toContain(' ON CLUSTER forge ')
      // what was parsed is what ClickHouse prints back, and that reads back the same
      expect(parsed(text), s).toBe(text)
      if (/^CREATE TABLE IF NOT EXISTS \w+_local /.test(text) || text.includes('schema_migrations')) {
        expect(text, s).toMatch(/ENGINE = ReplicatedReplacingMergeTree\('\/clickhouse\/tables\/forge-test\/(\{shard\}|all)\/\{database\}\/\w+', '\{replica\}'/)
      }
      if (/^CREATE TABLE IF NOT EXISTS \w+_local /.test(text)) expect(text, s).toContain('SETTINGS replicated_deduplication_window = 1000')
      if (/ENGINE = Distributed/.test(text)) expect(text, s).toMatch(/ENGINE = Distributed\('forge', currentDatabase\(\), '\w+_local', cityHash64\(\w+\)\)$/)
    }
  })

  it('would fail for a statement ClickHouse cannot parse', () => {
    const [local] = clusterStatements(sqlOf(migrations[0]!.up[0]!), CLUSTER)
    expect(() => parsed(local!.replace('ORDER BY', 'ORDER'))).toThrow(/Syntax error/)
  })
})

const docker = spawnSync('docker', ['info'], { stdio: 'ignore', timeout: 10_000 }).status === 0
if (!docker) console.warn('clickhouse-cluster.test: skipping the Keeper + 2-replica ClickHouse cluster test: no Docker engine answers `docker info` on this machine')

const KEEPER_CONFIG = `<clickhouse>
  <logger><level>warning</level><console>1</console></logger>
  <listen_host>0.0.0.0</listen_host>
  <keeper_server>
    <tcp_port>9181</tcp_port>
    <server_id>1</server_id>
    <log_storage_path>/var/lib/clickhouse-keeper/coordination/log</log_storage_path>
    <snapshot_storage_path>/var/lib/clickhouse-keeper/coordination/snapshots</snapshot_storage_path>
    <coordination_settings>
      <operation_timeout_ms>10000</operation_timeout_ms>
      <session_timeout_ms>30000</session_timeout_ms>
    </coordination_settings>
    <raft_configuration>
      <server><id>1</id><hostname>localhost</hostname><port>9234</port></server>
    </raft_configuration>
  </keeper_server>
</clickhouse>
`

const REPLICAS = ['ch1', 'ch2'] as const

/**
 * config.d of one replica: the cluster `forge` (one shard, both replicas, internal_replication so a
 * Distributed insert writes one replica and replication copies it), its macros, Keeper, and the
 * host name the other replica fetches parts from.
 */
function serverConfig(replica: string): string {
  return `<clickhouse>
  <interserver_http_host>${replica}</interserver_http_host>
  <macros>
    <shard>01</shard>
    <replica>${replica}</replica>
  </macros>
  <remote_servers>
    <${CLUSTER.cluster}>
      <shard>
        <internal_replication>true</internal_replication>
${REPLICAS.map((host) => `        <replica><host>${host}</host><port>9000</port></replica>`).join('\n')}
      </shard>
    </${CLUSTER.cluster}>
  </remote_servers>
  <zookeeper>
    <node><host>keeper</host><port>9181</port></node>
  </zookeeper>
</clickhouse>
`
}

/** every table the migrations make (test/integration/migrations.test.ts lists the same on chDB) */
const TABLES = ['attempt_grades', 'attempt_metrics', 'attempts', 'audit_chain', 'audit_entries', 'baselines', 'judgements', 'review_resolutions', 'runs', 'sweep_cells', 'sweeps', 'tool_calls', 'traces']
/** views over the Distributed tables, on every node */
const VIEWS = ['metrics']

describe('the cluster DDL on a ClickHouse cluster (testcontainers)', () => {
  it.skipIf(!docker)(
    'creates every table on both replicas from one node; an attempt inserted twice through the Distributed table is one row on the other node',
    async () => {
      const { GenericContainer, Network, Wait } = await import('testcontainers')
      const network = await new Network().start()
      const started: { stop(): Promise<unknown> }[] = []
      const clients: ClickHouseClient[] = []
      try {
        const keeper = await new GenericContainer('clickhouse/clickhouse-keeper:24.8-alpine')
          .withNetwork(network)
          .withNetworkAliases('keeper')
          .withCopyContentToContainer([{ content: KEEPER_CONFIG, target: '/etc/clickhouse-keeper/keeper_config.xml' }])
          .withExposedPorts(9181)
          .withWaitStrategy(Wait.forListeningPorts())
          .start()
        started.push(keeper)
        const servers = await Promise.all(
          REPLICAS.map((replica) =>
            new GenericContainer('clickhouse/clickhouse-server:24.8')
              .withNetwork(network)
              .withNetworkAliases(replica)
              .withHostname(replica)
              .withEnvironment({ CLICKHOUSE_SKIP_USER_SETUP: '1' })
              .withCopyContentToContainer([{ content: serverConfig(replica), target: '/etc/clickhouse-server/config.d/forge-cluster.xml' }])
              .withExposedPorts(8123)
              .withWaitStrategy(Wait.forHttp('/ping', 8123))
              .start(),
          ),
        )
        started.push(...servers)
        // as the chart's URL: a Distributed insert returns once the shard has the rows (ack after commit)
        const [ch1, ch2] = await Promise.all(
          servers.map((s) => openClickHouse({ kind: 'server', url: `http://${s.getHost()}:${s.getMappedPort(8123)}/?ch_insert_distributed_sync=1` })),
        )
        clients.push(ch1!, ch2!)
        const rows = <T>(client: ClickHouseClient, sql: string) => queryRows<T>(client, sql)

        // both replicas see the cluster as configured
        for (const client of clients) {
          expect(await rows<{ host_name: string }>(client, `SELECT host_name FROM system.clusters WHERE cluster = '${CLUSTER.cluster}' ORDER BY host_name`)).toEqual(
            REPLICAS.map((host_name) => ({ host_name })),
          )
        }

        expect(await migrate(ch1!, Infinity, { cluster: CLUSTER })).toEqual(migrations.map((m) => m.version))

        // every table on both nodes: <table> Distributed over <table>_local, and the replicated ledger
        const expected = [...TABLES.flatMap((t) => [[t, 'Distributed'], [`${t}_local`, 'ReplicatedReplacingMergeTree']]), ...VIEWS.map((v) => [v, 'View']), ['schema_migrations', 'ReplicatedReplacingMergeTree']].sort(([a = ''], [b = '']) =>
          // ClickHouse orders names by their bytes
          a < b ? -1 : a > b ? 1 : 0,
        )
        for (const client of clients) {
          const tables = await rows<{ name: string; engine: string }>(client, 'SELECT name, engine FROM system.tables WHERE database = currentDatabase() ORDER BY name')
          expect(tables.map((t) => [t.name, t.engine])).toEqual(expected)
        }

        // merges stopped on both replicas: only insert dedup can leave one row of two inserts
        for (const client of clients) await client.command({ query: 'SYSTEM STOP MERGES attempts_local' })
        const attempt = makeAttempt('run-cluster', 'alpha', 0, 1)
        await insertAttempts(ch1!, [attempt], 1_764_470_001_000)
        await insertAttempts(ch1!, [attempt], 1_764_470_001_000)

        // the other node, once its replica has fetched what ch1 wrote
        await ch2!.command({ query: 'SYSTEM SYNC REPLICA attempts_local' })
        expect(await rows<{ n: string }>(ch2!, "SELECT count() AS n FROM attempts_local WHERE run_id = 'run-cluster'")).toEqual([{ n: '1' }])
        expect(await rows<{ attempt_uid: string; worker_id: string }>(ch2!, "SELECT attempt_uid, worker_id FROM attempts WHERE run_id = 'run-cluster'")).toEqual([
          { attempt_uid: attempt.attempt_uid, worker_id: attempt.worker_id },
        ])
        // and Forge's own read of the other node (FINAL through the Distributed table)
        expect(await countAttempts(directReader(ch2!), 'run-cluster')).toBe(1)

        // the ledger is replicated: migrating from the other node has nothing left to do
        await ch2!.command({ query: 'SYSTEM SYNC REPLICA schema_migrations' })
        expect(await migrate(ch2!, Infinity, { cluster: CLUSTER })).toEqual([])
      } finally {
        for (const client of clients) await client.close().catch(() => undefined)
        for (const container of started.reverse()) await container.stop().catch(() => undefined)
        await network.stop().catch(() => undefined)
      }
    },
    900_000,
  )
})
