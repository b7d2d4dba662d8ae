/** A small suite with one task per fixture kind, built in a temp dir, for the environment lifecycle tests. */
import { makeSuite } from '../suites/temp-suite.js'

const TOOLS = `
const ws = (ctx) => ctx.env.workspace.root
import { readFileSync, writeFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
export const tools = [
  { name: 'write_file', description: 'writes', input_schema: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } }, required: ['path', 'content'] },
    run: (a, ctx) => { writeFileSync(join(ws(ctx), a.path), a.content); return 'ok' } },
  { name: 'read_file', description: 'reads', input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    run: (a, ctx) => readFileSync(join(ws(ctx), a.path), 'utf8') },
  { name: 'list_files', description: 'lists', input_schema: { type: 'object', properties: {} },
    run: (a, ctx) => readdirSync(ws(ctx)).sort() },
  { name: 'sql', description: 'runs sql', input_schema: { type: 'object', properties: { sql: { type: 'string' } }, required: ['sql'] },
    run: (a, ctx) => { const st = ctx.env.db.db.prepare(a.sql); return st.reader ? st.all() : st.run().changes } },
  { name: 'http', description: 'calls the api', input_schema: { type: 'object', properties: { method: { type: 'string' }, path: { type: 'string' }, body: {} }, required: ['method', 'path'] },
    run: async (a, ctx) => { const r = await ctx.env.api.request(a.method, a.path, a.body); if (r.status >= 400) throw new Error('HTTP ' + r.status + ': ' + JSON.stringify(r.body)); return r.body } },
  { name: 'refresh', description: 'refreshes the token', input_schema: { type: 'object', properties: {} },
    run: async (a, ctx) => { await ctx.env.api.refresh(); return 'refreshed' } },
]
`

const INVARIANTS = `
export const invariants = {
  never_deletes_rows: (trace) => {
    const diff = trace.state_snapshots.find((s) => s.label === 'env_diff')?.state ?? []
    const removed = diff.filter((c) => c.kind === 'sqlite' && c.op === 'removed')
    return removed.length === 0 ? { passed: true } : { passed: false, detail: removed.length + ' row(s) deleted' }
  },
}
`

/** The task files of the env suite, by path: one per fixture kind. */
export const ENV_TASKS: Record<string, string> = {
    'tasks/ws_write.yaml': `id: ws_write
instruction: Write done into report.txt.
input: { path: report.txt, content: done }
tools: [write_file, read_file, list_files]
fixtures:
  - kind: workspace
    from: ws
outcome_graders:
  - type: file
    path: report.txt
    equals: done
  - type: state_diff
    expect:
      - { path: report.txt, op: modified }
    must_not_change:
      - { path: 'data/**' }
`,
    'tasks/db_update.yaml': `id: db_update
instruction: Set the quantity of plum to 7.
input: { sql: "UPDATE items SET qty = 7 WHERE name = 'plum'" }
tools: [sql]
fixtures:
  - kind: sqlite
    sql: db/schema.sql
    csv: { items: db/items.csv }
    expect: { rows: { items: 3 } }
outcome_graders:
  - type: sql
    query: SELECT qty FROM items WHERE name = 'plum'
    value: 7
  - type: state_diff
    expect:
      - { table: items, op: modified, key: { id: 3 }, after: { qty: 7 } }
    allow_other_changes: false
invariants: [never_deletes_rows]
`,
    'tasks/api_lookup.yaml': `id: api_lookup
instruction: Who wrote Ubik?
input: { method: GET, path: /books?title=Ubik }
tools: [http, refresh]
fixtures:
  - kind: http
    from: api
    writable: true
outcome_graders:
  - type: contains
    expected: Dick
`,
}

export function makeEnvSuite(overrides: Record<string, string | null> = {}): string {
  return makeSuite({
    'tools.mjs': TOOLS,
    'invariants.mjs': INVARIANTS,
    'tasks/alpha.yaml': null,
    'tasks/beta.yaml': null,
    'goldens/alpha.json': null,
    'fixtures/notes.txt': null,
    'fixtures/ws/report.txt': 'draft\n',
    'fixtures/ws/data/items.csv': 'id,name\n1,apple\n2,pear\n',
    'fixtures/ws/.git/HEAD': 'ref: refs/heads/main\n',
    'fixtures/db/schema.sql': 'CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER);\nCREATE TABLE log (msg TEXT);\n',
    'fixtures/db/items.csv': 'id,name,qty\n1,apple,3\n2,pear,5\n3,plum,0\n',
    'fixtures/api/books.json': JSON.stringify([
      { id: 'b1', title: 'Dune', author: 'Herbert' },
      { id: 'b2', title: 'Emma', author: 'Austen' },
      { id: 'b3', title: 'Ubik', author: 'Dick' },
    ]),
    'fixtures/api/docs/about.md': '# About\nA small library.\n',
    ...ENV_TASKS,
    ...overrides,
  })
}
