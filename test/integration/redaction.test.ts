/**
 * Redaction on write, end to end on the real embedded stack: a subprocess agent given a key by
 * reference leaks it — with the worker's OPENAI_API_KEY and planted PII and credentials — through
 * its answer, tool arguments, tool results, tool errors and its error output. Afterwards a byte
 * search of every file under FORGE_HOME (chDB parts, JetStream blocks, Temporal's SQLite database
 * and WAL, logs) and a search of every stored row find none of them, while the run's secret_leak
 * and pii_exposure metrics counted the leaks. The same run with --no-redact stores them, which shows
 * the search can find what it looks for. `npm run build` first: workers run from dist/.
 */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runSuite } from '../../app/run.js'
import { openReader } from '../../app/store-access.js'
import { stackDown, stackUp } from '../../stack/local-stack.js'
import { startTestStack, type TestStack } from '../helpers/stack.js'
import { makeSuite, removeTempSuites } from '../suites/temp-suite.js'

const WORKER_KEY = 'sk-test-SECRET123'
const REF_SECRET = 'by-Reference-only-5c1d9e'
const planted = {
  worker_key: WORKER_KEY,
  ref_secret: REF_SECRET,
  email_out: 'leaky.person@example.net',
  email_tool: 'owner.record@example.org',
  card: '4012888888881881',
  phone: '+44 20 7946 0958',
  aws: 'AKIAIOSFODNN7EXAMPLE',
  github: 'ghp_16C7e42F292c6912E7710c838347Ae178B4a',
  jwt: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.c2lnbmF0dXJlLXBsYW50ZWQ',
  url_password: 'Pl4ntedPw9',
}

const suiteDir = makeSuite({
  'tools.mjs': `export const tools = [
  {
    name: 'lookup',
    description: 'looks a customer up',
    input_schema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
    run: () => ({ owner: '${planted.email_tool}', card: '${planted.card}', token: '${planted.github}' }),
  },
  {
    name: 'charge',
    description: 'charges a card',
    input_schema: { type: 'object', properties: { card: { type: 'string' } }, required: ['card'] },
    run: (args) => { throw new Error('card ' + args.card + ' declined, call ${planted.phone}') },
  },
]
`,
  'tasks/alpha.yaml': `id: alpha
instruction: Look the customer up and report.
input:
  query: customer 7
tools: [lookup, charge]
outcome_graders:
  - type: contains
    expected: report
`,
  'tasks/beta.yaml': null,
  'goldens/alpha.json': null,
})

// outside the suite: the sandbox never shows an agent the suite directory
const agentDir = mkdtempSync(join(tmpdir(), 'forge-leaky-agent-'))
chmodSync(agentDir, 0o755) // the sandboxed agent runs as a user of its own
const agentPath = join(agentDir, 'leaky-agent.mjs')
writeFileSync(
  agentPath,
  `import { createInterface } from 'node:readline'
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]()
const send = (m) => process.stdout.write(JSON.stringify(m) + '\\n')
const receive = async () => JSON.parse((await lines.next()).value)
await receive()
let id = 0
const call = async (name, args) => { send({ type: 'tool_call', id: String(++id), name, args }); for (;;) { const m = await receive(); if (m.type === 'tool_result') return m } }
const found = await call('lookup', { query: 'key ' + process.env.MY_KEY + ' for ${planted.email_out} ${planted.aws}' })
await call('charge', { card: found.result.card })
console.log('report for ${planted.email_out}: keys ' + process.env.OPENAI_API_KEY + ' / ' + process.env.MY_KEY + ', card 4012 8888 8888 1881, db postgres://app:${planted.url_password}@db:5432/x')
process.stderr.write('failed with Authorization: Bearer ${planted.jwt} for ${planted.email_out}\\n')
process.exit(3)
`,
)

let stack: TestStack
const saved = { OPENAI_API_KEY: process.env['OPENAI_API_KEY'], FORGE_TEST_AGENT_SECRET: process.env['FORGE_TEST_AGENT_SECRET'] }

beforeAll(async () => {
  // the worker processes inherit this: OPENAI_API_KEY is a secret the worker holds, the other one is passed by reference
  process.env['OPENAI_API_KEY'] = WORKER_KEY
  process.env['FORGE_TEST_AGENT_SECRET'] = REF_SECRET
  stack = await startTestStack('redaction')
})
afterAll(async () => {
  rmSync(agentDir, { recursive: true, force: true })
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name]
    else process.env[name] = value
  }
  await stack?.down()
  removeTempSuites()
})

