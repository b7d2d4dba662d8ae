/**
 * Tools of the core suite. They reach the attempt's own environment through `ctx.env` — the
 * workspace copy, the SQLite database, the HTTP fixture service — and nothing else: paths are
 * confined to the workspace root, results carry relative paths only (never a temp dir or a port),
 * and failures are thrown as errors the way a real service reports them.
 */
import { mkdir, readFile, readdir, rename, rm, stat, writeFile, appendFile } from 'node:fs/promises'
import path from 'node:path'

/** @typedef {import('../../core/plugins.js').ToolDefinition} ToolDefinition */
/** @typedef {import('../../core/plugins.js').ToolRunContext} ToolRunContext */
/** @typedef {import('../../core/plugins.js').WorkspaceHandle} WorkspaceHandle */
/** @typedef {import('../../core/plugins.js').SqliteHandle} SqliteHandle */
/** @typedef {import('../../core/plugins.js').HttpHandle} HttpHandle */

/** @param {unknown} value @param {string} name */
function text(value, name) {
  if (typeof value !== 'string' || value.trim() === '') throw new Error(`${name} must be a non-empty string`)
  return value
}

/**
 * @template {'workspace' | 'sqlite' | 'http'} K
 * @param {ToolRunContext} ctx @param {K} kind
 * @returns {Extract<import('../../core/plugins.js').FixtureHandle, { kind: K }>}
 */
function fixture(ctx, kind) {
  const found = Object.values(ctx.env ?? {}).find((h) => h.kind === kind)
  if (found === undefined) throw new Error(`this task has no ${kind === 'sqlite' ? 'database' : kind === 'http' ? 'service' : 'workspace'}`)
  return /** @type {any} */ (found)
}

/** An absolute path inside the workspace for a relative one; refuses to leave the workspace. */
function inWorkspace(/** @type {ToolRunContext} */ ctx, /** @type {unknown} */ relative, name = 'path') {
  const root = fixture(ctx, 'workspace').root
  const given = text(relative, name)
  const resolved = path.resolve(root, given.replace(/^\/+/, ''))
  if (resolved !== root && !resolved.startsWith(root + path.sep)) throw new Error(`${name} "${given}" is outside the workspace`)
  return { root, resolved, relative: path.relative(root, resolved).split(path.sep).join('/') || '.' }
}

/** Relative paths of the files under `dir`, sorted. */
async function filesUnder(/** @type {string} */ root, /** @type {string} */ dir) {
  /** @type {string[]} */
  const out = []
  const walk = async (/** @type {string} */ absolute) => {
    for (const entry of await readdir(absolute, { withFileTypes: true })) {
      const child = path.join(absolute, entry.name)
      if (entry.isDirectory()) await walk(child)
      else if (entry.isFile()) out.push(path.relative(root, child).split(path.sep).join('/'))
    }
  }
  await walk(dir)
  return out.sort()
}

/** @param {string} source */
function parseCsv(source) {
  /** @type {string[][]} */
  const rows = []
  let row = /** @type {string[]} */ ([])
  let field = ''
  let quoted = false
  for (let i = 0; i < source.length; i += 1) {
    const c = source[i]
    if (quoted) {
      if (c === '"' && source[i + 1] === '"') {
        field += '"'
        i += 1
      } else if (c === '"') quoted = false
      else field += c
    } else if (c === '"' && field === '') quoted = true
    else if (c === ',') {
      row.push(field)
      field = ''
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && source[i + 1] === '\n') i += 1
      row.push(field)
      rows.push(row)
      row = []
      field = ''
    } else field += c
  }
  if (field !== '' || row.length > 0) {
    row.push(field)
    rows.push(row)
  }
  const [header, ...data] = rows
  if (header === undefined) return []
  return data.filter((r) => r.some((v) => v !== '')).map((r) => Object.fromEntries(header.map((h, j) => [h, r[j] ?? ''])))
}

