/**
 * What makes a store read safe to run for anyone who can ask (`forge sql`, the ingester's query
 * service, every reader): ClickHouse's own enforcement — the query runs with `readonly = 1` and a
 * `max_execution_time`, appended as the statement's last SETTINGS so nothing before it can undo
 * them — behind a check that refuses, with the reason, what readonly alone lets through or what
 * has no business in a read: more than one statement, anything but SELECT / WITH / SHOW / DESCRIBE
 * / EXPLAIN / EXISTS, `INTO OUTFILE` (ClickHouse writes the file even in readonly mode), a FORMAT
 * clause, table functions that reach files, URLs, other servers or programs, and SETTINGS other
 * than a few harmless ones (a subquery's `SETTINGS readonly = 0` would otherwise lift readonly).
 */

/** Settings a read may set itself (Forge's own queries use join_use_nulls); anything else is refused. */
export const ALLOWED_QUERY_SETTINGS = ['join_use_nulls', 'max_threads', 'max_block_size', 'output_format_json_quote_64bit_integers'] as const

/** Table functions that read files, URLs, other servers or run programs. */
export const REFUSED_TABLE_FUNCTIONS = [
  'file', 'filecluster', 'url', 'urlcluster', 'remote', 'remotesecure', 'cluster', 'clusterallreplicas', 's3', 's3cluster', 'gcs', 'oss', 'cosn',
  'azureblobstorage', 'azureblobstoragecluster', 'hdfs', 'hdfscluster', 'mysql', 'postgresql', 'mongodb', 'redis', 'sqlite', 'odbc', 'jdbc',
  'executable', 'executablepool', 'input', 'iceberg', 'icebergs3', 'icebergazure', 'iceberghdfs', 'iceberglocal', 'deltalake', 'deltalakes3',
  'deltalakeazure', 'hudi', 'paimon', 'arrowflight', 'ytsaurus',
].map((name) => name.toLowerCase())

const READ_STATEMENTS = new Set(['select', 'with', 'show', 'describe', 'desc', 'explain', 'exists'])

export type ReadOnlyQuery = { ok: true; sql: string } | { ok: false; reason: string }

/**
 * The query to send for a read: `sql` with `max_execution_time` and `readonly = 1` appended as its
 * final settings, or the reason it is refused.
 */
export function readOnlyQuery(sql: string, opts: { timeoutSeconds: number }): ReadOnlyQuery {
  const code = codeOf(sql)
  if (code === '') return { ok: false, reason: 'the query is empty' }
  // what is appended must not land inside an open comment or string
  if (code.includes('/*')) return { ok: false, reason: 'an unterminated /* comment' }
  if (/['"`]/.test(code.replace(/''/g, ''))) return { ok: false, reason: 'an unterminated string or quoted name' }
  if (code.includes(';')) return { ok: false, reason: 'one statement at a time' }
  const first = /^\(*\s*([a-z_]+)/i.exec(code)?.[1]?.toLowerCase() ?? ''
  if (!READ_STATEMENTS.has(first)) {
    return { ok: false, reason: `the store is read-only here: SELECT, WITH, SHOW, DESCRIBE, EXPLAIN or EXISTS only (got ${first.toUpperCase() || 'nothing'})` }
  }
  // a statement may hide a write after WITH or inside EXPLAIN: refuse write keywords anywhere
  // (system.<table> is a read; SYSTEM <command> is not)
  const write = /\b(insert|alter|create|drop|truncate|rename|attach|detach|optimize|grant|revoke|kill|system(?!\s*\.)|delete|update|backup|restore|undrop|exchange|set)\b(?!\s*\()/i.exec(code)
  if (write !== null) return { ok: false, reason: `${write[1]!.toUpperCase()} is not a read` }
  if (/\binto\s+outfile\b/i.test(code)) return { ok: false, reason: 'INTO OUTFILE writes a file on the store\'s machine' }
  if (/\bfrom\s+infile\b/i.test(code)) return { ok: false, reason: 'FROM INFILE reads a file on the store\'s machine' }
  if (/\bformat\s+(?!\()[a-z]/i.test(code)) return { ok: false, reason: 'FORMAT is chosen by Forge (use --json for JSON)' }
  for (const call of code.matchAll(/\b([a-z_][a-z0-9_]*)\s*\(/gi)) {
    const name = call[1]!.toLowerCase()
    if (REFUSED_TABLE_FUNCTIONS.includes(name)) return { ok: false, reason: `the table function ${call[1]}() reaches files, URLs, other servers or programs` }
  }
  // a SETTINGS clause: the keyword (not system.settings, not a column) followed by `name =`
  const settings = [...code.matchAll(/(?<![.\w])settings\s+([a-z_][a-z0-9_]*\s*=[^()]*)/gi)]
  for (const clause of settings) {
    for (const assignment of clause[1]!.split(',')) {
      const name = /^\s*([a-z_][a-z0-9_]*)\s*=/i.exec(assignment)?.[1]?.toLowerCase()
      if (name === undefined) continue
      if (!(ALLOWED_QUERY_SETTINGS as readonly string[]).includes(name)) {
        return { ok: false, reason: `the setting ${name} cannot be changed here (allowed: ${ALLOWED_QUERY_SETTINGS.join(', ')}); Forge sets readonly and the time limit itself` }
      }
    }
  }
  const limits = `max_execution_time = ${Math.max(1, Math.round(opts.timeoutSeconds))}, readonly = 1`
  const body = sql.trim().replace(/;\s*$/, '').trimEnd()
  // a trailing top-level SETTINGS clause is extended (two clauses are a syntax error); else one is added —
  // on a line of its own, so a trailing -- comment cannot swallow it
  const trailing = settings.at(-1)
  const extendsTrailing = trailing !== undefined && trailing.index + trailing[0].length === code.length && depthAt(code, trailing.index) === 0
  return { ok: true, sql: extendsTrailing ? `${body}\n, ${limits}` : `${body}\nSETTINGS ${limits}` }
}

/** The SQL with string literals emptied and comments removed, trimmed, without a final `;`. */
function codeOf(sql: string): string {
  return sql
    .replace(/'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.)*"|`[^`]*`/g, "''")
    .replace(/--[^\n]*|#[^\n]*|\/\*[\s\S]*?\*\//g, ' ')
    .trim()
    .replace(/;\s*$/, '')
    .trim()
}

function depthAt(code: string, index: number): number {
  let depth = 0
  for (let i = 0; i < index; i += 1) {
    if (code[i] === '(') depth += 1
    else if (code[i] === ')') depth -= 1
  }
  return depth
}
