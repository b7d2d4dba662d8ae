/**
 * What an agent's text costs the worker (FORGE_BENCH_ONLY=hostile): one attempt per family of
 * adversarial text, in process, whose agent sends a megabyte of it as a tool call's arguments (the
 * tool echoes it back, so it is a tool result too) and answers with it — through everything a worker
 * does with an attempt's text: the output parser, the graders, the deterministic metrics, redaction,
 * well-formedness, the result's JSON. Each family is text a regular expression or parser once spent
 * super-linear time on (redaction's credential and URL patterns, its overlap check, the output
 * parser's embedded and fenced JSON, `rm -rf` detection, JSON nested deep); the worst attempt is what
 * one hostile agent can hold a worker's event loop for, per attempt.
 */
import { Task } from '../core/contracts/index.js'
import type { AgentAdapter } from '../core/plugins.js'
import { runAttempt } from '../engine/attempt-runner.js'
import { oneTaskSuite } from './one-task-suite.js'

const SIZE = 1 << 20

/** The families: a chunk repeated to SIZE characters. */
export const HOSTILE_CHUNKS: Record<string, string> = {
  dashes: '-',
  underscores: '_',
  'sk- prefixes': 'sk-',
  'slack prefixes': 'xoxb-',
  'github prefixes': 'ghp_',
  'token names': '-token',
  'digit runs': '1-',
  'scheme runs': 'a-b.',
  'jwt halves': 'eyJa.',
  addresses: 'a@a.a',
  'url users': 'a://b:c',
  'private key headers': '-----BEGIN A ',
  'phone groups': '+44 20 ',
  'open brackets': '[',
  'open objects': '{"a":',
  'bracket pairs': '[]',
  'open fences': '```json\n{',
  'rm flags': 'rm -rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr',
  'answer lines': 'Final answer: ****************************************\n',
}

const task = Task.parse({
  id: 'hostile',
  instruction: 'Answer.',
  input: {},
  tools: ['echo'],
  budget: { max_tool_calls: 5, max_retries_per_tool: 1, max_duration_ms: 600_000 },
  outcome_graders: [
    { type: 'exact', expected: 'x' },
    { type: 'contains', expected: 'x' },
    { type: 'regex', pattern: '^x$' },
    { type: 'json_schema', schema: { type: 'object' } },
  ],
})
const suite = oneTaskSuite(task, { name: 'echo', description: '', input_schema: { type: 'object', properties: { text: { type: 'string' } } }, run: (args) => args['text'] })

function hostileAgent(text: string): AgentAdapter {
  return {
    name: 'hostile',
    async invoke(_payload, ctx) {
      await ctx.tools.call('echo', { text })
      return { output: text, errors: [] }
    },
  }
}

/** CPU ms of one attempt whose agent's text is `text`. */
async function attemptCpuMs(text: string): Promise<number> {
  const started = process.cpuUsage()
  await runAttempt({ suite, task, adapter: hostileAgent(text), runId: 'bench', configId: 'c0', attempt: 0, runSeed: 's', adapterConfig: {}, workerId: 'w-bench' })
  const used = process.cpuUsage(started)
  return (used.user + used.system) / 1000
}

export async function hostileTextBench(): Promise<void> {
  await attemptCpuMs('warm-up')
  const baseline = await attemptCpuMs('x'.repeat(SIZE))
  console.log(`hostile text: one attempt per family, its agent sending ${SIZE.toLocaleString('en-US')} characters as tool arguments, tool result and answer (CPU per attempt, worker side)`)
  console.log(`  ${'plain letters (baseline)'.padEnd(24)} ${baseline.toFixed(0).padStart(6)} ms`)
  let worst: [string, number] = ['', 0]
  for (const [family, chunk] of Object.entries(HOSTILE_CHUNKS)) {
    const text = chunk.repeat(Math.ceil(SIZE / chunk.length)).slice(0, SIZE)
    const ms = await attemptCpuMs(text)
    if (ms > worst[1]) worst = [family, ms]
    console.log(`  ${family.padEnd(24)} ${ms.toFixed(0).padStart(6)} ms`)
  }
  console.log(`  worst: ${worst[0]}, ${worst[1].toFixed(0)} ms of the worker's event loop for one attempt (${(worst[1] / baseline).toFixed(1)}× plain text)`)
}
