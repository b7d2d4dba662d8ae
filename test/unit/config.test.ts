/** config/: every FORGE_* setting read in one place, validated, with its default. */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { readSetting, reportSettings, resolveConfig, SETTINGS, settingsEnv, type ForgeConfig } from '../../config/index.js'
import { ConfigError } from '../../core/errors.js'
import { earlyHome, earlyWarmCli } from '../../config/early.js'
import { loadSettings } from '../../config/settings.js'

const root = fileURLToPath(new URL('../..', import.meta.url))

const defaults: ForgeConfig = {
  home: '/work/.forge',
  temporal: { address: undefined, namespace: 'default', taskQueue: 'forge-attempts' },
  natsUrl: undefined,
  clickhouseUrl: undefined,
  storePath: '/work/.forge/store',
  binaries: { temporal: undefined, natsServer: undefined },
  worker: { id: undefined, concurrency: 100, attemptLanes: 1, exitWithParent: false, role: 'all', shutdownGraceMs: 5000, runId: undefined },
  healthPort: undefined,
  otlpUrl: undefined,
  natsStreamReplicas: 1,
  resultsKeepSeconds: 600,
  judge: { worker: true, rate: 0, concurrency: 4, taskQueue: 'forge-judge', model: undefined, baseUrl: undefined, apiKey: undefined },
  logLevel: 'info',
  agentVersion: undefined,
  python: 'python3',
  bench: { attempts: 1000, workers: 1, only: undefined },
}

function configError(fn: () => unknown): { name: string; exitCode: number; message: string } | undefined {
  try {
    fn()
    return undefined
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error
    return { name: error.name, exitCode: error.exitCode, message: error.message }
  }
}

