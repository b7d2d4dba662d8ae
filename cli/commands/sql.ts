import { Args } from '@oclif/core'
import { openReader } from '../../app/store-access.js'
import { resolveConfig } from '../../stack/config.js'
import { ForgeCommand } from '../base.js'
import { table } from '../format.js'

export default class Sql extends ForgeCommand {
  static override summary = 'Run a SQL query against the results store (ClickHouse) and print the rows.'
  static override description = 'Tables: runs, attempts, tool_calls, schema_migrations. They are ReplacingMergeTree tables: read them with FINAL.'
  static override examples = [
    `<%= config.bin %> sql "SELECT task_id, countIf(outcome = 'pass') AS k, count() AS n FROM attempts FINAL GROUP BY task_id"`,
    '<%= config.bin %> sql "SELECT name, count() FROM tool_calls FINAL GROUP BY name" --json',
  ]
  static override args = {
    query: Args.string({ description: 'The SQL query.', required: true }),
  }

  async run(): Promise<unknown[]> {
    const { args } = await this.parse(Sql)
    const reader = await openReader(resolveConfig())
    try {
      const rows = await reader.query<Record<string, unknown>>(args.query)
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
