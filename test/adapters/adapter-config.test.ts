/** The adapter registry: every adapter's strict, described config schema, validateAdapterConfig and what forge adapters list shows. */
import { describe, expect, it } from 'vitest'
import { adapterNames, adapterRegistrations, adapters, describeAdapters, validateAdapterConfig } from '../../engine/adapters/index.js'
import { parseMockConfig } from '../../engine/adapters/mock.js'
import { parseModelConfig } from '../../engine/adapters/model-config.js'
import { traceFor } from '../../engine/adapters/replay.js'

const ALL = ['mock', 'single_shot', 'react', 'langgraph', 'pydantic-ai', 'subprocess', 'module', 'http', 'replay', 'oracle']

/** A config each adapter accepts, with only what it requires. */
const MINIMAL: Record<string, Record<string, unknown>> = {
  mock: {},
  single_shot: { model: 'm' },
  react: { model: 'm' },
  langgraph: { model: 'm' },
  'pydantic-ai': { model: 'm' },
  subprocess: { command: ['node', 'agent.mjs'] },
  module: { path: 'agent.mjs' },
  http: { base_url: 'http://127.0.0.1:8080' },
  replay: { trace: { output: 'x', duration_ms: 1 } },
  oracle: {},
}

describe('the adapter registry', () => {
  it('registers every adapter once, each with a one-line description', () => {
    expect(adapterNames()).toEqual(ALL)
    expect([...adapters.keys()]).toEqual(ALL)
    for (const { adapter, description } of adapterRegistrations) {
      expect({ name: adapter.name, oneLine: description.length > 20 && !description.includes('\n') }).toEqual({ name: adapter.name, oneLine: true })
    }
  })

  it('shows each adapter as name, description and a strict config JSON Schema whose every field is described', () => {
    const infos = describeAdapters()
    expect(infos.map((i) => i.name)).toEqual(ALL)
    for (const info of infos) {
      const schema = info.config_schema
      expect({ name: info.name, type: schema['type'], additionalProperties: schema['additionalProperties'], $schema: schema['$schema'] }).toEqual({
        name: info.name,
        type: 'object',
        additionalProperties: false,
        $schema: 'https://json-schema.org/draft/2020-12/schema',
      })
      const properties = schema['properties'] as Record<string, Record<string, unknown>>
      const undescribed = Object.entries(properties).filter(([, p]) => typeof p['description'] !== 'string' || p['description'] === '')
      expect({ name: info.name, undescribed: undescribed.map(([key]) => key) }).toEqual({ name: info.name, undescribed: [] })
      // every adapter takes what the harness itself reads from any adapter config
      expect({ name: info.name, harness: ['price_table', 'model', 'decoding'].filter((k) => k in properties) }).toEqual({ name: info.name, harness: ['price_table', 'model', 'decoding'] })
    }
  })

  it('spells out the fields each adapter reads, and which are required', () => {
    const byName = Object.fromEntries(describeAdapters().map((i) => [i.name, i.config_schema]))
    const keys = (name: string) => Object.keys(byName[name]!['properties'] as object).sort()
    const required = (name: string) => (byName[name]!['required'] as string[] | undefined) ?? []
    expect(keys('mock')).toEqual(['decoding', 'delay_ms', 'failure_modes', 'hold_file', 'hold_from', 'model', 'price_table', 'retries', 'skill', 'step_delay_ms', 'task_skill'])
    expect(keys('react')).toEqual(
      ['api_key_env', 'base_url', 'decoding', 'frequency_penalty', 'max_steps', 'max_tokens', 'model', 'presence_penalty', 'price_table', 'seed', 'stop', 'system_prompt', 'temperature', 'top_p'],
    )
    expect(keys('pydantic-ai')).toEqual([...keys('react'), 'python', 'sandbox'].sort())
    expect(keys('subprocess')).toEqual(['api_key_env', 'base_url', 'command', 'cwd', 'decoding', 'env', 'kill_grace_ms', 'llm', 'model', 'price_table', 'protocol', 'sandbox'])
    expect(keys('module')).toEqual(['api_key_env', 'base_url', 'decoding', 'export', 'isolation', 'kill_grace_ms', 'llm', 'model', 'path', 'price_table', 'sandbox'])
    expect(keys('http')).toEqual(['base_url', 'decoding', 'headers', 'invoke_path', 'model', 'price_table', 'reset_path', 'timeout_ms'])
    expect(keys('replay')).toEqual(['decoding', 'model', 'price_table', 'trace', 'traces'])
    expect(keys('oracle')).toEqual(['decoding', 'model', 'price_table'])
    expect(Object.fromEntries(ALL.map((name) => [name, required(name)]))).toEqual({
      mock: [],
      single_shot: ['model'],
      react: ['model'],
      langgraph: ['model'],
      'pydantic-ai': ['model'],
      subprocess: ['command'],
      module: ['path'],
      http: ['base_url'],
      replay: [],
      oracle: [],
    })
  })
})

