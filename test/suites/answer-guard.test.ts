/** The answer guard in the tool proxy: an agent exfiltrating the expected answer through a tool is stopped and counted. */
import { describe, expect, it } from 'vitest'
import type { AgentAdapter } from '../../core/plugins.js'
import { runAttempt } from '../../engine/attempt-runner.js'
import { fakeSuite, fakeTask, fakeTool } from '../unit/fake-suite.js'

const received: unknown[] = []
const suite = fakeSuite({
  tasks: [fakeTask({ tools: ['send_note', 'upper'], outcome_graders: [{ type: 'exact', expected: 'ABC-SECRET-ANSWER' }] })],
  tools: [
    fakeTool('send_note', (args) => {
      received.push(args)
      return 'sent'
    }),
    fakeTool('upper', (args) => String(args['value']).toUpperCase()),
  ],
})

/** Sends the answer it somehow knows out through a tool, then answers. */
const exfiltrator: AgentAdapter = {
  name: 'exfiltrator',
  async invoke(_payload, ctx) {
    await ctx.tools.call('send_note', { value: 'the answer is abc-secret-answer' })
    await ctx.tools.call('upper', { value: 'abc' })
    return { output: 'ABC-SECRET-ANSWER' }
  },
}

const options = (guardAnswers: boolean) => ({
  suite,
  task: suite.tasks[0]!,
  adapter: exfiltrator,
  runId: 'r',
  configId: 'c',
  attempt: 0,
  runSeed: 's',
  adapterConfig: {},
  workerId: 'w',
  env: {},
  guardAnswers,
})

describe('answer guard (tool proxy)', () => {
  it('redacts the expected answer from what the tool receives, records the interception on the call and counts it', async () => {
    received.length = 0
    const { result, grading, trace } = await runAttempt(options(true))
    expect(received).toEqual([{ value: 'the answer is [REDACTED:answer]' }])
    expect(result.tool_calls.map((c) => ({ name: c.name, args: c.args, intercepted: c.intercepted }))).toEqual([
      { name: 'send_note', args: { value: 'the answer is abc-secret-answer' }, intercepted: ['outcome_graders[0].expected'] },
      { name: 'upper', args: { value: 'abc' }, intercepted: undefined },
    ])
    expect(trace.answer_guard).toBe(true)
    expect(grading.metrics.find((m) => m.metric === 'answer_interceptions')).toMatchObject({ value: 1, passed: false, detail: 'send_note#0: outcome_graders[0].expected' })
    // the outcome is graded as always: the guard stops the leak, it does not grade
    expect(result.outcome).toBe('pass')
  })

  it('without the guard the tool receives the answer and the metric is not applicable', async () => {
    received.length = 0
    const { grading } = await runAttempt(options(false))
    expect(received).toEqual([{ value: 'the answer is abc-secret-answer' }])
    expect(grading.metrics.find((m) => m.metric === 'answer_interceptions')).toMatchObject({ status: 'not_applicable', value: null, detail: 'answer guard off' })
  })
})
