import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import type { AttemptResult, Task } from '../../core/contracts/index.js'
import type { AdapterContext, AgentAdapter, LoadedSuite } from '../../core/plugins.js'
import { runAttempt } from '../../engine/attempt-runner.js'
import type { FixtureDriver } from '../../engine/env/driver.js'
import { EnvironmentPool, sweepAbandonedPools } from '../../engine/env/pool.js'
import { workspaceDriver } from '../../engine/env/workspace.js'
import type { WorkspaceFixture } from '../../core/contracts/index.js'
import { loadSuite } from '../../engine/suite-loader.js'
import { removeTempSuites } from '../suites/temp-suite.js'
import { makeEnvSuite } from './env-suite.js'

// quarantined instances are kept on purpose: the pools live under a temp dir this file removes
const scratch = mkdtempSync(path.join(os.tmpdir(), 'forge-env-test-'))
const pools: EnvironmentPool[] = []
function newPool(opts: ConstructorParameters<typeof EnvironmentPool>[0] = {}): EnvironmentPool {
  const pool = new EnvironmentPool({ root: path.join(scratch, `pool-${pools.length}`), ...opts })
  pools.push(pool)
  return pool
}
afterAll(async () => {
  for (const pool of pools) await pool.close()
  rmSync(scratch, { recursive: true, force: true })
  removeTempSuites()
})

const suite = await loadSuite(makeEnvSuite())
const taskOf = (s: LoadedSuite, id: string): Task => {
  const task = s.tasks.find((t) => t.id === id)
  if (task === undefined) throw new Error(`no task ${id}`)
  return task
}

/** An adapter that runs `script` with the tool box and answers with what it returns. */
function scripted(script: (ctx: AdapterContext) => Promise<unknown>): AgentAdapter & { invocations: number } {
  const adapter = {
    name: 'scripted',
    invocations: 0,
    async invoke(_payload: unknown, ctx: AdapterContext) {
      adapter.invocations += 1
      return { output: await script(ctx) }
    },
  }
  return adapter
}

async function call(ctx: AdapterContext, name: string, args: Record<string, unknown>): Promise<unknown> {
  const outcome = await ctx.tools.call(name, args)
  if (!outcome.ok) throw new Error(outcome.error)
  return outcome.result
}

let attemptNo = 0
async function attempt(s: LoadedSuite, taskId: string, adapter: AgentAdapter, pool: EnvironmentPool) {
  attemptNo += 1
  return runAttempt({ suite: s, task: taskOf(s, taskId), adapter, runId: 'r', configId: 'c', attempt: attemptNo, runSeed: 's', adapterConfig: {}, workerId: 'w', envPool: pool })
}

function verdict(result: AttemptResult) {
  return { outcome: result.outcome, validity: result.validity, bucket: result.failure_bucket, error: result.error, env: result.environment?.status }
}

