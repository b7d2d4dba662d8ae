/** A run's configuration: flags → one validated object → the plan, with the price table as its own field. */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { resolveConfig } from '../../config/index.js'
import { ConfigError } from '../../core/errors.js'
import { PriceTableError } from '../../engine/llm/errors.js'
import { checkPlannedAttempts, planRun } from '../../app/plan-run.js'
import { parseRunConfig, runConfigFromFlags, type RunConfigInput, type RunFlags } from '../../app/run-config.js'

/** `forge run`'s flags with nothing but their defaults given. */
const noFlags: RunFlags = {
  suite: 'smoke',
  adapter: 'mock',
  attempts: 5,
  seed: undefined,
  workers: 1,
  concurrency: 50,
  task: undefined,
  'run-id': undefined,
  'adapter-config': undefined,
  model: undefined,
  'max-in-flight': undefined,
  'heartbeat-timeout': undefined,
  'price-table': undefined,
  'stop-at-width': undefined,
  'round-size': undefined,
  'min-attempts': undefined,
  'judge-model': undefined,
  'judge-metrics': undefined,
  'judge-gate': undefined,
  'golden-divergence': true,
  'judge-max-tokens': undefined,
  'judge-temperature': undefined,
}

function problem(fn: () => unknown): { exitCode: number; message: string } | undefined {
  try {
    fn()
    return undefined
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error
    return { exitCode: error.exitCode, message: error.message }
  }
}

const fromFlags = (flags: Partial<RunFlags>) => parseRunConfig(runConfigFromFlags({ ...noFlags, ...flags }))

