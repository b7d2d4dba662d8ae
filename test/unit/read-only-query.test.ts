/** store/read-only-query: what a read may be, and the limits appended to it. */
import { describe, expect, it } from 'vitest'
import { readOnlyQuery } from '../../store/read-only-query.js'

const check = (sql: string) => readOnlyQuery(sql, { timeoutSeconds: 30 })

describe('readOnlyQuery', () => {
  it('appends readonly and the time limit as the last settings of a read', () => {
    expect(check('SELECT count() FROM attempts FINAL')).toEqual({ ok: true, sql: 'SELECT count() FROM attempts FINAL\nSETTINGS max_execution_time = 30, readonly = 1' })
    expect(check("SELECT 'a;b' -- trailing;\n;")).toEqual({ ok: true, sql: "SELECT 'a;b' -- trailing;\nSETTINGS max_execution_time = 30, readonly = 1" })
    expect(check('SELECT * FROM a LEFT JOIN b USING x SETTINGS join_use_nulls = 1')).toEqual({
      ok: true,
      sql: 'SELECT * FROM a LEFT JOIN b USING x SETTINGS join_use_nulls = 1\n, max_execution_time = 30, readonly = 1',
    })
    expect(check("SELECT value FROM system.settings WHERE name = 'readonly'")).toEqual({ ok: true, sql: "SELECT value FROM system.settings WHERE name = 'readonly'\nSETTINGS max_execution_time = 30, readonly = 1" })
    // a trailing comment cannot swallow the limits: they go on a line of their own
    expect(check('SELECT 1 SETTINGS max_threads = 1 -- fast')).toEqual({ ok: true, sql: 'SELECT 1 SETTINGS max_threads = 1 -- fast\n, max_execution_time = 30, readonly = 1' })
    expect(check('SELECT * FROM (SELECT 1 SETTINGS max_threads = 1)')).toEqual({ ok: true, sql: 'SELECT * FROM (SELECT 1 SETTINGS max_threads = 1)\nSETTINGS max_execution_time = 30, readonly = 1' })
    for (const sql of ['WITH 1 AS x SELECT x', 'SHOW TABLES', 'DESCRIBE TABLE attempts', 'EXPLAIN SELECT 1', 'EXISTS TABLE runs', 'SELECT name FROM system.tables', "SELECT value FROM system.settings WHERE name = 'readonly'", "SELECT format('{}', 1)", "SELECT 'INSERT INTO attempts'"]) {
      expect(check(sql).ok, sql).toBe(true)
    }
  })

  it.each([
    ["WITH 1 AS x INSERT INTO attempts SELECT * FROM attempts", 'INSERT is not a read'],
    ["INSERT INTO FUNCTION file('/tmp/x', 'CSV') SELECT 1", 'the store is read-only here: SELECT, WITH, SHOW, DESCRIBE, EXPLAIN or EXISTS only (got INSERT)'],
    ["SELECT * FROM file('/proc/self/environ', 'LineAsString')", 'the table function file() reaches files, URLs, other servers or programs'],
    ["SELECT * FROM url('http://169.254.169.254/', 'LineAsString')", 'the table function url() reaches files, URLs, other servers or programs'],
    ["SELECT * FROM remote('10.0.0.1', system.one)", 'the table function remote() reaches files, URLs, other servers or programs'],
    ["SELECT * FROM s3('https://b/k', 'CSV')", 'the table function s3() reaches files, URLs, other servers or programs'],
    ["SELECT * FROM executable('x.sh', 'TSV', 'x UInt8')", 'the table function executable() reaches files, URLs, other servers or programs'],
    ["SELECT 1 INTO OUTFILE '/root/x'", "INTO OUTFILE writes a file on the store's machine"],
    ['SELECT 1 FORMAT CSV', 'FORMAT is chosen by Forge (use --json for JSON)'],
    ['SELECT * FROM (SELECT 1 SETTINGS readonly = 0)', 'the setting readonly cannot be changed here (allowed: join_use_nulls, max_threads, max_block_size, output_format_json_quote_64bit_integers); Forge sets readonly and the time limit itself'],
    ['SELECT 1 SETTINGS max_execution_time = 100000', 'the setting max_execution_time cannot be changed here (allowed: join_use_nulls, max_threads, max_block_size, output_format_json_quote_64bit_integers); Forge sets readonly and the time limit itself'],
    ['SELECT 1; DROP TABLE attempts', 'one statement at a time'],
    ['EXPLAIN ALTER TABLE attempts DELETE WHERE 1', 'ALTER is not a read'],
    ['SYSTEM SHUTDOWN', 'the store is read-only here: SELECT, WITH, SHOW, DESCRIBE, EXPLAIN or EXISTS only (got SYSTEM)'],
    ['  ', 'the query is empty'],
    ['SELECT 1 /* SETTINGS', 'an unterminated /* comment'],
    ["SELECT 'open", 'an unterminated string or quoted name'],
  ])('refuses %s', (sql, reason) => {
    expect(check(sql)).toEqual({ ok: false, reason })
  })
})
