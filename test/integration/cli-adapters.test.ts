/**
 * `forge adapters list`, the adapter names in `forge run --help`, a bad `--adapter-config` refused
 * before a run starts, and `forge replay --help`, as a user runs them (built CLI; no stack needed).
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { AdapterInfo } from '../../engine/adapters/index.js'
import { forge } from '../helpers/stack.js'

const ALL = ['mock', 'single_shot', 'react', 'langgraph', 'pydantic-ai', 'subprocess', 'module', 'http', 'replay', 'oracle']

let home: string
let env: NodeJS.ProcessEnv

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), 'forge-adapters-'))
  env = { ...process.env, FORGE_HOME: home, FORGE_LOG_LEVEL: 'warn' }
  for (const key of ['FORGE_TEMPORAL_ADDRESS', 'FORGE_NATS_URL', 'FORGE_CLICKHOUSE_URL']) delete env[key]
})
afterAll(() => {
  rmSync(home, { recursive: true, force: true })
})

describe('forge adapters list', () => {
  it('prints every adapter with its description and config fields', () => {
    const r = forge(['adapters', 'list'], env)
    expect(r.status).toBe(0)
    const headings = r.stdout.split('\n').filter((line) => /^\S/.test(line))
    expect(headings.map((line) => line.split(' — ')[0])).toEqual(ALL)
    expect(r.stdout).toMatch(/^ {2}skill +number, default 0\.8: Probability of a clean attempt \(0\.\.1\)\.$/m)
    expect(r.stdout).toMatch(/^ {2}command +string\[\], required: argv of the agent/m)
    expect(r.stdout).toMatch(/^ {2}protocol +"stdio"\|"http", default "stdio": /m)
  })

  it('--json: name, description and config JSON Schema of each adapter; --adapter picks one', () => {
    const all = JSON.parse(forge(['adapters', 'list', '--json'], env).stdout) as AdapterInfo[]
    expect(all.map((a) => a.name)).toEqual(ALL)
    const r = forge(['adapters', 'list', '--adapter', 'react', '--json'], env)
    expect(r.status).toBe(0)
    const [react] = JSON.parse(r.stdout) as AdapterInfo[]
    expect(react).toEqual(all.find((a) => a.name === 'react'))
    expect(react!.config_schema).toMatchObject({
      type: 'object',
      additionalProperties: false,
      required: ['model'],
      properties: { max_steps: { type: 'integer', default: 12, description: 'Model calls per attempt (each tool round is one).' } },
    })
  })

  it('names the known adapters when --adapter names none of them (exit 2)', () => {
    const r = forge(['adapters', 'list', '--adapter', 'nosuch'], env)
    expect(r.status).toBe(2)
    expect(r.stderr).toContain(`unknown adapter "nosuch" (known adapters: ${ALL.join(', ')})`)
  })
})

describe('forge run and the adapters', () => {
  it('--help lists the adapter names under --adapter', () => {
    const r = forge(['run', '--help'], env)
    expect(r.status).toBe(0)
    const flags = r.stdout.slice(r.stdout.indexOf('FLAGS')).replace(/\s+/g, ' ')
    expect(flags).toContain(`-a, --adapter=<value> [default: mock] Agent adapter: ${ALL.join(', ')} (forge adapters list shows each one's --adapter-config).`)
  })

  it('refuses a bad --adapter-config before anything starts, naming the field (exit 2)', () => {
    const cases: [string[], string][] = [
      [['--adapter-config', '{"skil":0.5}'], 'invalid --adapter-config for adapter "mock": skil: unknown field (known: decoding, delay_ms, failure_modes, hold_file, hold_from, model, price_table, retries, skill, step_delay_ms, task_skill)'],
      [['--adapter', 'react'], 'invalid --adapter-config for adapter "react": model: required (forge run --model NAME, or "model" in --adapter-config)'],
      [['--adapter', 'subprocess', '--adapter-config', '{"command":"node agent.mjs"}'], 'invalid --adapter-config for adapter "subprocess": command: Invalid input: expected array, received string'],
    ]
    for (const [flags, message] of cases) {
      // without --dry-run: the check comes before the stack would be brought up
      const r = forge(['run', '--suite', 'smoke', '--attempts', '1', ...flags], env)
      expect({ flags, status: r.status, error: r.stderr.trim() }).toEqual({ flags, status: 2, error: `Error: ${message}` })
    }
    expect(existsSync(join(home, 'stack.json')) || readdirSync(home).length > 0).toBe(false)
  })

  it('runs a dry run with a valid config of a model adapter', () => {
    const r = forge(['run', '--suite', 'smoke', '--adapter', 'react', '--model', 'gpt-4o-mini', '--adapter-config', '{"temperature":0,"max_steps":4}', '--attempts', '1', '--dry-run', '--json'], env)
    expect(r.status).toBe(0)
    expect(JSON.parse(r.stdout)).toMatchObject({ dry_run: true, adapter: 'react', adapter_config: { temperature: 0, max_steps: 4, model: 'gpt-4o-mini' } })
  })
})

describe('forge replay', () => {
  it('--help: the regrade command under the seed\'s name, with its own examples', () => {
    const r = forge(['replay', '--help'], env)
    expect(r.status).toBe(0)
    expect(r.stdout).toMatch(/USAGE\s+\$ forge replay \[--json\] \[-r <value>\] \[--dry-run\]/)
    expect(r.stdout).toContain('$ forge replay --run-id <run-id>')
    expect(r.stdout).toContain('forge regrade under another name')
  })
})
