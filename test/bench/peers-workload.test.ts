import { spawnSync } from 'node:child_process'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { AgentTrace } from '../../core/contracts/index.js'
import { gradeAll } from '../../core/graders/index.js'
import type { LoadedSuite } from '../../core/plugins.js'
import { loadSuite } from '../../engine/suite-loader.js'
import { peerWorkload, promptfooAssertions, promptfooConfig, promptfooDuration, type PeerWorkload } from '../../bench/peers/workload.js'

const peers = join(import.meta.dirname, '..', '..', 'bench', 'peers', 'promptfoo')

interface ProviderCall {
  index: number
  name: string
  args: Record<string, unknown>
  result?: unknown
  error?: string
}
interface ProviderReply {
  output: string
  metadata: { tool_calls: ProviderCall[] }
}
type Assertion = (output: string, context: { config: Record<string, unknown>; metadata?: { tool_calls: ProviderCall[] } }) => { pass: boolean } | Promise<{ pass: boolean }>

let suite: LoadedSuite
let workload: PeerWorkload
let provider: { callApi(prompt: string, context: { vars: Record<string, string> }): Promise<ProviderReply> }
let assertions: Record<'numeric' | 'toolSequence' | 'invariant', Assertion>

beforeAll(async () => {
  suite = await loadSuite('smoke')
  workload = peerWorkload(suite, suite.tasks, 200, 100)
  const { writeFileSync, mkdtempSync } = await import('node:fs')
  const { tmpdir } = await import('node:os')
  const file = join(mkdtempSync(join(tmpdir(), 'forge-peers-test-')), 'workload.json')
  writeFileSync(file, JSON.stringify(workload))
  const Provider = ((await import(join(peers, 'provider.mjs'))) as { default: new (options: unknown) => typeof provider }).default
  provider = new Provider({ config: { workload: file, tools_module: join(suite.path, 'tools.mjs') } })
  assertions = (await import(join(peers, 'assertions.mjs'))) as typeof assertions
})

describe('the peer workload', () => {
  it('carries every smoke task with its instruction, input, tools in order, fixtures, graders and invariants', () => {
    expect(workload.tasks.map((t) => t.id).sort()).toEqual(['capital_lookup', 'count_words', 'echo_greeting', 'reverse_shout', 'sum_two_numbers'])
    const reverse = workload.tasks.find((t) => t.id === 'reverse_shout')!
    expect(reverse.tools.map((t) => t.name)).toEqual(['reverse', 'uppercase'])
    expect(reverse.graders).toEqual([
      { type: 'exact', expected: 'DESSERTS' },
      { type: 'tool_sequence', sequence: ['reverse', 'uppercase'], mode: 'ordered' },
    ])
    expect(reverse.invariants).toEqual(['at_most_six_tool_calls', 'no_repeated_identical_calls'])
    expect(Object.keys(workload.tasks.find((t) => t.id === 'capital_lookup')!.fixtures)).toEqual(['kv.json'])
    expect(workload).toMatchObject({ suite: 'smoke', attempts: 200, concurrency: 100 })
  })

  it('maps graders onto promptfoo assertions: built-ins where they mean the same, JavaScript calling the suite otherwise', () => {
    const task = (id: string) => workload.tasks.find((t) => t.id === id)!
    expect(promptfooAssertions(task('capital_lookup'), '/a.mjs', '/inv.mjs')).toEqual([
      { type: 'icontains', value: 'Paris' },
      { type: 'javascript', value: 'file:///a.mjs:invariant', config: { module: '/inv.mjs', name: 'never_calls_kv_delete' } },
      { type: 'javascript', value: 'file:///a.mjs:invariant', config: { module: '/inv.mjs', name: 'no_repeated_identical_calls' } },
    ])
    expect(promptfooAssertions(task('count_words'), '/a.mjs', '/inv.mjs')[0]).toEqual({ type: 'regex', value: '^\\s*9\\s*$' })
    expect(promptfooAssertions(task('echo_greeting'), '/a.mjs', '/inv.mjs')[0]).toEqual({ type: 'equals', value: 'echo: hello forge' })
    expect(promptfooAssertions(task('sum_two_numbers'), '/a.mjs', '/inv.mjs')[0]).toEqual({
      type: 'javascript',
      value: 'file:///a.mjs:numeric',
      config: { expected: 42, tolerance: 0, relative_tolerance: 0 },
    })
    expect(promptfooAssertions(task('reverse_shout'), '/a.mjs', '/inv.mjs')[1]).toEqual({
      type: 'javascript',
      value: 'file:///a.mjs:toolSequence',
      config: { sequence: ['reverse', 'uppercase'], mode: 'ordered' },
    })
  })

  it('refuses a grader it has no mapping for, naming the task and the type', () => {
    const task = { ...workload.tasks[0]!, graders: [{ type: 'json_schema', schema: {} }] }
    expect(() => promptfooAssertions(task, '/a.mjs', '/inv.mjs')).toThrow(`task ${task.id}: grader type "json_schema" is not mapped onto promptfoo`)
  })

  it('builds one promptfoo test per task, the instruction as the prompt and the mock agent as the provider', () => {
    const config = promptfooConfig(workload, { provider: '/p.mjs', assertions: '/a.mjs', workload: '/w.json', toolsModule: '/t.mjs', invariantsModule: '/i.mjs' })
    expect(config['prompts']).toEqual(['{{instruction}}'])
    expect(config['providers']).toEqual([{ id: 'file:///p.mjs', label: 'forge-mock-agent', config: { workload: '/w.json', tools_module: '/t.mjs' } }])
    expect((config['tests'] as unknown[]).length).toBe(5)
  })
})