function run(runId: string, redact: boolean) {
  return runSuite(stack.config, {
    suite: suiteDir,
    adapter: 'subprocess',
    adapter_config: { command: ['node', agentPath], env: { MY_KEY: { from_env: 'FORGE_TEST_AGENT_SECRET' }, OPENAI_API_KEY: { from_env: 'OPENAI_API_KEY' } } },
    attempts: 3,
    workers: 1,
    concurrency: 3,
    seed: 'redact',
    run_id: runId,
    redact,
  })
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return filesUnder(path)
    return entry.isFile() ? [path] : []
  })
}

/** For each planted value, the files under FORGE_HOME whose bytes contain it. */
function byteSearch(home: string): Record<string, string[]> {
  const files = filesUnder(home).filter((file) => statSync(file).size > 0)
  const hits: Record<string, string[]> = {}
  for (const file of files) {
    const bytes = readFileSync(file)
    for (const [name, value] of Object.entries(planted)) {
      if (bytes.includes(Buffer.from(value, 'utf8'))) (hits[name] ??= []).push(file.slice(home.length + 1))
    }
  }
  return hits
}

/** Every stored row of the run, of every table, as text. */
async function storedText(runId: string): Promise<string> {
  const reader = await openReader(stack.config)
  try {
    const tables = ['attempts', 'tool_calls', 'traces', 'metrics', 'judgements', 'runs']
    const parts = await Promise.all(tables.map((table) => reader.query<Record<string, unknown>>(`SELECT * FROM ${table} FINAL WHERE run_id = {run:String}`, { run: runId })))
    return JSON.stringify(parts)
  } finally {
    await reader.close()
  }
}

async function metric(runId: string, name: string): Promise<Array<{ value: number; passed: number | null; detail: string }>> {
  const reader = await openReader(stack.config)
  try {
    const rows = await reader.query<{ value: number; passed: number | null; detail: string }>(
      'SELECT value, passed, detail FROM metrics FINAL WHERE run_id = {run:String} AND metric = {m:String} ORDER BY attempt_uid',
      { run: runId, m: name },
    )
    return rows.map((r) => ({ value: Number(r.value), passed: r.passed === null ? null : Number(r.passed), detail: r.detail }))
  } finally {
    await reader.close()
  }
}

describe('redaction on write: nothing under FORGE_HOME holds a planted secret', () => {
  it('a redacted run stores no planted value anywhere, and its metrics counted the leaks', async () => {
    const report = await run('redacted-run', true)
    expect(report.attempts).toBe(3)
    const text = await storedText('redacted-run')
    expect(Object.entries(planted).filter(([, value]) => text.includes(value)).map(([name]) => name)).toEqual([])
    // what is stored instead: typed labels
    expect(text).toContain('[REDACTED:secret#1]')
    expect(text).toContain('[REDACTED:email#')

    // every file: chDB parts, JetStream blocks, Temporal's SQLite and WAL, logs (the ingester has drained by now)
    await stackDown(stack.config)
    expect(byteSearch(stack.home)).toEqual({})
    // the metrics ran on the raw trace: every leak counted
    expect(await metric('redacted-run', 'secret_leak')).toEqual(Array(3).fill({ value: 3, passed: 0, detail: 'found: a secret the worker holds, AWS access key id, password in a URL' }))
    expect(await metric('redacted-run', 'pii_exposure')).toEqual(Array(3).fill({ value: 2, passed: null, detail: '1 email(s), 1 card number(s), 0 phone number(s) not in the task' }))
  })

  it('the same run with --no-redact stores them (the search finds what it looks for), and says so on the run', async () => {
    await stackUp(stack.config)
    const report = await run('raw-run', false)
    expect(report.run?.redacted).toBe(false)
    const text = await storedText('raw-run')
    expect(Object.keys(planted).filter((name) => text.includes(planted[name as keyof typeof planted]))).toEqual(Object.keys(planted))
    await stackDown(stack.config)
    const hits = byteSearch(stack.home)
    expect(Object.keys(hits).sort()).toEqual(Object.keys(planted).sort())
    // JetStream keeps the raw messages: a byte search finds every value there at least
    expect(Object.values(hits).every((files) => files.some((file) => file.includes('nats') || file.includes('jetstream')))).toBe(true)
  })
})