describe('runConfigFromFlags + parseRunConfig', () => {
  it('gives the defaults for no flags', () => {
    expect(fromFlags({})).toEqual({ suite: 'smoke', adapter: 'mock', adapter_config: {}, attempts: 5, workers: 1, concurrency: 50, task_ids: [], ingest_timeout_ms: 120_000, redact: true, guard_answers: false })
  })

  it('maps --no-redact and --guard-answers', () => {
    expect(fromFlags({ redact: false, 'guard-answers': true })).toMatchObject({ redact: false, guard_answers: true })
  })

  it('refuses a secret by value in the adapter config, naming the field and never the value (exit code 2)', () => {
    const found = problem(() => fromFlags({ adapter: 'subprocess', 'adapter-config': '{"command":["x"],"env":{"MY_API_KEY":"hunter2-plain","DEBUG":"1","OTHER":"sk-test-SECRET123"}}' }))
    expect(found).toEqual({
      exitCode: 2,
      message:
        '--adapter-config holds a secret by value at env.MY_API_KEY, env.OTHER: pass it by reference, e.g. {"MY_API_KEY": {"from_env": "NAME"}} or {"from_file": "/path"}, which the worker resolves (run plans and activity inputs are kept in Temporal\'s history)',
    })
    expect(fromFlags({ adapter: 'subprocess', 'adapter-config': '{"command":["x"],"env":{"MY_API_KEY":{"from_env":"HOME"}},"api_key_env":"MY_LLM_KEY"}' }).adapter_config).toEqual({
      command: ['x'],
      env: { MY_API_KEY: { from_env: 'HOME' } },
      api_key_env: 'MY_LLM_KEY',
    })
  })

  it('maps every flag onto one snake_case object', () => {
    expect(
      fromFlags({
        suite: 'toy_math',
        attempts: 20,
        seed: '42',
        workers: 2,
        concurrency: 10,
        task: ['precedence'],
        'run-id': 'my-run',
        'adapter-config': '{"skill":0.5}',
        model: 'gpt-4o-mini',
        'max-in-flight': 300,
        'heartbeat-timeout': 5,
        'price-table': 'prices.yaml',
        'stop-at-width': '0.2',
        'round-size': 5,
        'judge-model': 'judge-1',
        'judge-metrics': 'correctness, safety',
        'judge-gate': 'none',
        'golden-divergence': false,
        'judge-max-tokens': 100,
        'judge-temperature': '0.5',
      }),
    ).toEqual({
      suite: 'toy_math',
      adapter: 'mock',
      adapter_config: { skill: 0.5, model: 'gpt-4o-mini' },
      attempts: 20,
      seed: '42',
      workers: 2,
      concurrency: 10,
      task_ids: ['precedence'],
      run_id: 'my-run',
      max_in_flight: 300,
      heartbeat_timeout_ms: 5000,
      ingest_timeout_ms: 120_000,
      price_table: 'prices.yaml',
      sequential: { width: 0.2, round_size: 5, min_attempts: 10 },
      judge: {
        model: 'judge-1',
        metrics: ['correctness', 'safety'],
        gate: 'none',
        golden_divergence: false,
        temperature: 0.5,
        top_p: undefined,
        seed: 0,
        max_tokens: 100,
        response_format: 'json_schema',
        max_prompt_chars: 16_000,
        min_confidence: 0.5,
        timeout_ms: 120_000,
      },
      redact: true,
      guard_answers: false,
    })
  })

  it('reads --judge-metrics all and none', () => {
    expect([fromFlags({ 'judge-model': 'j', 'judge-metrics': 'all' }).judge?.metrics, fromFlags({ 'judge-model': 'j', 'judge-metrics': 'none' }).judge?.metrics]).toEqual([undefined, []])
  })

  it('takes the price table out of the adapter config, where README allows it, so it is never an adapter setting', () => {
    expect(fromFlags({ 'adapter-config': '{"price_table":"p.yaml","skill":1}' })).toMatchObject({ adapter_config: { skill: 1 }, price_table: 'p.yaml' })
    // --price-table wins over the adapter config's
    expect(fromFlags({ 'adapter-config': '{"price_table":"a.yaml"}', 'price-table': 'b.yaml' })).toMatchObject({ adapter_config: {}, price_table: 'b.yaml' })
  })

  it.each<[Partial<RunFlags>, string]>([
    [{ attempts: 0 }, '--attempts must be a whole number from 1 to 1000000, got 0'],
    [{ workers: 300 }, '--workers must be a whole number from 0 to 256, got 300'],
    [{ workers: -1 }, '--workers must be a whole number from 0 to 256, got -1'],
    [{ concurrency: 0 }, '--concurrency must be a whole number from 1 to 1000, got 0'],
    [{ 'max-in-flight': 501 }, '--max-in-flight must be a whole number from 1 to 500, got 501'],
    [{ adapter: 'nope' }, '--adapter names an unknown adapter "nope" (known adapters: mock, '],
    [{ 'run-id': 'a b' }, '--run-id may contain only letters, digits, _ and - (at most 100), got "a b"'],
    [{ 'adapter-config': '{nope' }, '--adapter-config is not valid JSON: '],
    [{ 'adapter-config': '[1]' }, '--adapter-config must be a JSON object, got [1]'],
    [{ 'adapter-config': '"x"', model: 'm' }, '--adapter-config must be a JSON object, got "x"'],
    [{ 'stop-at-width': '2' }, '--stop-at-width too big: expected number to be <1, got 2'],
    [{ 'stop-at-width': 'wide' }, '--stop-at-width invalid input: expected number, received string, got "wide"'],
    [{ 'round-size': 5 }, '--round-size applies only with --stop-at-width'],
    [{ 'min-attempts': 5 }, '--min-attempts applies only with --stop-at-width'],
    [{ 'judge-gate': 'none' }, '--judge-gate applies only with --judge-model'],
    [{ 'judge-model': 'j', 'judge-temperature': 'hot' }, '--judge-temperature invalid input: expected number, received string, got "hot"'],
    [{ 'judge-model': 'j', 'judge-temperature': '3' }, '--judge-temperature too big: expected number to be <=2, got 3'],
    [{ 'judge-model': 'j', 'judge-metrics': 'correctness,vibes' }, '--judge-metrics unknown judge metric(s) "vibes"; known: '],
  ])('rejects %o, naming the flag and the value', (flags, message) => {
    const found = problem(() => fromFlags(flags))
    expect({ exitCode: found?.exitCode, message: found?.message.slice(0, message.length) }).toEqual({ exitCode: 2, message })
  })

  it("takes --workers 0: no worker here, the fleet's workers run it", () => {
    expect(fromFlags({ workers: 0 }).workers).toBe(0)
  })

  it('names every problem at once', () => {
    expect(problem(() => fromFlags({ attempts: 0, workers: 257, 'run-id': '!' }))).toEqual({
      exitCode: 2,
      message:
        'invalid run configuration:\n' +
        '  --attempts must be a whole number from 1 to 1000000, got 0\n' +
        '  --workers must be a whole number from 0 to 256, got 257\n' +
        '  --run-id may contain only letters, digits, _ and - (at most 100), got "!"',
    })
  })

  it('rejects a field it does not know (a typo in a programmatic configuration)', () => {
    expect(problem(() => parseRunConfig({ suite: 'smoke', adapter: 'mock', attempts: 1, workers: 1, concurrency: 1, adapterConfig: {} }))?.message).toBe(
      'run configuration unrecognized key: "adapterConfig"',
    )
  })
})