describe("the promptfoo provider's mock agent and JavaScript assertions", () => {
  const traceOf = (reply: ProviderReply) =>
    AgentTrace.parse({ output: reply.output, tool_calls: reply.metadata.tool_calls.map((c) => ({ ...c, retry_index: 0, started_ms: 0, duration_ms: 0 })), duration_ms: 0 })

  it("answers every smoke task the way Forge's own graders accept, through the suite's tools", async () => {
    for (const task of suite.tasks) {
      const reply = await provider.callApi(task.instruction, { vars: { task_id: task.id } })
      const grades = gradeAll(task.outcome_graders, traceOf(reply), { task, fixtures: suite.fixtures.get(task.id) ?? {} })
      expect(grades.every((g) => g.passed), `${task.id}: ${JSON.stringify(grades)}`).toBe(true)
      expect(reply.metadata.tool_calls.map((c) => c.name)).toEqual(task.tools)
    }
  })

  it('numeric, toolSequence and invariant pass on a clean attempt and fail on a wrong one', async () => {
    const sum = await provider.callApi('', { vars: { task_id: 'sum_two_numbers' } })
    expect(await assertions.numeric(sum.output, { config: { expected: 42, tolerance: 0 } })).toMatchObject({ pass: true })
    expect(await assertions.numeric('41', { config: { expected: 42, tolerance: 0 } })).toMatchObject({ pass: false })
    const shout = await provider.callApi('', { vars: { task_id: 'reverse_shout' } })
    const sequence = { sequence: ['reverse', 'uppercase'], mode: 'ordered' }
    expect(await assertions.toolSequence(shout.output, { config: sequence, metadata: shout.metadata })).toMatchObject({ pass: true })
    expect(await assertions.toolSequence(shout.output, { config: sequence, metadata: { tool_calls: [...shout.metadata.tool_calls].reverse().map((c, index) => ({ ...c, index })) } })).toMatchObject({ pass: false })
    const invariants = join(suite.path, 'invariants.mjs')
    expect(await assertions.invariant(shout.output, { config: { module: invariants, name: 'no_repeated_identical_calls' }, metadata: shout.metadata })).toMatchObject({ pass: true })
    const twice = [...shout.metadata.tool_calls, { ...shout.metadata.tool_calls[0]!, index: 2 }]
    expect(await assertions.invariant(shout.output, { config: { module: invariants, name: 'no_repeated_identical_calls' }, metadata: { tool_calls: twice } })).toMatchObject({ pass: false })
  })
})

describe('promptfooDuration', () => {
  it("reads promptfoo's own run time from its summary line", () => {
    expect(promptfooDuration('Evaluation complete\nDuration: 1m 5s (concurrency: 100)\n')).toBe(65_000)
    expect(promptfooDuration('Duration: 12s')).toBe(12_000)
    expect(promptfooDuration('Duration: 950ms (concurrency: 4)')).toBe(950)
    expect(promptfooDuration('Duration: 1h 2m 3s')).toBe(3_723_000)
    expect(promptfooDuration('no summary here')).toBeUndefined()
  })
})

describe("the peers comparison's flags", () => {
  const compare = (args: string[]) =>
    spawnSync(process.execPath, [join(import.meta.dirname, '..', '..', 'dist', 'bench', 'peers', 'compare.js'), ...args], { encoding: 'utf8', timeout: 60_000 })

  it('refuses a number of rounds it cannot run, naming the flag and the value, before it runs anything', () => {
    for (const rounds of ['0', '2.5', 'three', '21']) {
      const r = compare(['--scratch', join(tmpdir(), 'forge-peers-none'), '--rounds', rounds])
      expect(r.status, rounds).toBe(2)
      expect(r.stderr).toContain(`--rounds must be a whole number from 1 to 20, got "${rounds}"`)
    }
  })

  it('names the missing installs when the rounds are fine', () => {
    const r = compare(['--scratch', join(tmpdir(), 'forge-peers-none'), '--rounds', '1'])
    expect(r.status).toBe(2)
    expect(r.stderr).toMatch(/promptfoo is missing: run bench\/peers\/run-peers\.sh/)
  })
})