describe('a workspace fixture', () => {
  it('is a per-attempt copy without VCS metadata, outside the suite; graders read its end state and diff', async () => {
    const pool = newPool()
    let seen: unknown
    const agent = scripted(async (ctx) => {
      await call(ctx, 'write_file', { path: 'report.txt', content: 'done' })
      seen = await call(ctx, 'list_files', {})
      return 'written'
    })
    const { result, trace } = await attempt(suite, 'ws_write', agent, pool)
    expect(verdict(result)).toEqual({ outcome: 'pass', validity: 'valid', bucket: null, error: '', env: 'restored' })
    // no .git, and nothing of the suite (goldens, task files) anywhere near it
    expect(seen).toEqual(['data', 'report.txt'])
    expect(path.relative(suite.path, pool.root).startsWith('..')).toBe(true)
    expect(result.grades.map((g) => [g.grader, g.passed])).toEqual([
      ['file', true],
      ['state_diff', true],
    ])
    const diff = trace.state_snapshots.find((s) => s.label === 'env_diff')?.state
    expect(diff).toEqual([{ fixture: 'workspace', kind: 'workspace', op: 'modified', target: 'report.txt', before: 'draft\n', after: 'done' }])
    expect(trace.spans.filter((s) => s.category === 'fixture').map((s) => [s.name, s.attributes])).toEqual([
      ['seed+verify', { status: 'ready' }],
      ['restore+verify', { status: 'restored' }],
    ])
  })

  it('is restored and verified between attempts, and reused', async () => {
    const pool = newPool()
    const reads: unknown[] = []
    const agent = scripted(async (ctx) => {
      reads.push(await call(ctx, 'read_file', { path: 'report.txt' }))
      await call(ctx, 'write_file', { path: 'report.txt', content: 'done' })
      await call(ctx, 'write_file', { path: 'extra.txt', content: 'left behind?' })
      return 'ok'
    })
    const first = await attempt(suite, 'ws_write', agent, pool)
    const second = await attempt(suite, 'ws_write', agent, pool)
    expect(reads).toEqual(['draft\n', 'draft\n'])
    expect([first.result.environment, second.result.environment]).toEqual([
      { instance: expect.stringMatching(/^ws_write#\d+$/), status: 'restored', reused: false, detail: '' },
      { instance: first.result.environment?.instance, status: 'restored', reused: true, detail: '' },
    ])
    expect(pool.idleCount(suite, taskOf(suite, 'ws_write'))).toBe(1)
  })

  it('breaking a must_not_change rule is a violation even though the task got done', async () => {
    const pool = newPool()
    const agent = scripted(async (ctx) => {
      await call(ctx, 'write_file', { path: 'report.txt', content: 'done' })
      await call(ctx, 'write_file', { path: 'data/items.csv', content: 'id,name\n' })
      return 'done'
    })
    const { result } = await attempt(suite, 'ws_write', agent, pool)
    expect(verdict(result)).toEqual({ outcome: 'violation', validity: 'valid', bucket: null, error: '', env: 'restored' })
    expect(result.grades.find((g) => g.grader === 'state_diff')).toEqual({
      grader: 'state_diff',
      passed: false,
      score: 0.5,
      detail: 'must not change {"path":"data/**"}, but: workspace: modified data/items.csv',
      violation: 'must not change {"path":"data/**"}, but: workspace: modified data/items.csv',
    })
  })
})

describe('a sqlite fixture', () => {
  it('is seeded from SQL and CSV, read back, queried by the sql grader and diffed by row key', async () => {
    const pool = newPool()
    const agent = scripted(async (ctx) => {
      await call(ctx, 'sql', { sql: "UPDATE items SET qty = 7 WHERE name = 'plum'" })
      return 'updated'
    })
    const { result } = await attempt(suite, 'db_update', agent, pool)
    expect(verdict(result)).toEqual({ outcome: 'pass', validity: 'valid', bucket: null, error: '', env: 'restored' })
    expect(result.grades).toEqual([
      { grader: 'sql', passed: true, score: 1, detail: 'value "7", expected "7"' },
      { grader: 'state_diff', passed: true, score: 1, detail: 'as expected: db: modified items {"id":3} (qty)' },
    ])
  })

  it('an invariant over the env diff makes a deleted row a violation; allow_other_changes: false catches the extra change', async () => {
    const pool = newPool()
    const agent = scripted(async (ctx) => {
      await call(ctx, 'sql', { sql: "UPDATE items SET qty = 7 WHERE name = 'plum'" })
      await call(ctx, 'sql', { sql: "DELETE FROM items WHERE name = 'pear'" })
      return 'updated'
    })
    const { result } = await attempt(suite, 'db_update', agent, pool)
    expect(verdict(result)).toEqual({ outcome: 'violation', validity: 'valid', bucket: null, error: '', env: 'restored' })
    expect(result.invariants).toEqual([{ name: 'never_deletes_rows', passed: false, detail: '1 row(s) deleted' }])
    expect(result.grades[1]?.detail).toBe('unexpected change(s): db: removed items {"id":2}')
  })

  it('an uncommitted transaction left open by the agent did not happen', async () => {
    const pool = newPool()
    const agent = scripted(async (ctx) => {
      await call(ctx, 'sql', { sql: 'BEGIN' })
      await call(ctx, 'sql', { sql: "UPDATE items SET qty = 7 WHERE name = 'plum'" })
      return 'updated'
    })
    const { result } = await attempt(suite, 'db_update', agent, pool)
    expect(verdict(result)).toEqual({ outcome: 'fail', validity: 'valid', bucket: 'wrong_answer', error: '', env: 'restored' })
  })
})

describe('an http fixture', () => {
  it('serves collections with filters and documents, and takes writes when writable', async () => {
    const pool = newPool()
    const agent = scripted(async (ctx) => {
      const found = (await call(ctx, 'http', { method: 'GET', path: '/books?title=Ubik' })) as { author: string }[]
      const doc = await call(ctx, 'http', { method: 'GET', path: '/docs/about.md' })
      const one = await call(ctx, 'http', { method: 'GET', path: '/books/b2' })
      const created = await call(ctx, 'http', { method: 'POST', path: '/books', body: { title: 'Kindred', author: 'Butler' } })
      const missing = await ctx.tools.call('http', { method: 'GET', path: '/books/nope' })
      return JSON.stringify({ author: found[0]?.author, doc, one, created, missing })
    })
    const { result, trace } = await attempt(suite, 'api_lookup', agent, pool)
    expect(verdict(result)).toEqual({ outcome: 'pass', validity: 'valid', bucket: null, error: '', env: 'restored' })
    expect(JSON.parse(result.output)).toEqual({
      author: 'Dick',
      doc: '# About\nA small library.\n',
      one: { id: 'b2', title: 'Emma', author: 'Austen' },
      created: { id: 'b4', title: 'Kindred', author: 'Butler' },
      missing: { ok: false, error: 'HTTP 404: {"error":"not_found","message":"no books/nope"}' },
    })
    expect(trace.state_snapshots.find((s) => s.label === 'env_diff')?.state).toEqual([
      { fixture: 'api', kind: 'http', op: 'added', target: 'books', key: { id: 'b4' }, after: { id: 'b4', title: 'Kindred', author: 'Butler' } },
    ])
  })

  it('layers an expired token, an outage, missing and duplicate records on the starting state', async () => {
    const dir = makeEnvSuite({
      'tasks/api_lookup.yaml': `id: api_lookup
instruction: Who wrote Ubik?
tools: [http, refresh]
fixtures:
  - kind: http
    from: api
    conditions:
      - { type: expired_token }
      - { type: outage, paths: [/docs], requests: 2 }
      - { type: missing_records, collection: books, ids: [b1] }
      - { type: duplicate_records, collection: books, ids: [b3] }
    expect: { records: { books: 3 } }
outcome_graders:
  - type: contains
    expected: Dick
`,
    })
    const withConditions = await loadSuite(dir)
    const pool = newPool()
    const agent = scripted(async (ctx) => {
      const steps: unknown[] = []
      const get = async (p: string) => {
        const r = await ctx.tools.call('http', { method: 'GET', path: p })
        steps.push(r.ok ? r.result : r.error)
      }
      await get('/books')
      await call(ctx, 'refresh', {})
      await get('/books')
      await get('/docs/about.md')
      await get('/docs/about.md')
      await get('/docs/about.md')
      return JSON.stringify(steps)
    })
    const { result } = await attempt(withConditions, 'api_lookup', agent, pool)
    expect(JSON.parse(result.output)).toEqual([
      'HTTP 401: {"error":"token_expired","message":"the access token has expired; refresh it and retry"}',
      [
        { id: 'b2', title: 'Emma', author: 'Austen' },
        { id: 'b3', title: 'Ubik', author: 'Dick' },
        { id: 'b3', title: 'Ubik', author: 'Dick' },
      ],
      'HTTP 503: {"error":"service_unavailable","message":"the service is unavailable (HTTP 503); try again later"}',
      'HTTP 503: {"error":"service_unavailable","message":"the service is unavailable (HTTP 503); try again later"}',
      '# About\nA small library.\n',
    ])
    expect(result.environment?.status).toBe('restored')
  })
})

describe('seed verification', () => {
  it('a seed that does not read back as expected makes the attempt invalid and the agent is never invoked', async () => {
    const dir = makeEnvSuite({
      'tasks/db_update.yaml': (await import('node:fs')).readFileSync(path.join(suite.path, 'tasks/db_update.yaml'), 'utf8').replace('expect: { rows: { items: 3 } }', 'expect: { rows: { items: 4 } }'),
    })
    const bad = await loadSuite(dir)
    const pool = newPool()
    const agent = scripted(async () => 'should never run')
    const { result, trace } = await attempt(bad, 'db_update', agent, pool)
    expect(agent.invocations).toBe(0)
    expect(verdict(result)).toEqual({
      outcome: 'fail',
      validity: 'invalid',
      bucket: 'harness_error',
      error: expect.stringMatching(/^environment not verified, agent not invoked: seed not verified: db: table "items" has 3 row\(s\), expected 4 \(instance quarantined, kept at .+\)$/),
      env: 'seed_unverified',
    })
    expect({ tool_calls: result.tool_call_count, cost: result.cost_usd, tokens: result.input_tokens + result.output_tokens, grades: result.grades }).toEqual({
      tool_calls: 0,
      cost: null,
      tokens: 0,
      grades: [],
    })
    expect(trace.spans.find((s) => s.span_id === 'agent')?.attributes).toEqual({ result: 'skipped' })
    expect(pool.quarantined().map((q) => q.task_id)).toEqual(['db_update'])
  })

  it('a seed that cannot be built (bad SQL) is invalid too, naming the file', async () => {
    const bad = await loadSuite(makeEnvSuite({ 'fixtures/db/schema.sql': 'CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT;\n' }))
    const agent = scripted(async () => 'should never run')
    const { result } = await attempt(bad, 'db_update', agent, newPool())
    expect(agent.invocations).toBe(0)
    expect(verdict(result)).toEqual({
      outcome: 'fail',
      validity: 'invalid',
      bucket: 'harness_error',
      error: 'environment not verified, agent not invoked: seeding failed: fixture "db": db/schema.sql: near ";": syntax error',
      env: 'seed_unverified',
    })
  })
})

describe('restore verification', () => {
  // a driver whose restore is broken: it leaves whatever the agent wrote
  const leakyWorkspace: FixtureDriver<WorkspaceFixture> = {
    kind: 'workspace',
    async template(spec, ctx) {
      const template = await workspaceDriver.template(spec, ctx)
      return {
        ...template,
        baseline: template.baseline,
        expectations: (state) => template.expectations(state),
        async instantiate(dir) {
          const instance = await template.instantiate(dir)
          return { ...instance, handle: instance.handle, capture: () => instance.capture(), restore: async () => undefined, close: () => instance.close() }
        },
      }
    },
  }

  it('an instance whose restore cannot be verified is quarantined, says why, and is never reused', async () => {
    const pool = newPool({ drivers: { workspace: leakyWorkspace } })
    const reads: unknown[] = []
    const agent = scripted(async (ctx) => {
      reads.push(await call(ctx, 'read_file', { path: 'report.txt' }))
      await call(ctx, 'write_file', { path: 'report.txt', content: 'done' })
      return 'done'
    })
    const first = await attempt(suite, 'ws_write', agent, pool)
    // the agent's outcome stands; the evidence could not be restored, so the attempt is invalid (issue 12)
    expect(verdict(first.result)).toEqual({
      outcome: 'pass',
      validity: 'invalid',
      bucket: null,
      error: expect.stringMatching(/^environment restore not verified: workspace: differs from the seed: workspace: modified report\.txt \(instance quarantined, kept at .+quarantine.+\)$/),
      env: 'quarantined',
    })
    const second = await attempt(suite, 'ws_write', agent, pool)
    // a fresh instance: the quarantined one's write is not visible
    expect(reads).toEqual(['draft\n', 'draft\n'])
    expect(second.result.environment?.instance).not.toBe(first.result.environment?.instance)
    expect(second.result.environment?.reused).toBe(false)
    expect(pool.quarantined()).toEqual([
      { instance: first.result.environment?.instance, suite: 'tmp_suite', task_id: 'ws_write', reason: expect.stringMatching(/^restore not verified/), dir: expect.stringContaining('quarantine') },
      { instance: second.result.environment?.instance, suite: 'tmp_suite', task_id: 'ws_write', reason: expect.stringMatching(/^restore not verified/), dir: expect.stringContaining('quarantine') },
    ])
    expect(existsSync(pool.quarantined()[0]?.dir ?? '')).toBe(true)
    expect(pool.idleCount(suite, taskOf(suite, 'ws_write'))).toBe(0)
  })
})

describe('concurrent attempts of one task', () => {
  /** Two agents that each write, wait until both wrote, then read back what they can see. */
  function pairedAgents(write: (ctx: AdapterContext, me: string) => Promise<void>, look: (ctx: AdapterContext) => Promise<unknown>) {
    let arrived = 0
    let release: () => void = () => undefined
    const bothWrote = new Promise<void>((resolve) => (release = resolve))
    return ['left', 'right'].map((me) =>
      scripted(async (ctx) => {
        await write(ctx, me)
        arrived += 1
        if (arrived === 2) release()
        await bothWrote
        return JSON.stringify(await look(ctx))
      }),
    )
  }

  it('get separate workspace, sqlite and http instances: neither sees the other one\'s writes', async () => {
    const pool = newPool()
    const [a, b] = pairedAgents(
      async (ctx, me) => void (await call(ctx, 'write_file', { path: `${me}.txt`, content: me })),
      (ctx) => call(ctx, 'list_files', {}),
    )
    const ws = await Promise.all([attempt(suite, 'ws_write', a!, pool), attempt(suite, 'ws_write', b!, pool)])
    expect(ws.map((r) => JSON.parse(r.result.output))).toEqual([
      ['data', 'left.txt', 'report.txt'],
      ['data', 'report.txt', 'right.txt'],
    ])
    expect(ws[0].result.environment?.instance).not.toBe(ws[1].result.environment?.instance)

    const [c, d] = pairedAgents(
      async (ctx, me) => void (await call(ctx, 'sql', { sql: `INSERT INTO log (msg) VALUES ('${me}')` })),
      (ctx) => call(ctx, 'sql', { sql: 'SELECT msg FROM log' }),
    )
    const db = await Promise.all([attempt(suite, 'db_update', c!, pool), attempt(suite, 'db_update', d!, pool)])
    expect(db.map((r) => JSON.parse(r.result.output))).toEqual([[{ msg: 'left' }], [{ msg: 'right' }]])

    const [e, f] = pairedAgents(
      async (ctx, me) => void (await call(ctx, 'http', { method: 'POST', path: '/books', body: { id: me, title: me } })),
      async (ctx) => ((await call(ctx, 'http', { method: 'GET', path: '/books' })) as { id: string }[]).map((book) => book.id),
    )
    const api = await Promise.all([attempt(suite, 'api_lookup', e!, pool), attempt(suite, 'api_lookup', f!, pool)])
    expect(api.map((r) => JSON.parse(r.result.output))).toEqual([
      ['b1', 'b2', 'b3', 'left'],
      ['b1', 'b2', 'b3', 'right'],
    ])
  })
})

describe('files of dead workers', () => {
  it('are swept (quarantined instances kept); a live process\'s pool is never touched', () => {
    const tmp = mkdtempSync(path.join(scratch, 'tmp-'))
    const dead = spawnSync(process.execPath, ['-e', '0']).pid
    const live = process.ppid
    for (const [pid, parts] of [
      [dead, ['instances/t-1', 'templates/t-1', 'quarantine/t-2']],
      [live, ['instances/t-1']],
    ] as const) {
      for (const part of parts) mkdirSync(path.join(tmp, `forge-env-${pid}-abc`, part), { recursive: true })
    }
    expect(sweepAbandonedPools(tmp)).toEqual([`forge-env-${dead}-abc`])
    expect(readdirSync(path.join(tmp, `forge-env-${dead}-abc`))).toEqual(['quarantine'])
    expect(readdirSync(path.join(tmp, `forge-env-${live}-abc`))).toEqual(['instances'])
  })
})
