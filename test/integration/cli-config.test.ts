/** `forge config`, and a bad FORGE_* value as every command reports it: nothing is started. */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SettingReport } from '../../config/index.js'
import { forge } from '../helpers/stack.js'

let home: string
let env: NodeJS.ProcessEnv

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), 'forge-config-'))
  env = { ...process.env, FORGE_HOME: home }
  for (const key of Object.keys(env)) if (key.startsWith('FORGE_') && key !== 'FORGE_HOME') delete env[key]
})
afterAll(() => {
  rmSync(home, { recursive: true, force: true })
})

describe('forge config', () => {
  it('prints every setting, its value and where it came from, never a secret', () => {
    const r = forge(['config', '--json'], { ...env, FORGE_WORKER_CONCURRENCY: '12', FORGE_JUDGE_API_KEY: 'sk-very-secret' })
    expect(r.status).toBe(0)
    const rows = JSON.parse(r.stdout) as SettingReport[]
    const pick = (variable: string) => {
      const row = rows.find((s) => s.variable === variable)
      return row && { value: row.value, source: row.source }
    }
    expect({ home: pick('FORGE_HOME'), concurrency: pick('FORGE_WORKER_CONCURRENCY'), key: pick('FORGE_JUDGE_API_KEY'), queue: pick('FORGE_TASK_QUEUE') }).toEqual({
      home: { value: home, source: 'env' },
      concurrency: { value: 12, source: 'env' },
      key: { value: '(hidden)', source: 'env' },
      queue: { value: 'forge-attempts', source: 'default' },
    })
    expect(r.stdout).not.toContain('sk-very-secret')

    const text = forge(['config'], env)
    expect(text.stdout).toMatch(/^FORGE_TASK_QUEUE\s+forge-attempts\s+default\s+Temporal task queue of runs and attempt activities$/m)
  })

  it('lists a bad value and exits with code 2', () => {
    const r = forge(['config'], { ...env, FORGE_JUDGE_RATE: 'fast' })
    expect({ status: r.status, row: /^FORGE_JUDGE_RATE\s+fast \(invalid\)\s+env/m.test(r.stdout), stderr: r.stderr.trim() }).toEqual({
      status: 2,
      row: true,
      stderr: 'Error: FORGE_JUDGE_RATE must be a number of calls per second (0: unlimited), got "fast"',
    })
  })
})

describe('a bad FORGE_* value', () => {
  it('stops any command with exit code 2 and a message naming the variable and value, before anything starts', () => {
    const r = forge(['run', '--suite', 'smoke', '--dry-run'], { ...env, FORGE_NATS_URL: 'localhost' })
    expect({ status: r.status, stderr: r.stderr.trim() }).toEqual({ status: 2, stderr: 'Error: FORGE_NATS_URL must look like nats://host:port, got "localhost"' })
    const stats = forge(['stats'], { ...env, FORGE_CLICKHOUSE_URL: 'clickhouse:8123' })
    expect({ status: stats.status, stderr: stats.stderr.trim() }).toEqual({ status: 2, stderr: 'Error: FORGE_CLICKHOUSE_URL must be an http(s) URL, got "clickhouse:8123"' })
    expect(readdirSync(home)).toEqual([])
  })
})
