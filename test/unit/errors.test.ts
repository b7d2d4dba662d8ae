/** The error taxonomy: every area error is a ForgeError whose kind decides the documented exit code. */
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ConfigError, EXIT_CODES, exitCodeOf, ForgeError } from '../../core/errors.js'
import { GraderConfigError } from '../../core/graders/errors.js'
import { SuiteLoadError, UnknownAdapterError } from '../../engine/errors.js'
import { FixtureSeedError } from '../../engine/env/errors.js'
import { JudgeConfigError } from '../../engine/judge/errors.js'
import { LlmConfigError, PriceTableError } from '../../engine/llm/errors.js'
import { MissingBinaryError, StackStartError, ConfigError as StackConfigError } from '../../stack/errors.js'
import { BusError, refusedAsData, StoreError, StoreLockedError } from '../../store/errors.js'
import { RunDegradedError, RunFailedError, RunIncompleteError } from '../../app/run.js'
import { EXIT, ForgeCommand } from '../../cli/base.js'

const root = fileURLToPath(new URL('../..', import.meta.url))

const areaErrors: [Error, { name: string; kind: string; exitCode: number }][] = [
  [new RunFailedError('run r1 failed: boom'), { name: 'RunFailedError', kind: 'run_failed', exitCode: 1 }],
  [new RunIncompleteError('run r1 is incomplete: stored 145/200; missing: echo#3'), { name: 'RunIncompleteError', kind: 'run_failed', exitCode: 1 }],
  [new RunDegradedError('run r1 is degraded: harness errors in 7 of 200 attempts'), { name: 'RunDegradedError', kind: 'degraded', exitCode: 7 }],
  [new ConfigError('FORGE_NATS_URL must look like nats://host:port, got "x"'), { name: 'ConfigError', kind: 'config', exitCode: 2 }],
  [new SuiteLoadError('suites/x', [{ file: 'a.yaml', path: 'id', message: 'required' }]), { name: 'SuiteLoadError', kind: 'validation', exitCode: 2 }],
  [new UnknownAdapterError('nope', ['mock']), { name: 'UnknownAdapterError', kind: 'config', exitCode: 2 }],
  [new FixtureSeedError('db', 'bad SQL'), { name: 'FixtureSeedError', kind: 'validation', exitCode: 2 }],
  [new LlmConfigError('adapter config base_url must be an http(s) URL'), { name: 'LlmConfigError', kind: 'config', exitCode: 2 }],
  [new PriceTableError('p.yaml', 'cannot be read'), { name: 'PriceTableError', kind: 'config', exitCode: 2 }],
  [new JudgeConfigError('no judge model'), { name: 'JudgeConfigError', kind: 'config', exitCode: 2 }],
  [new GraderConfigError('regex', [{ path: ['pattern'], message: 'required' }]), { name: 'GraderConfigError', kind: 'validation', exitCode: 2 }],
  [new MissingBinaryError('temporal is not installed'), { name: 'MissingBinaryError', kind: 'missing_binary', exitCode: 3 }],
  [new StackStartError('nats-server did not come up'), { name: 'StackStartError', kind: 'stack', exitCode: 4 }],
  [new StoreError('Code: 62. Syntax error'), { name: 'StoreError', kind: 'store', exitCode: 5 }],
  [new StoreLockedError('the store is locked'), { name: 'StoreLockedError', kind: 'store', exitCode: 5 }],
  [new BusError('no NATS server'), { name: 'BusError', kind: 'store', exitCode: 5 }],
]