describe('planRun', () => {
  const config = resolveConfig({ FORGE_HOME: mkdtempSync(join(tmpdir(), 'forge-plan-')), FORGE_JUDGE_TASK_QUEUE: 'judges-here' })
  const base: RunConfigInput = { suite: 'toy_math', adapter: 'mock', attempts: 3, workers: 1, concurrency: 5, seed: 's', run_id: 'r1' }

  it('carries the configuration to the plan, with the price table in its own field', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'forge-prices-'))
    const table = join(dir, 'prices.yaml')
    writeFileSync(table, 'version: mine-1\ndate: "2026-12-01"\nmodels:\n  m: { input_per_mtok: 1, output_per_mtok: 2 }\n')
    const { plan } = await planRun(config, { ...base, adapter_config: { skill: 0.5, price_table: table }, max_in_flight: 50, sequential: { width: 0.3 } })
    const { plan: unpriced } = await planRun(config, { ...base, adapter_config: { skill: 0.5 } })
    expect({ ...plan, suite_path: undefined, suite_hash: undefined }).toEqual({
      run_id: 'r1',
      config_id: unpriced.config_id,
      suite_path: undefined,
      suite: 'toy_math',
      task_ids: ['decimal_division', 'paren_product', 'precedence'],
      attempts: 3,
      attempts_per_activity: 10,
      adapter: 'mock',
      adapter_config: { skill: 0.5 },
      seed: 's',
      shard_size: 1000,
      max_in_flight: 50,
      max_shards_in_flight: 4,
      attempt_timeout_ms: plan.attempt_timeout_ms,
      heartbeat_timeout_ms: 30_000,
      price_table: table,
      price_table_version: 'mine-1',
      price_table_date: '2026-12-01',
      suite_hash: undefined,
      judge_model: '',
      judge_prompt_version: '',
      sequential: { width: 0.3, round_size: 10, min_attempts: 10 },
      redact: true,
      guard_answers: false,
    })
    expect(unpriced.price_table).toBeUndefined()
    expect(unpriced.price_table_version).toBe('2026-11-default.2')
  })

  it("gives the judge the configured task queue unless the run names one", async () => {
    const { plan } = await planRun(config, { ...base, judge: { model: 'j' } })
    const { plan: named } = await planRun(config, { ...base, judge: { model: 'j', task_queue: 'mine' } })
    expect([plan.judge?.task_queue, named.judge?.task_queue]).toEqual(['judges-here', 'mine'])
  })

  it('stamps --no-redact and --guard-answers on the plan; a secret reference this machine cannot resolve is named before anything starts', async () => {
    const { plan } = await planRun(config, { ...base, redact: false, guard_answers: true })
    expect([plan.redact, plan.guard_answers]).toEqual([false, true])
    await expect(planRun(config, { ...base, adapter: 'subprocess', adapter_config: { command: ['x'], env: { K: { from_env: 'FORGE_TEST_NO_SUCH_VAR' } } } })).rejects.toThrow(
      new ConfigError('--adapter-config names secrets this machine does not have: env.K: {"from_env": "FORGE_TEST_NO_SUCH_VAR"}: the worker has no FORGE_TEST_NO_SUCH_VAR in its environment'),
    )
  })

  it('names a price table that cannot be read (exit code 2)', async () => {
    const missing = join(tmpdir(), 'no-such-prices.yaml')
    const error = await planRun(config, { ...base, price_table: missing }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(PriceTableError)
    expect({ exitCode: (error as PriceTableError).exitCode, message: (error as Error).message.startsWith(`price table ${missing}: cannot be read`) }).toEqual({ exitCode: 2, message: true })
  })

  it('names tasks the suite does not have', async () => {
    const { suite } = await planRun(config, base)
    await expect(planRun(config, { ...base, task_ids: ['precedence', 'nope'] })).rejects.toThrow(
      new ConfigError(`--task names tasks the suite at ${suite.path} does not have: nope (it has: decimal_division, paren_product, precedence)`),
    )
  })

  it('refuses a plan of more attempts than the store counts (UInt32), naming --attempts, the task count and the suite', () => {
    // 4,295 tasks × 1,000,000 attempts (the most --attempts takes) is 4,295,000,000: over 4,294,967,295
    expect(() => checkPlannedAttempts(4295, 1_000_000, '/suites/wide')).toThrow(
      new ConfigError('--attempts 1,000,000 × 4,295 tasks of /suites/wide plans 4,295,000,000 attempts; a run plans at most 4,294,967,295 (the store counts them in UInt32): lower --attempts or choose tasks with --task'),
    )
    expect(() => checkPlannedAttempts(4294, 1_000_000, '/suites/wide')).not.toThrow()
    expect(() => checkPlannedAttempts(1, 0xffff_ffff, '/suites/wide')).not.toThrow()
  })
})
