/**
 * Redaction on write in the attempt runner: what an attempt hands back for publishing holds no
 * secret or PII value (result, trace, spans, metric details, judgement, thrown errors), while the
 * graders and the secret_leak / pii_exposure metrics saw the raw trace; secrets passed to the agent
 * by reference are resolved on the worker.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { AgentAdapter } from '../../core/plugins.js'
import { runAttempt, type ExecuteAttemptOptions } from '../../engine/attempt-runner.js'
import { SecretRefError } from '../../engine/errors.js'
import { resolveSecretRefs } from '../../engine/secrets.js'
import { fakeSuite, fakeTask, fakeTool } from '../unit/fake-suite.js'

const ENV_KEY = 'sk-test-SECRET123'
const REF_SECRET = 'by-reference-Value-9d2e'
const FILE_SECRET = 'from-a-file-Value-41c7'
const EMAIL = 'planted.person@example.net'
const CARD = '5500 0000 0000 0004'
const PHONE = '+1-415-555-0132'
const RAW = [ENV_KEY, REF_SECRET, FILE_SECRET, EMAIL, CARD, PHONE, '5500000000000004']

const secretFile = join(mkdtempSync(join(tmpdir(), 'forge-secret-')), 'key')
writeFileSync(secretFile, `${FILE_SECRET}\n`)

/** Leaks everything it can reach, everywhere it can: output, tool args, errors, spans. */
const leaky: AgentAdapter = {
  name: 'leaky',
  async invoke(_payload, ctx) {
    const env = ctx.config['env'] as Record<string, string>
    const looked = await ctx.tools.call('lookup', { value: `${env['MY_KEY']} and ${EMAIL}` })
    await ctx.tools.call('fail', { value: 'x' })
    return {
      output: `key ${process.env['OPENAI_API_KEY'] ?? 'none'} / ${env['MY_KEY']} / ${env['FILE_KEY']}; card ${CARD}; call ${PHONE}; ${JSON.stringify(looked.ok ? looked.result : null)}`,
      errors: [{ kind: 'agent', message: `retrying with ${env['MY_KEY']}` }],
      spans: [{ span_id: 's1', parent_span_id: null, category: 'agent', name: 'think', start_ms: 0, duration_ms: 1, attributes: { prompt: `mail ${EMAIL}` } }],
      self_report: `used ${ENV_KEY}`,
    }
  },
}

function options(overrides: Partial<ExecuteAttemptOptions> = {}): ExecuteAttemptOptions {
  const suite = fakeSuite({
    tasks: [fakeTask({ tools: ['lookup', 'fail'], outcome_graders: [{ type: 'contains', expected: ENV_KEY }] })],
    tools: [
      fakeTool('lookup', (args) => ({ echoed: args['value'], owner: EMAIL, card: 5500000000000004 })),
      fakeTool('fail', () => {
        throw new Error(`upstream refused key ${ENV_KEY}`)
      }),
    ],
  })
  return {
    suite,
    task: suite.tasks[0]!,
    adapter: leaky,
    runId: 'run1',
    configId: 'c0',
    attempt: 1,
    runSeed: 'rs',
    adapterConfig: { env: { MY_KEY: { from_env: 'MY_AGENT_SECRET' }, FILE_KEY: { from_file: secretFile } } },
    workerId: 'w',
    env: { OPENAI_API_KEY: ENV_KEY, MY_AGENT_SECRET: REF_SECRET, PATH: '/usr/bin' },
    ...overrides,
  }
}

const leaked = (value: unknown): string[] => RAW.filter((raw) => JSON.stringify(value).includes(raw))

