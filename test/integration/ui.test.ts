/**
 * `forge ui` over an embedded store that no stack owns: pages and their JSON agree with the store,
 * paging walks every attempt once, bad requests get 400/404/405, and between requests the store is
 * free for another process (a `forge run` could take it over).
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RunStats } from '../../app/stats.js'
import { startUi, type UiServer } from '../../app/ui.js'
import { getRunStats } from '../../app/stats.js'
import type { AttemptResult } from '../../core/contracts/index.js'
import type { TraceView } from '../../core/span-tree.js'
import { resolveConfig, type ForgeConfig } from '../../stack/config.js'
import { packageRoot } from '../../stack/paths.js'
import { directReader, openClickHouse } from '../../store/clickhouse.js'
import { migrate } from '../../store/migrations.js'
import type { AttemptListEntry, RunPageEntry } from '../../store/report-queries.js'
import { getWithHost } from '../helpers/http-host.js'
import { forgeAsync } from '../helpers/stack.js'
import { storeSyntheticRun } from './report-fixture.js'

let home: string
let env: NodeJS.ProcessEnv
let config: ForgeConfig
let ui: UiServer
let attempts: AttemptResult[]

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'forge-ui-'))
  env = { ...process.env, FORGE_HOME: home, FORGE_LOG_LEVEL: 'warn' }
  for (const key of ['FORGE_TEMPORAL_ADDRESS', 'FORGE_NATS_URL', 'FORGE_CLICKHOUSE_URL']) delete env[key]
  config = resolveConfig(env)
  const client = await openClickHouse({ kind: 'embedded', path: config.storePath })
  await migrate(client)
  attempts = await storeSyntheticRun(client, 'ui1', ['alpha', 'beta', 'gamma'], 30)
  await storeSyntheticRun(client, 'ui0', ['alpha'], 3)
  await client.close()
  ui = await startUi(config, { host: '127.0.0.1', port: 0, pageSize: 20 })
})

afterAll(async () => {
  await ui?.close()
  rmSync(home, { recursive: true, force: true })
})

const get = async (path: string, init?: RequestInit) => {
  const res = await fetch(new URL(path, ui.url), init)
  return { status: res.status, type: res.headers.get('content-type') ?? '', csp: res.headers.get('content-security-policy') ?? '', body: await res.text() }
}
const json = async <T>(path: string): Promise<T> => JSON.parse((await get(`${path}${path.includes('?') ? '&' : '?'}format=json`)).body) as T

describe('forge ui', () => {
  it('lists runs with their stored, passed and harness-error counts, and links each', async () => {
    const data = await json<{ total: number; runs: RunPageEntry[] }>('/')
    expect(data.total).toBe(2)
    const ui1 = data.runs.find((r) => r.run_id === 'ui1')!
    expect(ui1).toMatchObject({
      stored: attempts.length,
      planned: attempts.length,
      passed: attempts.filter((a) => a.outcome === 'pass').length,
      harness_errors: attempts.filter((a) => a.failure_bucket === 'harness_error').length,
    })
    const page = await get('/')
    expect(page.status).toBe(200)
    expect(page.type).toBe('text/html; charset=utf-8')
    expect(page.csp).toContain("default-src 'none'")
    expect(page.csp).toContain("frame-ancestors 'none'")
    expect(page.body).toContain('<a href="/runs/ui1">ui1</a>')
  })

  it('shows a run with the figures of forge stats, read from the store', async () => {
    const shown = await json<RunStats>('/runs/ui1')
    const client = await openClickHouse({ kind: 'embedded', path: config.storePath })
    const expected = await getRunStats(directReader(client), 'ui1')
    await client.close()
    expect(shown).toEqual(JSON.parse(JSON.stringify(expected)))
    const page = await get('/runs/ui1')
    expect(page.body).toContain('id="harness-banner"')
    for (const t of expected.tasks) expect(page.body).toContain(`<tr class="task-row" data-task="${t.task_id}" data-k="${t.k}" data-n="${t.n}">`)
  })

  it('pages a task by following next links: every attempt once, in order', async () => {
    const seen: string[] = []
    let path: string | null = '/runs/ui1/tasks/beta'
    let pages = 0
    while (path !== null) {
      const page = await get(path)
      expect(page.status).toBe(200)
      seen.push(...[...page.body.matchAll(/<tr class="attempt-row" data-uid="([^"]+)">/g)].map((m) => m[1]!))
      const next = /<a id="next" href="([^"]+)">/.exec(page.body)
      path = next ? next[1]!.replaceAll('&amp;', '&') : null
      pages++
    }
    expect(seen).toEqual(attempts.filter((a) => a.task_id === 'beta').map((a) => a.attempt_uid))
    expect(pages).toBe(2)
  })

  it('filters a run\'s attempts by failure bucket across tasks in SQL', async () => {
    const data = await json<{ total: number; attempts: AttemptListEntry[] }>('/runs/ui1/attempts?bucket=harness_error')
    const expected = attempts.filter((a) => a.failure_bucket === 'harness_error')
    expect(data.total).toBe(expected.length)
    expect(data.attempts.map((a) => a.attempt_uid)).toEqual(expected.map((a) => a.attempt_uid))
  })

  it('shows an attempt as its trace page, linked back to its task', async () => {
    const uid = attempts[5]!.attempt_uid
    const page = await get(`/attempts/${encodeURIComponent(uid)}`)
    expect(page.status).toBe(200)
    expect(page.body).toContain(`<a id="back" href="/runs/ui1/tasks/alpha">`)
    const view = await json<TraceView>(`/attempts/${encodeURIComponent(uid)}`)
    expect(view).toMatchObject({ attempt_uid: uid, task_id: 'alpha', attempt: 5 })
  })

  it('answers unknown pages 404, bad parameters 400 and anything but GET 405, naming the problem', async () => {
    expect(await get('/runs/ghost')).toMatchObject({ status: 404 })
    expect((await get('/runs/ghost')).body).toContain('no run &quot;ghost&quot; is stored')
    expect(await get('/attempts/x%2Fy')).toMatchObject({ status: 404 })
    expect(await get('/nowhere')).toMatchObject({ status: 404 })
    const bad = await get('/runs/ui1/tasks/beta?after=beta&format=json')
    expect(bad).toMatchObject({ status: 400 })
    expect(JSON.parse(bad.body)).toEqual({ error: '?after must be <task>/<attempt>, got "beta"' })
    expect(await get('/?offset=-1')).toMatchObject({ status: 400 })
    expect(await get('/', { method: 'POST', body: 'x' })).toMatchObject({ status: 405, body: 'forge ui is read-only: GET and HEAD only\n' })
  })

  it('answers no request addressed to another name (DNS rebinding): a page cannot read the store through it', async () => {
    const refused: string[] = []
    const guarded = await startUi(config, { host: '127.0.0.1', port: 0, allowedHosts: ['forge.example.com'], onRefusedHost: (host) => refused.push(host) })
    try {
      const port = new URL(guarded.url).port
      for (const host of [`rebind.attacker.example:${port}`, '127.0.0.1.nip.io', 'forge.example.com.attacker.example', 'localhost.attacker.example']) {
        const answer = await getWithHost(`${guarded.url}?format=json`, host)
        expect(answer.status, host).toBe(403)
        expect(answer.body).not.toContain('ui1')
      }
      expect((await getWithHost(guarded.url, `rebind.attacker.example:${port}`)).body).toBe(
        `forge ui refused a request for host "rebind.attacker.example:${port}": it answers requests addressed to an IP address or localhost, so a web page you visit cannot read your runs by DNS rebinding; to reach it by that name, start it with --allow-host rebind.attacker.example\n`,
      )
      expect(refused[0]).toBe(`rebind.attacker.example:${port}`)
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `ui.localhost:${port}`, `[::1]:${port}`, `forge.example.com:${port}`, 'FORGE.EXAMPLE.COM.']) {
        const answer = await getWithHost(`${guarded.url}?format=json`, host)
        expect(answer.status, host).toBe(200)
        expect((JSON.parse(answer.body) as { total: number }).total).toBe(2)
      }
    } finally {
      await guarded.close()
    }
  })

  it('forge ui --allow-host: a name to answer besides IP addresses; a refused request is named on stderr; a bad name is exit 2', async () => {
    const child = spawn(process.execPath, [join(packageRoot(), 'bin', 'run.js'), 'ui', '--port', '0', '--json', '--allow-host', 'forge.example.com'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let stdout = ''
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString()
          if (stdout.includes('\n')) resolve((JSON.parse(stdout.split('\n')[0]!) as { url: string }).url)
        })
        child.once('exit', () => reject(new Error(`forge ui exited: ${stderr}`)))
      })
      expect((await getWithHost(url, 'forge.example.com')).status).toBe(200)
      expect((await getWithHost(url, 'evil.example')).status).toBe(403)
      await getWithHost(url, 'evil.example')
      child.kill('SIGINT')
      expect(await exited).toBe(0)
      const warned = stderr.replace(/\s*›\s*/g, ' ').replace(/\s+/g, ' ')
      // once per name, however often a page retries
      expect(warned.split('forge ui refused a request for host "evil.example"').length - 1).toBe(1)
      expect(warned).toContain('start it with --allow-host evil.example')
    } finally {
      child.kill('SIGKILL')
    }
    const bad = await forgeAsync(['ui', '--port', '0', '--allow-host', 'http://forge.example.com:8080'], env)
    expect(bad.status).toBe(2)
    expect(bad.stderr).toContain('--allow-host "http://forge.example.com:8080" is not a host name (letters, digits, dots and hyphens; no scheme, port or path)')
  })

  it('leaves the embedded store free between requests, so another process can open it', async () => {
    await get('/runs/ui1')
    const sql = await forgeAsync(['sql', 'SELECT count() AS n FROM attempts FINAL', '--json'], env)
    expect(sql.status, sql.stderr).toBe(0)
    expect(Number((JSON.parse(sql.stdout) as { n: string }[])[0]!.n)).toBe(attempts.length + 3)
  })
})
