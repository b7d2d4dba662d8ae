import { describe, expect, it } from 'vitest'
import { SuiteManifest } from '../../core/contracts/index.js'
import { validateSuite } from '../../core/suite-validation.js'

const manifest = SuiteManifest.parse({ name: 's' })
const base = { id: 't1', instruction: 'go', tools: ['a'], outcome_graders: [{ type: 'exact', expected: 'x' }] }
const fixturePaths = ['ws/a.txt', 'ws/sub/b.txt', 'db/schema.sql', 'db/rows.csv', 'api/books.json', 'kv.json']

function validate(task: Record<string, unknown>) {
  return validateSuite({ manifest, taskDocuments: [{ file: 'tasks/t1.yaml', data: { ...base, ...task } }], toolNames: ['a'], invariantNames: [], goldenFiles: [], fixturePaths })
}

describe('fixture kinds in task files', () => {
  it('parses every kind with its defaults; `path` alone stays a file fixture', () => {
    const { tasks, problems } = validate({
      fixtures: [
        { path: 'kv.json' },
        { kind: 'workspace', from: 'ws', conditions: [{ type: 'missing_records', paths: ['a.txt'] }] },
        { kind: 'sqlite', sql: 'db/schema.sql', csv: { rows: 'db/rows.csv' }, conditions: [{ type: 'duplicate_records', table: 'rows', where: 'id = 1' }] },
        { kind: 'http', from: 'api', conditions: [{ type: 'expired_token' }, { type: 'outage', paths: ['/books'], requests: 2 }] },
      ],
      outcome_graders: [
        { type: 'file', path: 'a.txt', exists: false },
        { type: 'sql', query: 'SELECT 1', count: 1 },
        { type: 'state_diff', must_not_change: [{ fixture: 'api', collection: 'books' }] },
      ],
    })
    expect(problems).toEqual([])
    expect(tasks[0]?.fixtures).toEqual([
      { kind: 'file', path: 'kv.json' },
      { kind: 'workspace', name: 'workspace', from: 'ws', conditions: [{ type: 'missing_records', paths: ['a.txt'] }] },
      { kind: 'sqlite', name: 'db', sql: 'db/schema.sql', csv: { rows: 'db/rows.csv' }, conditions: [{ type: 'duplicate_records', table: 'rows', where: 'id = 1' }] },
      { kind: 'http', name: 'api', from: 'api', writable: false, conditions: [{ type: 'expired_token' }, { type: 'outage', paths: ['/books'], status: 503, requests: 2 }] },
    ])
  })

  it('reports missing directories and files, escapes, conditions a kind does not support, and duplicate names', () => {
    const { problems } = validate({
      fixtures: [
        { kind: 'workspace', from: 'nowhere' },
        { kind: 'workspace', from: 'ws', conditions: [{ type: 'missing_records', paths: ['gone.txt'] }] },
        { kind: 'sqlite', sql: ['db/schema.sql', 'db/seed.sql'], csv: { rows: '../rows.csv' } },
        { kind: 'sqlite', name: 'db', csv: { rows: 'db/rows.csv' }, conditions: [{ type: 'expired_token' }] },
        { kind: 'http', from: 'api', conditions: [{ type: 'outage', paths: ['books'] }] },
        { kind: 'sqlite' },
        { kind: 'ftp', from: 'x' },
      ],
    })
    expect(problems).toEqual([
      { file: 'tasks/t1.yaml', path: 'fixtures[3].conditions[0].type', message: "Invalid discriminator value. Expected 'missing_records' | 'duplicate_records'" },
      { file: 'tasks/t1.yaml', path: 'fixtures[4].conditions[0].paths[0]', message: 'a path starts with /' },
      { file: 'tasks/t1.yaml', path: 'fixtures[5].sql', message: 'a sqlite fixture needs `sql` or `csv` to seed from' },
      { file: 'tasks/t1.yaml', path: 'fixtures[6].kind', message: expect.stringMatching(/Invalid/) },
      { file: 'tasks/t1.yaml', path: 'fixtures[0].from', message: 'fixture directory "nowhere" not found under fixtures/' },
      { file: 'tasks/t1.yaml', path: 'fixtures[1].name', message: 'duplicate fixture name "workspace": give each fixture its own `name`' },
      { file: 'tasks/t1.yaml', path: 'fixtures[1].conditions[0].paths[0]', message: 'fixture "ws/gone.txt" not found under fixtures/' },
      { file: 'tasks/t1.yaml', path: 'fixtures[2].sql[1]', message: 'fixture "db/seed.sql" not found under fixtures/' },
      { file: 'tasks/t1.yaml', path: 'fixtures[2].csv.rows', message: 'fixture "../rows.csv" must stay inside fixtures/' },
      { file: 'tasks/t1.yaml', path: 'fixtures[3].name', message: 'duplicate fixture name "db": give each fixture its own `name`' },
      { file: 'tasks/t1.yaml', path: 'fixtures[5].name', message: 'duplicate fixture name "db": give each fixture its own `name`' },
    ])
  })

  it('checks that graders read fixtures the task has, of the right kind', () => {
    const { problems } = validate({
      fixtures: [{ kind: 'sqlite', name: 'workspace', sql: 'db/schema.sql' }],
      outcome_graders: [
        { type: 'file', path: 'a.txt', exists: true },
        { type: 'sql', query: 'SELECT 1', count: 1 },
        { type: 'state_diff', expect: [{ fixture: 'api' }] },
      ],
    })
    expect(problems).toEqual([
      { file: 'tasks/t1.yaml', path: 'outcome_graders[0]', message: 'reads fixture "workspace" as workspace, but it is a sqlite fixture' },
      { file: 'tasks/t1.yaml', path: 'outcome_graders[1]', message: 'reads fixture "db", which this task does not have (it has: workspace (sqlite))' },
      { file: 'tasks/t1.yaml', path: 'outcome_graders[2]', message: 'reads fixture "api", which this task does not have (it has: workspace (sqlite))' },
    ])
  })
})