describe('redaction on write (attempt runner)', () => {
  it('hands back a result, trace and grading with no raw secret or PII; labels are stable across them', async () => {
    // the adapter reads OPENAI_API_KEY from the worker's own environment too
    process.env['OPENAI_API_KEY'] = ENV_KEY
    try {
      const execution = await runAttempt(options())
      expect({ result: leaked(execution.result), trace: leaked(execution.trace), grading: leaked(execution.grading) }).toEqual({ result: [], trace: [], grading: [] })
      // graded on the raw trace: the expected key was in the output
      expect(execution.result.outcome).toBe('pass')
      expect(execution.result.output).toBe(
        'key [REDACTED:secret#1] / [REDACTED:secret#2] / [REDACTED:secret#3]; card [REDACTED:card#1]; call [REDACTED:phone#1]; {"echoed":"[REDACTED:secret#2] and [REDACTED:email#1]","owner":"[REDACTED:email#1]","card":[REDACTED:card#1]}',
      )
      expect(execution.result.tool_calls.map((c) => [c.args, c.result, c.error])).toEqual([
        [{ value: '[REDACTED:secret#2] and [REDACTED:email#1]' }, { echoed: '[REDACTED:secret#2] and [REDACTED:email#1]', owner: '[REDACTED:email#1]', card: '[REDACTED:card#1]' }, undefined],
        [{ value: 'x' }, undefined, 'upstream refused key [REDACTED:secret#1]'],
      ])
      expect(execution.trace.errors).toEqual([{ kind: 'agent', message: 'retrying with [REDACTED:secret#2]' }])
      expect(execution.trace.spans.find((s) => s.span_id === 's1')?.attributes).toEqual({ prompt: 'mail [REDACTED:email#1]' })
      expect(execution.result.self_report).toBe('used [REDACTED:secret#1]')
      // the metrics saw the raw trace: the leak is detected and counted
      const metric = (name: string) => execution.grading.metrics.find((m) => m.metric === name)
      expect(metric('secret_leak')).toMatchObject({ value: 1, passed: false, detail: 'found: a secret the worker holds' })
      expect(metric('pii_exposure')).toMatchObject({ value: 3, detail: '1 email(s), 1 card number(s), 1 phone number(s) not in the task' })
    } finally {
      delete process.env['OPENAI_API_KEY']
    }
  })

  it('with redact: false hands back the raw values', async () => {
    const execution = await runAttempt(options({ redact: false }))
    expect(leaked(execution.result)).toEqual(expect.arrayContaining([ENV_KEY, REF_SECRET, FILE_SECRET, EMAIL, CARD, PHONE]))
  })

  it('redacts an error thrown out of the attempt (what Temporal would record)', async () => {
    const throwing: AgentAdapter = { name: 'oops', invoke: () => Promise.resolve({ output: 'x' }) }
    const opts = options({ adapter: throwing })
    // a suite whose task names a tool it lacks makes the runner itself throw, naming the tool
    const broken = { ...opts, task: fakeTask({ tools: [`missing_${REF_SECRET}`] }) }
    await expect(runAttempt(broken)).rejects.toThrow(`allows tool "missing_[REDACTED:secret#1]"`)
  })

  it('keeps PII the task itself holds, so a regrade compares what the worker compared', async () => {
    const echo: AgentAdapter = { name: 'echo', invoke: () => Promise.resolve({ output: `write to owner@shop.example and ${EMAIL}` }) }
    const task = fakeTask({ tools: [], instruction: 'Answer with the owner address owner@shop.example.', outcome_graders: [{ type: 'contains', expected: 'owner@shop.example' }] })
    const execution = await runAttempt({ ...options({ adapter: echo, adapterConfig: {} }), suite: fakeSuite({ tasks: [task] }), task })
    expect(execution.result.output).toBe('write to owner@shop.example and [REDACTED:email#1]')
  })
})

describe('secrets by reference', () => {
  it('resolves from_env and from_file on the worker and reports the values as secrets', () => {
    const resolved = resolveSecretRefs({ env: { A: { from_env: 'X' }, B: { from_file: secretFile }, C: 'plain' }, model: 'm' }, { X: 'x-value-123' })
    expect(resolved).toEqual({ config: { env: { A: 'x-value-123', B: FILE_SECRET, C: 'plain' }, model: 'm' }, secrets: ['x-value-123', FILE_SECRET] })
  })

  it('a reference the worker cannot resolve is a SecretRefError naming the field and the variable or file', async () => {
    expect(() => resolveSecretRefs({ env: { A: { from_env: 'NOPE' } } }, {})).toThrow(new SecretRefError('adapter config env.A: {"from_env": "NOPE"}: the worker has no NOPE in its environment'))
    expect(() => resolveSecretRefs({ headers: { auth: { from_file: '/no/such/file' } } }, {})).toThrow('adapter config headers.auth: {"from_file": "/no/such/file"}: cannot read it on the worker (ENOENT)')
    await expect(runAttempt(options({ env: {} }))).rejects.toBeInstanceOf(SecretRefError)
  })
})

describe('log lines', () => {
  it('redact messages, fields and errors (which keep their type)', async () => {
    const { redactLogArgument } = await import('../../engine/logger.js')
    const { Redactor } = await import('../../core/redaction.js')
    const r = new Redactor({ secrets: [REF_SECRET] })
    const error = new TypeError(`bad key ${REF_SECRET}`)
    const logged = redactLogArgument({ err: error, to: EMAIL, n: 3 }, r) as { err: Error; to: string; n: number }
    expect([logged.err instanceof TypeError, logged.err.message, logged.err.stack?.includes(REF_SECRET), logged.to, logged.n]).toEqual([
      true,
      'bad key [REDACTED:secret#1]',
      false,
      '[REDACTED:email#1]',
      3,
    ])
    expect(redactLogArgument(`sent to ${EMAIL}`, r)).toBe('sent to [REDACTED:email#1]')
    // the original error is left as it was
    expect(error.message).toBe(`bad key ${REF_SECRET}`)
  })
})
