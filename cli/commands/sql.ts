import { Args, Flags } from '@oclif/core'
import { openReader } from '../../app/store-access.js'
import { MAX_QUERY_TIME_LIMIT_S, QUERY_TIME_LIMIT_S } from '../../store/clickhouse.js'
import { resolveConfig } from '../../stack/config.js'
import { ForgeCommand } from '../base.js'
import { table } from '../format.js'

export default class Sql extends ForgeCommand {
  static override summary = 'Run a read-only SQL query against the results store (ClickHouse) and print the rows.'
  static override description =
    'Tables: runs, attempts, tool_calls, traces, judgements, attempt_grades, attempt_metrics, review_resolutions, baselines, ' +
    'audit_entries, audit_chain, sweeps, sweep_cells, schema_migrations. They are ReplacingMergeTree tables: read them with FINAL. ' +
    'The view metrics gives attempt_metrics one row per metric, FINAL applied. ' +
    'Queries run under ClickHouse readonly mode with a time limit; writes, INTO OUTFILE, FORMAT, SETTINGS (but join_use_nulls, max_threads, max_block_size) ' +
    'and table functions that reach files, URLs or other servers (file, url, remote, s3, …) are refused with exit code 2.'
  static override examples = [
    `<%= config.bin %> sql "SELECT task_id, countIf(outcome = 'pass') AS k, count() AS n FROM attempts FINAL GROUP BY task_id"`,
    '<%= config.bin %> sql "SELECT name, count() FROM tool_calls FINAL GROUP BY name" --json',
    '<%= config.bin %> sql "SELECT run_id, isolation FROM runs FINAL" --timeout 5',
    `<%= config.bin %> sql "SELECT metric, countIf(passed = 1) AS passes, count() AS n FROM metrics WHERE kind = 'deterministic' GROUP BY metric ORDER BY metric"`,
  ]
  static override args = {
    query: Args.string({ description: 'The SQL query.', required: true }),
  }
  static override flags = {
    timeout: Flags.integer({ summary: `Stop the query after this many seconds (default ${QUERY_TIME_LIMIT_S}).`, min: 1, max: MAX_QUERY_TIME_LIMIT_S }),
  }

  async run(): Promise<unknown[]> {
    const { args, flags } = await this.parse(Sql)
    const reader = await openReader(resolveConfig())
    try {
      const rows = await reader.query<Record<string, unknown>>(args.query, {}, flags.timeout !== undefined ? { timeoutSeconds: flags.timeout } : {})
      if (!this.jsonEnabled()) {
        if (rows.length === 0) this.log('(no rows)')
        else {
          const headers = Object.keys(rows[0]!)
          this.log(table(headers, rows.map((r) => headers.map((h) => cell(r[h])))))
          this.log(`(${rows.length} row${rows.length === 1 ? '' : 's'})`)
        }
      }
      return rows
    } finally {
      await reader.close()
    }
  }
}

function cell(value: unknown): string {
  const text = value === null || value === undefined ? 'NULL' : typeof value === 'object' ? JSON.stringify(value) : String(value)
  return text.length > 80 ? `${text.slice(0, 77)}...` : text
}
