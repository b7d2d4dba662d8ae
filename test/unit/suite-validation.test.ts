import { describe, expect, it } from 'vitest'
import { SuiteManifest } from '../../core/contracts/index.js'
import { formatIssuePath, goldenFileName, taskFileFormat, validateSuite, type SuiteDocument } from '../../core/suite-validation.js'

const manifest = SuiteManifest.parse({ name: 's' })
const task = { id: 't1', instruction: 'go', tools: ['a'], outcome_graders: [{ type: 'exact', expected: 'x' }] }

function validate(taskDocuments: SuiteDocument[], extra: Partial<Parameters<typeof validateSuite>[0]> = {}) {
  return validateSuite({ manifest, taskDocuments, toolNames: ['a'], invariantNames: [], goldenFiles: [], fixturePaths: ['data/f.txt'], ...extra })
}

describe('validateSuite', () => {
  it('returns the parsed tasks of a valid suite', () => {
    const { tasks, problems } = validate([{ file: 'tasks/t1.yaml', data: { ...task, fixtures: [{ path: './data//f.txt' }] } }])
    expect(problems).toEqual([])
    expect(tasks.map((t) => [t.id, t.budget, t.fixtures])).toEqual([
      ['t1', { max_tool_calls: 20, max_retries_per_tool: 3, max_duration_ms: 60_000 }, [{ kind: 'file', path: './data//f.txt' }]],
    ])
  })

  it('reports a document that is not a mapping, and a missing required field', () => {
    const { problems } = validate([
      { file: 'tasks/a.yaml', data: null },
      { file: 'tasks/b.yaml', data: ['x'] },
      { file: 'tasks/c.yaml', data: { id: 'c', tools: [], outcome_graders: [{ type: 'exact', expected: 'x' }] } },
      { file: 'tasks/d.json', data: null },
      { file: 'tasks/e.json', data: 'x' },
      { file: 'tasks/f.json', syntaxError: 'JSON syntax error: Unexpected end of JSON input' },
    ])
    expect(problems).toEqual([
      { file: 'tasks/a.yaml', path: '', message: 'a task file must be a YAML mapping, got an empty document' },
      { file: 'tasks/b.yaml', path: '', message: 'a task file must be a YAML mapping, got a list' },
      { file: 'tasks/c.yaml', path: 'instruction', message: 'required field missing (expected string)' },
      { file: 'tasks/d.json', path: '', message: 'a task file must be a JSON object, got null' },
      { file: 'tasks/e.json', path: '', message: 'a task file must be a JSON object, got a string' },
      { file: 'tasks/f.json', path: '', message: 'JSON syntax error: Unexpected end of JSON input' },
    ])
  })

  it('refuses fixtures and goldens outside their directories, and a tool both allowed and denied', () => {
    const { problems } = validate([
      { file: 'tasks/t1.yaml', data: { ...task, disallowed_tools: ['a'], golden: '../../etc/passwd', fixtures: [{ path: '../secret.txt' }] } },
    ])
    expect(problems).toEqual([
      { file: 'tasks/t1.yaml', path: 'disallowed_tools[0]', message: 'tool "a" is both allowed and disallowed' },
      { file: 'tasks/t1.yaml', path: 'golden', message: 'golden "../../etc/passwd" must name a file inside goldens/' },
      { file: 'tasks/t1.yaml', path: 'fixtures[0].path', message: 'fixture "../secret.txt" must stay inside fixtures/' },
    ])
  })

  it('tells task files by their extension', () => {
    expect(['a.yaml', 'b.YML', 'c.json', 'd.txt', 'e.yaml.bak', 'json'].map(taskFileFormat)).toEqual(['yaml', 'yaml', 'json', undefined, undefined, undefined])
  })

  it('drops a string "$schema" (an editor hint) but reports any other unknown field', () => {
    const { tasks, problems } = validate([
      { file: 'tasks/t1.json', data: { $schema: './task.schema.json', ...task } },
      { file: 'tasks/t2.json', data: { $schema: 7, ...task, id: 't2' } },
    ])
    expect(tasks.map((t) => t.id)).toEqual(['t1'])
    expect(problems).toEqual([{ file: 'tasks/t2.json', path: '$schema', message: 'unknown field' }])
  })

  it('formats paths and golden names', () => {
    expect(formatIssuePath(['outcome_graders', 0, 'expected'])).toBe('outcome_graders[0].expected')
    expect(formatIssuePath([])).toBe('')
    expect(goldenFileName('echo')).toBe('echo.json')
    expect(goldenFileName('echo.json')).toBe('echo.json')
  })
})