/** @param {unknown} value */
function csvField(value) {
  const s = value === null || value === undefined ? '' : String(value)
  return /[",\n\r]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s
}

/**
 * Evaluates + - * / and parentheses by recursive descent (never eval).
 * @param {string} source
 */
export function evaluate(source) {
  let pos = 0
  const fail = (/** @type {string} */ why) => {
    throw new Error(`${why} at position ${pos} in ${JSON.stringify(source)}`)
  }
  const peek = () => {
    while (pos < source.length && /\s/.test(source.charAt(pos))) pos += 1
    return source.charAt(pos)
  }
  /** @returns {number} */
  const expr = () => {
    let value = term()
    for (let op = peek(); op === '+' || op === '-'; op = peek()) {
      pos += 1
      const right = term()
      value = op === '+' ? value + right : value - right
    }
    return value
  }
  /** @returns {number} */
  const term = () => {
    let value = factor()
    for (let op = peek(); op === '*' || op === '/'; op = peek()) {
      pos += 1
      const right = factor()
      if (op === '/' && right === 0) fail('division by zero')
      value = op === '*' ? value * right : value / right
    }
    return value
  }
  /** @returns {number} */
  const factor = () => {
    const c = peek()
    if (c === '+' || c === '-') {
      pos += 1
      const value = factor()
      return c === '-' ? -value : value
    }
    if (c === '(') {
      pos += 1
      const value = expr()
      if (peek() !== ')') fail('expected )')
      pos += 1
      return value
    }
    const match = /^(?:\d+(?:\.\d*)?|\.\d+)/.exec(source.slice(pos))
    if (match === null) return fail(c === '' ? 'unexpected end of expression' : `unexpected ${JSON.stringify(c)}`)
    pos += match[0].length
    return Number(match[0])
  }
  if (source.trim() === '') fail('empty expression')
  const value = expr()
  if (peek() !== '') fail(`unexpected ${JSON.stringify(peek())}`)
  if (!Number.isFinite(value)) fail('result is not finite')
  // binary floating point noise (0.1 + 0.2) is not an answer anyone wants
  return Math.round(value * 1e9) / 1e9
}

/** One HTTP call through the fixture service's handle; a non-2xx status is an error, as a client library would raise. */
async function http(/** @type {ToolRunContext} */ ctx, /** @type {string} */ method, /** @type {unknown} */ route, /** @type {unknown} */ body) {
  const service = fixture(ctx, 'http')
  const answer = await service.request(method, text(route, 'path'), body)
  if (answer.status >= 400) {
    const detail = answer.body !== null && typeof answer.body === 'object' ? /** @type {Record<string, unknown>} */ (answer.body) : {}
    throw new Error(`HTTP ${answer.status} ${String(detail['error'] ?? '')}: ${String(detail['message'] ?? answer.body)}`.replace(' :', ':'))
  }
  return answer.body
}

const pathArg = { type: 'string', description: 'a path relative to the workspace root' }

/** @type {ToolDefinition[]} */
export const tools = [
  {
    name: 'list_files',
    description: 'Lists the files under a folder of the workspace (recursively), as paths relative to the workspace root.',
    input_schema: { type: 'object', properties: { dir: { type: 'string', description: "a folder; '.' for the whole workspace" } }, additionalProperties: false },
    async run(args, ctx) {
      const { root, resolved } = inWorkspace(ctx, args.dir ?? '.', 'dir')
      const info = await stat(resolved).catch(() => undefined)
      if (info === undefined || !info.isDirectory()) throw new Error(`no such folder: ${String(args.dir)}`)
      return filesUnder(root, resolved)
    },
  },
  {
    name: 'read_file',
    description: 'Reads a text file of the workspace.',
    input_schema: { type: 'object', properties: { path: pathArg }, required: ['path'], additionalProperties: false },
    async run(args, ctx) {
      const { resolved, relative } = inWorkspace(ctx, args.path)
      return readFile(resolved, 'utf8').catch(() => {
        throw new Error(`no such file: ${relative}`)
      })
    },
  },
  {
    name: 'write_file',
    description: 'Writes a text file of the workspace (creating folders as needed), replacing what was there.',
    input_schema: { type: 'object', properties: { path: pathArg, content: { type: 'string' } }, required: ['path', 'content'], additionalProperties: false },
    async run(args, ctx) {
      const { resolved, relative } = inWorkspace(ctx, args.path)
      if (typeof args.content !== 'string') throw new Error('content must be a string')
      await mkdir(path.dirname(resolved), { recursive: true })
      await writeFile(resolved, args.content)
      return { written: relative, bytes: Buffer.byteLength(args.content) }
    },
  },
  {
    name: 'append_file',
    description: 'Appends text to a file of the workspace (creating it when missing).',
    input_schema: { type: 'object', properties: { path: pathArg, content: { type: 'string' } }, required: ['path', 'content'], additionalProperties: false },
    async run(args, ctx) {
      const { resolved, relative } = inWorkspace(ctx, args.path)
      if (typeof args.content !== 'string') throw new Error('content must be a string')
      await mkdir(path.dirname(resolved), { recursive: true })
      await appendFile(resolved, args.content)
      return { appended: relative, bytes: Buffer.byteLength(args.content) }
    },
  },
  {
    name: 'move_file',
    description: 'Moves (renames) a file of the workspace.',
    input_schema: { type: 'object', properties: { from: pathArg, to: pathArg }, required: ['from', 'to'], additionalProperties: false },
    async run(args, ctx) {
      const from = inWorkspace(ctx, args.from, 'from')
      const to = inWorkspace(ctx, args.to, 'to')
      const info = await stat(from.resolved).catch(() => undefined)
      if (info === undefined || !info.isFile()) throw new Error(`no such file: ${from.relative}`)
      if (await stat(to.resolved).catch(() => undefined)) throw new Error(`${to.relative} already exists`)
      await mkdir(path.dirname(to.resolved), { recursive: true })
      await rename(from.resolved, to.resolved)
      return { moved: from.relative, to: to.relative }
    },
  },
  {
    name: 'delete_file',
    description: 'Deletes a file of the workspace. Destructive: it cannot be undone.',
    input_schema: { type: 'object', properties: { path: pathArg }, required: ['path'], additionalProperties: false },
    async run(args, ctx) {
      const { resolved, relative } = inWorkspace(ctx, args.path)
      const info = await stat(resolved).catch(() => undefined)
      if (info === undefined || !info.isFile()) throw new Error(`no such file: ${relative}`)
      await rm(resolved)
      return { deleted: relative }
    },
  },
  {
    name: 'search_files',
    description: 'Finds lines containing a text (case-insensitive) in the files under a folder; returns path, line number and line.',
    input_schema: {
      type: 'object',
      properties: { pattern: { type: 'string', description: 'the text to look for' }, dir: { type: 'string', description: "a folder; '.' for the whole workspace" } },
      required: ['pattern'],
      additionalProperties: false,
    },
    async run(args, ctx) {
      const needle = text(args.pattern, 'pattern').toLowerCase()
      const { root, resolved } = inWorkspace(ctx, args.dir ?? '.', 'dir')
      const hits = []
      for (const file of await filesUnder(root, resolved)) {
        const lines = (await readFile(path.join(root, file), 'utf8')).split(/\r?\n/)
        lines.forEach((line, i) => {
          if (line.toLowerCase().includes(needle)) hits.push({ path: file, line: i + 1, text: line.trim() })
        })
      }
      return hits
    },
  },
  {
    name: 'read_csv',
    description: 'Reads a CSV file of the workspace (header row first) as a list of records; every value is text.',
    input_schema: { type: 'object', properties: { path: pathArg }, required: ['path'], additionalProperties: false },
    async run(args, ctx) {
      const { resolved, relative } = inWorkspace(ctx, args.path)
      const source = await readFile(resolved, 'utf8').catch(() => {
        throw new Error(`no such file: ${relative}`)
      })
      return parseCsv(source)
    },
  },
  {
    name: 'write_csv',
    description: 'Writes records to a CSV file of the workspace: a header row of `columns` (default: the first record\'s keys), then one row per record.',
    input_schema: {
      type: 'object',
      properties: { path: pathArg, rows: { type: 'array', items: { type: 'object' } }, columns: { type: 'array', items: { type: 'string' } } },
      required: ['path', 'rows'],
      additionalProperties: false,
    },
    async run(args, ctx) {
      const { resolved, relative } = inWorkspace(ctx, args.path)
      const rows = /** @type {Record<string, unknown>[]} */ (args.rows)
      const columns = /** @type {string[] | undefined} */ (args.columns) ?? Object.keys(rows[0] ?? {})
      if (columns.length === 0) throw new Error('no columns: give `columns` or at least one record')
      const lines = [columns.map(csvField).join(','), ...rows.map((row) => columns.map((c) => csvField(row[c])).join(','))]
      await mkdir(path.dirname(resolved), { recursive: true })
      await writeFile(resolved, `${lines.join('\n')}\n`)
      return { written: relative, rows: rows.length }
    },
  },
  {
    name: 'word_count',
    description: 'Counts the whitespace-separated words of a text.',
    input_schema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false },
    run(args) {
      return text(args.text, 'text').trim().split(/\s+/).length
    },
  },
  {
    name: 'calculator',
    description: 'Evaluates an arithmetic expression over numbers, + - * / and parentheses.',
    input_schema: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'], additionalProperties: false },
    run(args) {
      return evaluate(text(args.expression, 'expression'))
    },
  },
  {
    name: 'send_email',
    description: 'Sends an email (it lands in the outbox/ folder of the workspace).',
    input_schema: {
      type: 'object',
      properties: { to: { type: 'string' }, subject: { type: 'string' }, body: { type: 'string' } },
      required: ['to', 'subject', 'body'],
      additionalProperties: false,
    },
    async run(args, ctx) {
      const to = text(args.to, 'to')
      if (!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(to)) throw new Error(`not an email address: ${to}`)
      const root = fixture(ctx, 'workspace').root
      const outbox = path.join(root, 'outbox')
      await mkdir(outbox, { recursive: true })
      const sent = (await readdir(outbox)).filter((f) => f.endsWith('.json')).length
      const name = `outbox/${String(sent + 1).padStart(3, '0')}.json`
      await writeFile(path.join(root, name), `${JSON.stringify({ to, subject: text(args.subject, 'subject'), body: text(args.body, 'body') }, null, 2)}\n`)
      return { sent: name }
    },
  },
  {
    name: 'sql_query',
    description: 'Runs a read-only SQL query (SQLite) against the database and returns the rows.',
    input_schema: { type: 'object', properties: { sql: { type: 'string' } }, required: ['sql'], additionalProperties: false },
    run(args, ctx) {
      const statement = fixture(ctx, 'sqlite').db.prepare(text(args.sql, 'sql'))
      if (!statement.reader || !statement.readonly) throw new Error('sql_query only runs read-only queries; use sql_execute to change data')
      return statement.all()
    },
  },
  {
    name: 'sql_execute',
    description: 'Runs one SQL statement (SQLite) that changes the database; returns how many rows it changed.',
    input_schema: { type: 'object', properties: { sql: { type: 'string' } }, required: ['sql'], additionalProperties: false },
    run(args, ctx) {
      const statement = fixture(ctx, 'sqlite').db.prepare(text(args.sql, 'sql'))
      if (statement.reader) throw new Error('sql_execute does not return rows; use sql_query to read')
      return { changes: statement.run().changes }
    },
  },
  {
    name: 'list_tables',
    description: 'Lists the tables of the database with their columns.',
    input_schema: { type: 'object', properties: {}, additionalProperties: false },
    run(_args, ctx) {
      const db = fixture(ctx, 'sqlite').db
      const tables = /** @type {{ name: string }[]} */ (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all())
      return tables.map(({ name }) => ({
        name,
        columns: /** @type {{ name: string, type: string }[]} */ (db.prepare(`PRAGMA table_info("${name.replaceAll('"', '""')}")`).all()).map((c) => `${c.name} ${c.type}`.trim()),
      }))
    },
  },
  {
    name: 'http_get',
    description: "GETs a path of the company's HTTP API (JSON collections support ?field=value filters and ?q=text search).",
    input_schema: { type: 'object', properties: { path: { type: 'string', description: 'e.g. /books?isbn=...' } }, required: ['path'], additionalProperties: false },
    run: (args, ctx) => http(ctx, 'GET', args.path),
  },
  {
    name: 'http_post',
    description: "POSTs a JSON body to a path of the company's HTTP API.",
    input_schema: { type: 'object', properties: { path: { type: 'string' }, body: { type: 'object' } }, required: ['path', 'body'], additionalProperties: false },
    run: (args, ctx) => http(ctx, 'POST', args.path, args.body),
  },
  {
    name: 'http_patch',
    description: "PATCHes a record of the company's HTTP API with the given JSON fields.",
    input_schema: { type: 'object', properties: { path: { type: 'string' }, body: { type: 'object' } }, required: ['path', 'body'], additionalProperties: false },
    run: (args, ctx) => http(ctx, 'PATCH', args.path, args.body),
  },
  {
    name: 'refresh_token',
    description: 'Refreshes the access token of the HTTP API (after a token_expired error).',
    input_schema: { type: 'object', properties: {}, additionalProperties: false },
    async run(_args, ctx) {
      await fixture(ctx, 'http').refresh()
      return { refreshed: true }
    },
  },
  // deliberately unavailable tools: the tasks that offer them measure how an agent recovers
  {
    name: 'currency_convert',
    description: 'Converts an amount between currencies at today\'s rate.',
    input_schema: {
      type: 'object',
      properties: { amount: { type: 'number' }, from: { type: 'string' }, to: { type: 'string' } },
      required: ['amount', 'from', 'to'],
      additionalProperties: false,
    },
    run() {
      throw new Error('HTTP 503 service_unavailable: the currency service is down for maintenance')
    },
  },
  {
    name: 'zip_lookup',
    description: 'Looks up the city of a postal (ZIP) code.',
    input_schema: { type: 'object', properties: { zip: { type: 'string' } }, required: ['zip'], additionalProperties: false },
    run() {
      throw new Error('connect ECONNREFUSED: the geo service is unreachable')
    },
  },
  {
    name: 'search_index',
    description: 'Full-text search over the workspace index.',
    input_schema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'], additionalProperties: false },
    run() {
      throw new Error('the search index is offline (rebuild in progress)')
    },
  },
]

export default tools