describe('resolveConfig', () => {
  it('gives every default with no variable set', () => {
    expect(resolveConfig({}, '/work')).toEqual(defaults)
  })

  it('reads every variable', () => {
    const env = {
      FORGE_HOME: 'state',
      FORGE_STORE_PATH: '/data/chdb',
      FORGE_TEMPORAL_ADDRESS: 'temporal:7233',
      FORGE_TEMPORAL_NAMESPACE: 'evals',
      FORGE_TASK_QUEUE: 'q',
      FORGE_NATS_URL: 'nats://nats:4222',
      FORGE_CLICKHOUSE_URL: 'http://clickhouse:8123',
      FORGE_TEMPORAL_BIN: '/opt/temporal',
      FORGE_NATS_BIN: '/opt/nats-server',
      FORGE_WORKER_ID: 'w-1',
      FORGE_WORKER_CONCURRENCY: '200',
      FORGE_WORKER_ATTEMPT_LANES: '10',
      FORGE_EXIT_WITH_PARENT: '1',
      FORGE_JUDGE_WORKER: '0',
      FORGE_JUDGE_RATE: '2.5',
      FORGE_JUDGE_CONCURRENCY: '8',
      FORGE_JUDGE_TASK_QUEUE: 'judges',
      FORGE_JUDGE_MODEL: 'gpt-4o-mini',
      FORGE_JUDGE_BASE_URL: 'http://judge:8080/v1',
      FORGE_JUDGE_API_KEY: 'sk-judge',
      FORGE_LOG_LEVEL: 'debug',
      FORGE_AGENT_VERSION: '1.2.3',
      FORGE_PYTHON: '/usr/bin/python3.12',
      FORGE_BENCH_ATTEMPTS: '5000',
      FORGE_BENCH_WORKERS: '2',
      FORGE_BENCH_ONLY: 'ingest',
      FORGE_OTLP_URL: 'http://collector:4318',
      FORGE_RESULTS_KEEP: '0',
    }
    expect(resolveConfig(env, '/work')).toEqual({
      home: '/work/state',
      temporal: { address: 'temporal:7233', namespace: 'evals', taskQueue: 'q' },
      natsUrl: 'nats://nats:4222',
      clickhouseUrl: 'http://clickhouse:8123',
      storePath: '/data/chdb',
      binaries: { temporal: '/opt/temporal', natsServer: '/opt/nats-server' },
      worker: { id: 'w-1', concurrency: 200, attemptLanes: 10, exitWithParent: true, role: 'all', shutdownGraceMs: 5000, runId: undefined },
      healthPort: undefined,
      otlpUrl: 'http://collector:4318',
      natsStreamReplicas: 1,
      resultsKeepSeconds: 0,
      judge: { worker: false, rate: 2.5, concurrency: 8, taskQueue: 'judges', model: 'gpt-4o-mini', baseUrl: 'http://judge:8080/v1', apiKey: 'sk-judge' },
      logLevel: 'debug',
      agentVersion: '1.2.3',
      python: '/usr/bin/python3.12',
      bench: { attempts: 5000, workers: 2, only: 'ingest' },
    } satisfies ForgeConfig)
  })

  it('takes an empty or blank variable as unset, and trims values', () => {
    expect(resolveConfig({ FORGE_HOME: '', FORGE_TEMPORAL_ADDRESS: '  ', FORGE_NATS_URL: ' nats://n:4222 ', FORGE_WORKER_CONCURRENCY: '' }, '/work')).toEqual({
      ...defaults,
      natsUrl: 'nats://n:4222',
    })
  })

  it('puts the store under FORGE_HOME unless FORGE_STORE_PATH says otherwise (relative to the working directory)', () => {
    expect(resolveConfig({ FORGE_HOME: '/tmp/f' }, '/work').storePath).toBe('/tmp/f/store')
    expect(resolveConfig({ FORGE_HOME: '/tmp/f', FORGE_STORE_PATH: 'chdb' }, '/work').storePath).toBe('/work/chdb')
  })

  it.each([
    ['FORGE_CLICKHOUSE_URL', 'clickhouse:8123', 'FORGE_CLICKHOUSE_URL must be an http(s) URL, got "clickhouse:8123"'],
    ['FORGE_NATS_URL', 'http://nats', 'FORGE_NATS_URL must look like nats://host:port, got "http://nats"'],
    ['FORGE_TEMPORAL_ADDRESS', 'temporal', 'FORGE_TEMPORAL_ADDRESS must be host:port, got "temporal"'],
    ['FORGE_WORKER_CONCURRENCY', 'lots', 'FORGE_WORKER_CONCURRENCY must be a whole number from 1 to 10000, got "lots"'],
    ['FORGE_WORKER_CONCURRENCY', '0', 'FORGE_WORKER_CONCURRENCY must be a whole number from 1 to 10000, got "0"'],
    ['FORGE_JUDGE_CONCURRENCY', '2.5', 'FORGE_JUDGE_CONCURRENCY must be a whole number from 1 to 1000, got "2.5"'],
    ['FORGE_RESULTS_KEEP', '1h', 'FORGE_RESULTS_KEEP must be a whole number from 0 to 604800, got "1h"'],
    ['FORGE_JUDGE_RATE', 'fast', 'FORGE_JUDGE_RATE must be a number of calls per second (0: unlimited), got "fast"'],
    ['FORGE_JUDGE_RATE', '-1', 'FORGE_JUDGE_RATE must be a number of calls per second (0: unlimited), got "-1"'],
    ['FORGE_JUDGE_BASE_URL', 'judge:1', 'FORGE_JUDGE_BASE_URL must be an http(s) URL, got "judge:1"'],
    ['FORGE_OTLP_URL', 'collector:4318', 'FORGE_OTLP_URL must be an http(s) URL, got "collector:4318"'],
    ['FORGE_EXIT_WITH_PARENT', 'maybe', 'FORGE_EXIT_WITH_PARENT must be 1 or 0 (or true/false, yes/no, on/off), got "maybe"'],
    ['FORGE_JUDGE_WORKER', 'off please', 'FORGE_JUDGE_WORKER must be 1 or 0 (or true/false, yes/no, on/off), got "off please"'],
    ['FORGE_LOG_LEVEL', 'verbose', 'FORGE_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"'],
    ['FORGE_BENCH_ONLY', 'all', 'FORGE_BENCH_ONLY must be one of e2e, ingest, stats, report, ui, model, faults, sandbox, latency, scale, workers, hostile, got "all"'],
  ])('rejects %s=%s with an error naming the variable and the value', (variable, value, message) => {
    expect(configError(() => resolveConfig({ [variable]: value }, '/work'))).toEqual({ name: 'ConfigError', exitCode: 2, message })
  })

  it('names every bad variable at once', () => {
    expect(configError(() => resolveConfig({ FORGE_NATS_URL: 'x y', FORGE_JUDGE_RATE: 'fast' }, '/work'))).toEqual({
      name: 'ConfigError',
      exitCode: 2,
      message:
        '2 invalid settings:\n' +
        '  FORGE_NATS_URL must look like nats://host:port, got "x y"\n' +
        '  FORGE_JUDGE_RATE must be a number of calls per second (0: unlimited), got "fast"',
    })
  })
})

describe('readSetting', () => {
  it('reads one setting, with its default', () => {
    expect([readSetting('judgeRate', { FORGE_JUDGE_RATE: '3' }), readSetting('judgeRate', {}), readSetting('judgeTaskQueue', {}), readSetting('logLevel', { FORGE_LOG_LEVEL: 'warn' })]).toEqual([
      3,
      0,
      'forge-judge',
      'warn',
    ])
  })

  it('checks only the setting it reads', () => {
    expect(readSetting('python', { FORGE_NATS_URL: 'not a url' })).toBe('python3')
    expect(configError(() => readSetting('natsUrl', { FORGE_NATS_URL: 'not a url' }))?.message).toBe('FORGE_NATS_URL must look like nats://host:port, got "not a url"')
  })
})