describe('validateAdapterConfig', () => {
  it('accepts the minimal config of every adapter, and the harness keys on any of them', () => {
    for (const name of ALL) {
      expect({ name, check: validateAdapterConfig(name, MINIMAL[name]!) }).toEqual({ name, check: { ok: true } })
      const withHarnessKeys = { ...MINIMAL[name], price_table: '/tmp/prices.yaml', model: 'gpt-4o-mini', decoding: { temperature: 0 } }
      expect({ name, check: validateAdapterConfig(name, withHarnessKeys) }).toEqual({ name, check: { ok: true } })
    }
  })

  it('refuses an unknown key on every adapter, naming it and the known ones', () => {
    for (const name of ALL) {
      const check = validateAdapterConfig(name, { ...MINIMAL[name], skil: 0.5 })
      expect(check.ok).toBe(false)
      if (check.ok) continue
      expect(check.problems).toEqual([expect.stringMatching(/^skil: unknown field \(known: [a-z_, ]+\)$/)])
      expect(check.message).toBe(`invalid --adapter-config for adapter "${name}": ${check.problems[0]}`)
    }
  })

  it('names the field of a wrong value, a missing required field and every problem at once', () => {
    expect(validateAdapterConfig('mock', { skill: 2, delay_ms: -1, failure_modes: { wrong_answer: 1, teleport: 1 } })).toEqual({
      ok: false,
      message: 'invalid --adapter-config for adapter "mock": skill: Too big: expected number to be <=1; delay_ms: Too small: expected number to be >=0; failure_modes.teleport: unknown field',
      problems: ['skill: Too big: expected number to be <=1', 'delay_ms: Too small: expected number to be >=0', 'failure_modes.teleport: unknown field'],
    })
    expect(validateAdapterConfig('react', { temperature: 0 })).toEqual({
      ok: false,
      message: 'invalid --adapter-config for adapter "react": model: required (forge run --model NAME, or "model" in --adapter-config)',
      problems: ['model: required (forge run --model NAME, or "model" in --adapter-config)'],
    })
    expect(validateAdapterConfig('subprocess', { command: 'node agent.mjs', protocol: 'grpc' })).toEqual({
      ok: false,
      message: 'invalid --adapter-config for adapter "subprocess": command: Invalid input: expected array, received string; protocol: Invalid option: expected one of "stdio"|"http"',
      problems: ['command: Invalid input: expected array, received string', 'protocol: Invalid option: expected one of "stdio"|"http"'],
    })
    expect(validateAdapterConfig('module', {})).toEqual({
      ok: false,
      message: 'invalid --adapter-config for adapter "module": path: required field missing (expected string)',
      problems: ['path: required field missing (expected string)'],
    })
    expect(validateAdapterConfig('http', { base_url: 'ftp://agents.internal' })).toMatchObject({ ok: false, problems: ['base_url: Invalid URL'] })
    expect(validateAdapterConfig('react', { model: 'm', base_url: 'localhost:8080' })).toMatchObject({ ok: false, problems: ['base_url: must be an http(s) URL'] })
    expect(validateAdapterConfig('pydantic-ai', { model: 'm', python: '' })).toMatchObject({ ok: false, problems: ['python: Too small: expected string to have >=1 characters'] })
    expect(validateAdapterConfig('replay', {})).toMatchObject({ ok: false, problems: ['trace: give trace (one for every task) or traces (task id → trace)'] })
  })

  it('says which adapters exist when the name is unknown', () => {
    expect(validateAdapterConfig('nosuch', {})).toEqual({
      ok: false,
      message: `unknown adapter "nosuch" (known adapters: ${ALL.join(', ')})`,
      problems: [`unknown adapter "nosuch" (known adapters: ${ALL.join(', ')})`],
    })
  })
})

describe('the adapters read their config through the same strict schema', () => {
  it('refuses a misspelt key when the attempt runs, not only at run start', () => {
    expect(() => parseMockConfig({ skil: 1 })).toThrow('invalid mock adapter config: skil: unknown field (known: decoding, delay_ms, failure_modes, hold_file, hold_from, model, price_table, retries, skill, step_delay_ms, task_skill)')
    expect(() => parseModelConfig('react', { model: 'm', temprature: 0 })).toThrow(/^invalid react adapter config: temprature: unknown field \(known: /)
    expect(() => traceFor({ trace: { output: 'x', duration_ms: 1 }, trcaes: {} }, 't')).toThrow(/^invalid replay adapter config: trcaes: unknown field/)
  })

  it('replays a trace given as an object or as JSON text, per task or for all', () => {
    const trace = { output: 'x', duration_ms: 1 }
    expect(traceFor({ trace }, 't').output).toBe('x')
    expect(traceFor({ trace: JSON.stringify(trace) }, 't').output).toBe('x')
    expect(traceFor({ traces: { t: trace } }, 't').output).toBe('x')
    expect(() => traceFor({ traces: { t: trace } }, 'u')).toThrow('replay adapter: no trace for task "u" (give config.trace or config.traces["u"])')
    expect(() => traceFor({ trace: '{oops' }, 't')).toThrow(/^replay adapter: the trace for task "t" is not JSON: /)
  })
})