describe('error taxonomy', () => {
  it("keeps README's exit codes", () => {
    expect(EXIT_CODES).toEqual({ ok: 0, failure: 1, badInput: 2, missingBinary: 3, stack: 4, store: 5, regression: 6, degraded: 7 })
    expect(EXIT).toBe(EXIT_CODES)
  })

  it.each(areaErrors.map(([error, expected]) => [expected.name, error, expected] as const))('%s is a ForgeError with its kind and exit code', (_, error, expected) => {
    expect(error).toBeInstanceOf(ForgeError)
    const forgeError = error as ForgeError
    expect({ name: forgeError.name, kind: forgeError.kind, exitCode: forgeError.exitCode }).toEqual(expected)
    expect(exitCodeOf(error)).toBe(expected.exitCode)
  })

  it('has one ConfigError, wherever it is imported from', () => {
    expect(StackConfigError).toBe(ConfigError)
  })

  it('gives no exit code for an error it does not know', () => {
    expect([exitCodeOf(new Error('bug')), exitCodeOf(new TypeError('bug')), exitCodeOf('text'), exitCodeOf(undefined)]).toEqual([undefined, undefined, undefined, undefined])
  })
})

describe('ForgeCommand', () => {
  afterEach(() => vi.restoreAllMocks())

  /** Runs a real oclif command that throws `error`; returns the exit it asked for and what it printed on stderr. */
  async function exitOf(error: Error, argv: string[] = []): Promise<{ exit: number | undefined; stderr: string; stdout: string }> {
    class Throws extends ForgeCommand {
      async run(): Promise<void> {
        await this.parse(Throws)
        throw error
      }
    }
    const stderr: string[] = []
    const stdout: string[] = []
    // oclif prints through console.log / console.error
    vi.spyOn(console, 'error').mockImplementation((line: unknown) => void stderr.push(`${String(line)}\n`))
    vi.spyOn(console, 'log').mockImplementation((line: unknown) => void stdout.push(`${String(line)}\n`))
    try {
      await Throws.run(argv, root)
      return { exit: 0, stderr: stderr.join(''), stdout: stdout.join('') }
    } catch (thrown) {
      const exit = (thrown as { oclif?: { exit?: number } }).oclif?.exit
      if (exit === undefined) throw thrown
      return { exit, stderr: stderr.join(''), stdout: stdout.join('') }
    }
  }

  it.each(areaErrors.map(([error, expected]) => [expected.name, error, expected.exitCode] as const))('exits %s with its exit code and a one-line message', async (_, error, exitCode) => {
    const r = await exitOf(error)
    expect({ exit: r.exit, stderr: r.stderr }).toEqual({ exit: exitCode, stderr: `Error: ${error.message}\n` })
  })

  it('prints the error as JSON under --json', async () => {
    const r = await exitOf(new StackStartError('temporal did not come up; see .forge/logs/temporal.log'), ['--json'])
    expect({ exit: r.exit, stderr: r.stderr, json: JSON.parse(r.stdout) as unknown }).toEqual({
      exit: 4,
      stderr: '',
      json: { error: { name: 'StackStartError', message: 'temporal did not come up; see .forge/logs/temporal.log' } },
    })
  })

  it('leaves an unknown error to oclif', async () => {
    class Throws extends ForgeCommand {
      async run(): Promise<void> {
        throw new TypeError('a bug')
      }
    }
    vi.spyOn(console, 'error').mockImplementation(() => undefined)
    await expect(Throws.run([], root)).rejects.toThrow(TypeError)
  })
})

describe('refusedAsData', () => {
  it("tells a value ClickHouse cannot take from a store that failed, by the error's code or its message", () => {
    expect(refusedAsData(Object.assign(new Error('Cannot read DateTime'), { code: '41', type: 'CANNOT_PARSE_DATETIME' }))).toBe(true)
    expect(refusedAsData(new Error('Code: 25. DB::Exception: Cannot parse escape sequence: missing second part of surrogate pair.'))).toBe(true)
    expect(refusedAsData(new Error('Code: 27. DB::Exception: Cannot parse input: expected \',\' before: \'e+30\''))).toBe(true)
    // the store's own trouble: retried, never rejected
    expect(refusedAsData(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8123'), { code: 'ECONNREFUSED' }))).toBe(false)
    expect(refusedAsData(new Error('Code: 241. DB::Exception: Memory limit (total) exceeded'))).toBe(false)
    expect(refusedAsData(new Error('Code: 252. DB::Exception: Too many parts'))).toBe(false)
    expect(refusedAsData('Code: 41. a string, not an error')).toBe(false)
    expect(refusedAsData(null)).toBe(false)
  })
})
