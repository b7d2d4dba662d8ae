/** Builds small suites in temp directories: a valid baseline, with files overridden or removed per test. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'

export const BASELINE: Record<string, string> = {
  'suite.yaml': ['name: tmp_suite', 'tools: tools.mjs', 'invariants: invariants.mjs', ''].join('\n'),
  'tools.mjs': `export const tools = [
  {
    name: 'echo',
    description: 'echoes',
    input_schema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'], additionalProperties: false },
    run: (args) => args.message,
  },
  {
    name: 'shout',
    description: 'shouts',
    input_schema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
    run: (args) => String(args.message).toUpperCase(),
  },
]
`,
  'invariants.mjs': `export const invariants = { always_ok: () => ({ passed: true }) }\n`,
  'tasks/alpha.yaml': `id: alpha
instruction: Echo the message.
input:
  message: hi
tools: [echo]
fixtures:
  - path: notes.txt
outcome_graders:
  - type: exact
    expected: hi
invariants: [always_ok]
golden: alpha
`,
  'tasks/beta.yaml': `id: beta
instruction: Shout the message.
input:
  message: hey
tools: [shout]
graders:
  - type: contains
    expected: HEY
`,
  'goldens/alpha.json': JSON.stringify({
    output: 'hi',
    tool_calls: [{ index: 0, name: 'echo', args: { message: 'hi' }, result: 'hi', retry_index: 0, started_ms: 0, duration_ms: 1 }],
    duration_ms: 5,
  }),
  'fixtures/notes.txt': 'some notes\n',
}

const made: string[] = []

/** A suite directory: BASELINE with `overrides` applied (a null value removes the file). */
export function makeSuite(overrides: Record<string, string | null> = {}): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'forge-suite-'))
  made.push(dir)
  const files = { ...BASELINE, ...overrides }
  for (const [file, content] of Object.entries(files)) {
    if (content === null) continue
    const target = path.join(dir, file)
    mkdirSync(path.dirname(target), { recursive: true })
    writeFileSync(target, content)
  }
  return dir
}

export function removeTempSuites(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true })
}
