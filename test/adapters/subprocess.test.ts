/** The subprocess adapter against real agent processes: protocol, output, environment, crashes. */
import { afterAll, describe, expect, it } from 'vitest'
import { agentEnvironment, MAX_PROTOCOL_ERRORS, MAX_STDERR_TOTAL_BYTES, MAX_STDOUT_BYTES, MAX_STDOUT_LINES, resolveCommand, subprocessAdapter } from '../../engine/adapters/subprocess.js'
import { MAX_REFUSED_MODEL_CALLS } from '../../engine/llm/gateway.js'
import { MAX_BRIDGED_CONNECTIONS } from '../../engine/sandbox/host.js'
import { loadSuite } from '../../engine/suite-loader.js'
import { removeTempSuites } from '../suites/temp-suite.js'
import { agentPath, attempt, toolSuite } from './helpers.js'

afterAll(() => removeTempSuites())

const smoke = await loadSuite('smoke')

/** A budget whose deadline the flood tests never reach: the harness, not the clock, must end them. */
const FAR_DEADLINE = { max_tool_calls: 5, max_retries_per_tool: 2, max_duration_ms: 100_000 }

/** The worker's upstream model, which nothing answers: the agents only ever see their attempt's gateway. */
const UPSTREAM = { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', OPENAI_API_KEY: 'sk-upstream' }

/** One attempt of a test agent with the attempt's LLM gateway (`llm: true`) in front of the UPSTREAM. */
function withGateway(agent: string, env: Record<string, string> = {}) {
  const { suite, task } = toolSuite({ outcome_graders: [{ type: 'contains', expected: 'x' }], budget: FAR_DEADLINE })
  return attempt(subprocessAdapter, { command: ['node', agentPath(agent)], llm: true, env }, suite, task, 0, UPSTREAM)
}

describe('subprocess adapter', () => {
  it.each([
    ['JavaScript', ['node', 'examples/agents/echo-agent.mjs']],
    ['Python', ['python3', 'examples/agents/echo_agent.py']],
    ['JavaScript over the HTTP tool endpoint', ['node', 'examples/agents/http-tools-agent.mjs']],
  ])('solves every smoke task with the %s example agent', async (label, command) => {
    const config = { command, ...(label.includes('HTTP') ? { protocol: 'http' } : {}) }
    const results = await Promise.all(smoke.tasks.map((task) => attempt(subprocessAdapter, config, smoke, task)))
    const summary = Object.fromEntries(results.map(({ result }) => [result.task_id, [result.outcome, result.validity, result.error]]))
    expect(summary).toEqual(Object.fromEntries(smoke.tasks.map((t) => [t.id, ['pass', 'valid', '']])))
    const reverse = results.find(({ result }) => result.task_id === 'reverse_shout')!.result
    expect(reverse.tool_calls.map(({ name, args, result, retry_index }) => ({ name, args, result, retry_index }))).toEqual([
      { name: 'reverse', args: { text: 'stressed' }, result: 'desserts', retry_index: 0 },
      { name: 'uppercase', args: { value: 'desserts' }, result: 'DESSERTS', retry_index: 0 },
    ])
  })

  it('keeps the final answer of an agent that exits right after writing it, on a busy worker (issue 12)', async () => {
    const { suite, task } = toolSuite({ budget: { max_tool_calls: 5, max_retries_per_tool: 2, max_duration_ms: 60_000 } })
    // a worker under load: its event loop blocked 150 ms at a time while the agents finish
    const busy = setInterval(() => {
      const until = Date.now() + 150
      while (Date.now() < until);
    }, 160)
    try {
      const results = await Promise.all(Array.from({ length: 6 }, (_, i) => attempt(subprocessAdapter, { command: ['python3', agentPath('chatty_then_final.py')] }, suite, task, i)))
      expect(results.map(({ result }) => [result.outcome, result.output, result.error])).toEqual(Array.from({ length: 6 }, () => ['pass', 'ABC', '']))
    } finally {
      clearInterval(busy)
    }
  })

  it('extracts a structured answer from prose on stdout with the fallback parser', async () => {
    const { suite, task } = toolSuite({ outcome_graders: [{ type: 'exact', field: 'answer', expected: 'ABC' }] })
    const { result, trace } = await attempt(subprocessAdapter, { command: ['node', agentPath('prose-answer.mjs')] }, suite, task)
    expect([result.outcome, result.output]).toEqual(['pass', '{"answer":"ABC"}'])
    expect(trace.spans.find((s) => s.name === 'agent-process')?.attributes).toMatchObject({ output_source: 'stdout_text', output_parser: 'fenced_json' })
  })

  it('records a crashing agent as agent failure with its exit code and stderr, not a harness error', async () => {
    const { suite, task } = toolSuite()
    const { result } = await attempt(subprocessAdapter, { command: ['node', agentPath('crash.mjs')] }, suite, task)
    expect([result.outcome, result.validity, result.failure_bucket]).toEqual(['fail', 'valid', 'no_answer'])
    expect(result.error).toBe('agent_exit: agent exited with code 3: agent: something went badly wrong')
  })

  it('answers an invalid tool_call with an error, records a protocol error, and never runs it', async () => {
    const { suite, task, executions } = toolSuite({ outcome_graders: [{ type: 'contains', expected: 'OK' }] })
    const { result } = await attempt(subprocessAdapter, { command: ['node', agentPath('bad-protocol.mjs')] }, suite, task)
    expect(JSON.parse(result.output)).toEqual([
      { type: 'tool_result', id: 'bad', ok: false, error: 'invalid tool_call message: name: Invalid input: expected string, received undefined' },
      { type: 'tool_result', id: 'good', ok: true, result: 'OK' },
    ])
    expect(result.error).toBe('protocol_error: invalid tool_call message: name: Invalid input: expected string, received undefined')
    expect(result.tool_calls.map((c) => c.name)).toEqual(['upper'])
    expect(executions()).toBe(1)
  })

  it('stops an agent that floods it with invalid protocol lines, keeping the first ones', async () => {
    const { suite, task, executions } = toolSuite({ budget: FAR_DEADLINE })
    const { result, trace } = await attempt(subprocessAdapter, { command: ['node', agentPath('protocol-flood.mjs')] }, suite, task)
    // two million lines would have held the worker for ~36 s and 2 GiB; it is stopped after the cap
    const protocolErrors = trace.errors.filter((e) => e.kind === 'protocol_error')
    expect(protocolErrors).toHaveLength(MAX_PROTOCOL_ERRORS)
    expect(new Set(protocolErrors.map((e) => e.message))).toEqual(new Set(['invalid tool_call message: name: Invalid input: expected string, received undefined']))
    const stopped = trace.errors.filter((e) => e.kind === 'stopped')
    expect(stopped).toHaveLength(1)
    expect(stopped[0]!.message).toMatch(new RegExp(`^agent kept sending invalid protocol lines \\((\\d+) by the time it was stopped; the first ${MAX_PROTOCOL_ERRORS} are listed\\); stopped$`))
    expect(Number(/\((\d+) by the time/.exec(stopped[0]!.message)![1])).toBeGreaterThan(MAX_PROTOCOL_ERRORS)
    // its final answer, after the flood, never came: the agent's failure, not the harness's
    expect([result.outcome, result.validity, result.failure_bucket, result.output]).toEqual(['fail', 'valid', 'no_answer', ''])
    expect(result.tool_calls).toEqual([])
    expect(executions()).toBe(0)
  }, 120_000)

  it(`stops an agent that writes more than ${MAX_STDOUT_LINES} lines to stdout`, async () => {
    // a deadline it never reaches: before, it wrote until then and the worker split every line
    const { suite, task } = toolSuite({ budget: FAR_DEADLINE })
    const { result, trace } = await attempt(subprocessAdapter, { command: ['node', agentPath('stdout-flood.mjs')] }, suite, task)
    expect(trace.errors.filter((e) => e.kind === 'stopped')).toEqual([{ kind: 'stopped', message: `agent wrote more than ${MAX_STDOUT_LINES} lines to stdout; stopped (diagnostics belong on stderr)` }])
    expect([result.outcome, result.validity]).toEqual(['fail', 'valid'])
    // what it wrote as text stays within its cap
    expect(Buffer.byteLength(String(trace.output ?? ''))).toBeLessThanOrEqual(64 * 1024)
  }, 120_000)

  it.each(['json', 'deep', 'plain'])(`stops an agent that writes more than ${MAX_STDOUT_BYTES / 1024 / 1024} MiB to stdout in lines of a megabyte (%s)`, async (kind) => {
    const { suite, task } = toolSuite({ budget: FAR_DEADLINE })
    const { result, trace } = await attempt(subprocessAdapter, { command: ['node', agentPath('long-lines.mjs')], env: { KIND: kind } }, suite, task)
    expect(trace.errors.filter((e) => e.kind === 'stopped')).toEqual([{ kind: 'stopped', message: `agent wrote more than ${MAX_STDOUT_BYTES / 1024 / 1024} MiB to stdout; stopped (diagnostics belong on stderr)` }])
    expect([result.outcome, result.validity]).toEqual(['fail', 'valid'])
    expect(trace.spans.find((s) => s.name === 'agent-process')?.attributes['stopped_for']).toBe('stdout')
  }, 120_000)

  it(`stops an agent that writes more than ${MAX_STDERR_TOTAL_BYTES / 1024 / 1024} MiB to stderr, keeping its tail`, async () => {
    const { suite, task } = toolSuite({ budget: FAR_DEADLINE })
    const { result, trace } = await attempt(subprocessAdapter, { command: ['node', agentPath('stderr-flood.mjs')] }, suite, task)
    expect(trace.errors.filter((e) => e.kind === 'stopped')).toEqual([{ kind: 'stopped', message: `agent wrote more than ${MAX_STDERR_TOTAL_BYTES / 1024 / 1024} MiB to stderr; stopped` }])
    expect([result.outcome, result.validity]).toEqual(['fail', 'valid'])
  }, 120_000)

  it('closes the LLM gateway to an agent that floods it with refused calls, and says so in the trace', async () => {
    const { result, trace } = await withGateway('gateway-flood.mjs')
    // every call up to the cap, and the one past it, is answered; then nothing listens
    expect(result.output).toBe(`answered ${MAX_REFUSED_MODEL_CALLS + 1}`)
    const model = trace.spans.filter((s) => s.category === 'model')
    expect(model).toHaveLength(MAX_REFUSED_MODEL_CALLS + 1)
    expect(new Set(model.map((s) => s.attributes['status']))).toEqual(new Set(['bad_request']))
    expect(trace.errors).toContainEqual({
      kind: 'gateway_closed',
      message: `the LLM gateway closed after refusing ${MAX_REFUSED_MODEL_CALLS} requests of this attempt (${MAX_REFUSED_MODEL_CALLS + 1} refused in all): malformed or unauthorized requests, other routes, or a spent token budget`,
    })
    expect([result.outcome, result.validity]).toEqual(['fail', 'valid'])
  }, 120_000)

  it('holds at most MAX_BRIDGED_CONNECTIONS of an agent\'s connections to an endpoint open, closing the rest', async () => {
    // 1,000 connections would hold ~3,000 of the worker's file descriptors
    const { result } = await withGateway('connection-hoard.mjs', { HOARD: '1000', LIMIT: String(MAX_BRIDGED_CONNECTIONS) })
    expect(result.output).toBe(`open ${MAX_BRIDGED_CONNECTIONS}`)
  }, 120_000)

  it('fails the attempt as a harness error when the command cannot start', async () => {
    const { suite, task } = toolSuite()
    const { result } = await attempt(subprocessAdapter, { command: ['/nonexistent/agent-binary'] }, suite, task)
    expect([result.outcome, result.validity, result.failure_bucket]).toEqual(['fail', 'invalid', 'harness_error'])
    expect(result.error).toBe('adapter "subprocess" threw: cannot start "/nonexistent/agent-binary": no such file')
    const unsandboxed = (await attempt(subprocessAdapter, { command: ['/nonexistent/agent-binary'], sandbox: false }, suite, task)).result
    expect(unsandboxed.error).toMatch(/^adapter "subprocess" threw: subprocess adapter: cannot start "\/nonexistent\/agent-binary" \(cwd .*forge-agent-.*\): spawn \/nonexistent\/agent-binary ENOENT$/)
  })

  it('rejects a config without a command, naming the field and the misspelt one', async () => {
    const { suite, task } = toolSuite()
    const { result } = await attempt(subprocessAdapter, { comand: ['node'] }, suite, task)
    expect(result.error).toBe(
      'adapter "subprocess" threw: invalid subprocess adapter config: command: required field missing (expected array); ' +
        'comand: unknown field (known: api_key_env, base_url, command, cwd, decoding, env, kill_grace_ms, llm, model, price_table, protocol, sandbox)',
    )
  })

  it('gives the agent the attempt\'s LLM gateway as OPENAI_BASE_URL/OPENAI_API_KEY only when config.llm is true', async () => {
    const { suite, task } = toolSuite({ outcome_graders: [{ type: 'contains', expected: 'x' }] })
    const envOf = async (llm: boolean): Promise<Record<string, string>> => {
      const { result } = await attempt(subprocessAdapter, { command: ['node', agentPath('dump-everything.mjs')], llm }, suite, task, 0, UPSTREAM)
      return (JSON.parse(result.output) as { env: Record<string, string> }).env
    }
    expect(Object.keys(await envOf(false)).filter((k) => k.startsWith('OPENAI'))).toEqual([])
    const env = await envOf(true)
    expect(env['OPENAI_BASE_URL']).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/)
    expect(env['OPENAI_BASE_URL']).not.toBe(UPSTREAM.OPENAI_BASE_URL)
    // a per-attempt token of the gateway, never the real key
    expect(env['OPENAI_API_KEY']).toMatch(/^\S{16,}$/)
    expect(env['OPENAI_API_KEY']).not.toBe(UPSTREAM.OPENAI_API_KEY)
  })
})

describe('agentEnvironment', () => {
  it('keeps PATH, HOME and LANG of the worker, then the config, then the harness variables', () => {
    const source = { PATH: '/bin', HOME: '/home/w', LANG: 'C.UTF-8', SECRET_TOKEN: 's3cr3t', OPENAI_API_KEY: 'sk-real', FORGE_NATS_URL: 'nats://x' }
    expect(agentEnvironment({ env: { MODE: 'fast', FORGE_TOOL_URL: 'spoofed' } }, { FORGE_TOOL_URL: 'http://127.0.0.1:1/tools' }, source)).toEqual({
      PATH: '/bin',
      HOME: '/home/w',
      LANG: 'C.UTF-8',
      MODE: 'fast',
      FORGE_TOOL_URL: 'http://127.0.0.1:1/tools',
    })
  })
})

describe('resolveCommand', () => {
  it('makes existing relative file paths absolute and leaves programs and flags alone', () => {
    expect(resolveCommand(['node', '--no-warnings', 'examples/agents/echo-agent.mjs', 'missing/file.mjs', '-e'], '/work/main')).toEqual([
      'node',
      '--no-warnings',
      '/work/main/examples/agents/echo-agent.mjs',
      'missing/file.mjs',
      '-e',
    ])
  })
})