describe('reportSettings (forge config)', () => {
  it('lists every setting with its value in effect and where it came from, hiding secrets', () => {
    const rows = reportSettings({ FORGE_HOME: 'h', FORGE_JUDGE_API_KEY: 'sk-secret', FORGE_WORKER_CONCURRENCY: '7' }, '/work')
    expect(rows.map((r) => r.variable)).toEqual(Object.values(SETTINGS).map((s) => s.variable))
    const row = (variable: string) => {
      const found = rows.find((r) => r.variable === variable)
      return found && { value: found.value, source: found.source, default: found.default }
    }
    expect({
      home: row('FORGE_HOME'),
      store: row('FORGE_STORE_PATH'),
      key: row('FORGE_JUDGE_API_KEY'),
      concurrency: row('FORGE_WORKER_CONCURRENCY'),
      queue: row('FORGE_TASK_QUEUE'),
      nats: row('FORGE_NATS_URL'),
    }).toEqual({
      home: { value: '/work/h', source: 'env', default: '.forge' },
      store: { value: '/work/h/store', source: 'default', default: '$FORGE_HOME/store' },
      key: { value: '(hidden)', source: 'env', default: '(unset: OPENAI_API_KEY)' },
      concurrency: { value: 7, source: 'env', default: '100' },
      queue: { value: 'forge-attempts', source: 'default', default: 'forge-attempts' },
      nats: { value: null, source: 'default', default: '(unset: local nats-server)' },
    })
    expect(rows.every((r) => r.description.length > 0 && !r.description.includes('\n'))).toBe(true)
    expect(JSON.stringify(rows)).not.toContain('sk-secret')
  })

  it('reports a bad value as a problem instead of throwing', () => {
    const rows = reportSettings({ FORGE_TEMPORAL_ADDRESS: 'nope' }, '/work')
    expect(rows.find((r) => r.variable === 'FORGE_TEMPORAL_ADDRESS')).toMatchObject({ value: 'nope', source: 'env', problem: 'FORGE_TEMPORAL_ADDRESS must be host:port, got "nope"' })
    expect(rows.filter((r) => r.problem !== undefined)).toHaveLength(1)
  })
})

describe('settingsEnv', () => {
  it('writes settings as the variables a child process reads back', () => {
    const env = settingsEnv({ temporalAddress: '127.0.0.1:7233', natsUrl: 'nats://127.0.0.1:4222', workerConcurrency: 20, workerAttemptLanes: 5, exitWithParent: true, clickhouseUrl: undefined })
    expect(env).toEqual({ FORGE_TEMPORAL_ADDRESS: '127.0.0.1:7233', FORGE_NATS_URL: 'nats://127.0.0.1:4222', FORGE_WORKER_CONCURRENCY: '20', FORGE_WORKER_ATTEMPT_LANES: '5', FORGE_EXIT_WITH_PARENT: '1' })
    const back = resolveConfig(env, '/work')
    expect({ address: back.temporal.address, nats: back.natsUrl, worker: back.worker }).toEqual({
      address: '127.0.0.1:7233',
      nats: 'nats://127.0.0.1:4222',
      worker: { id: undefined, concurrency: 20, attemptLanes: 5, exitWithParent: true, role: 'all', shutdownGraceMs: 5000, runId: undefined },
    })
  })
})

describe('the settings table', () => {
  it('has one FORGE_ variable per setting, each with a description and a default', () => {
    const variables = Object.values(SETTINGS).map((s) => s.variable)
    expect(new Set(variables).size).toBe(variables.length)
    for (const s of Object.values(SETTINGS)) expect({ variable: s.variable, ok: /^FORGE_[A-Z_]+$/.test(s.variable) && s.description !== '' && s.defaultText !== '' }).toEqual({ variable: s.variable, ok: true })
  })

  it('reads FORGE_HOME and FORGE_WARM_CLI before the settings load (config/early.ts) as the settings read them', () => {
    for (const value of [undefined, '', '  ', '1', '0', 'true', 'false', 'yes', 'no', 'on', 'off', 'ON', '2', 'maybe', ' 0 ']) {
      const variables = value === undefined ? {} : { FORGE_WARM_CLI: value }
      let setting: boolean | undefined
      try {
        setting = loadSettings(variables).warmCli
      } catch {
        setting = undefined
      }
      expect({ value, early: earlyWarmCli(variables) }).toEqual({ value, early: setting })
    }
    for (const home of [undefined, '', 'state', '/abs/home', ' rel/h ']) {
      const variables = home === undefined ? {} : { FORGE_HOME: home }
      expect(earlyHome(variables, '/work/dir')).toBe(resolveConfig(variables, '/work/dir').home)
    }
  })

  it('is the only reader of FORGE_* variables in the sources', () => {
    const readers: string[] = []
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir)) {
        const path = join(dir, entry)
        if (['node_modules', 'dist', '.git', 'test', 'config', '.models', 'suites'].includes(entry)) continue
        if (statSync(path).isDirectory()) walk(path)
        else if (path.endsWith('.ts') && /(env|process\.env)\[['"]FORGE_|process\.env\.FORGE_/.test(readFileSync(path, 'utf8'))) readers.push(path.slice(root.length))
      }
    }
    walk(root)
    expect(readers).toEqual([])
  })
})
