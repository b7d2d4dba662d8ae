/** The gateway's life in an attempt: started on the first ctx.llm(), one per attempt, closed when the agent stops. */
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import type { AgentAdapter, LlmEndpoint } from '../../core/plugins.js'
import { runAttempt } from '../../engine/attempt-runner.js'
import { fakeSuite, fakeTask } from '../unit/fake-suite.js'

function options(adapter: AgentAdapter, task = fakeTask()) {
  return { suite: fakeSuite({ tasks: [task] }), task, adapter, runId: 'r', configId: 'c', attempt: 0, runSeed: 's', adapterConfig: {}, workerId: 'w', graceMs: 20, env: { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' } }
}

describe('LLM gateway lifecycle', () => {
  it('gives one endpoint per attempt, with a fresh token, and closes it when the attempt ends', async () => {
    const seen: LlmEndpoint[] = []
    const adapter: AgentAdapter = {
      name: 'asks-twice',
      async invoke(_payload, ctx) {
        seen.push(await ctx.llm(), await ctx.llm())
        return { output: 'ABC' }
      },
    }
    await runAttempt(options(adapter))
    await runAttempt(options(adapter))
    expect(seen[0]).toBe(seen[1])
    expect(seen[2]!.apiKey).not.toBe(seen[0]!.apiKey)
    await expect(fetch(`${seen[0]!.baseURL}/chat/completions`, { method: 'POST', body: '{}' })).rejects.toThrow()
  })

  it('refuses to start a gateway for an adapter still running after its deadline', async () => {
    let late: Promise<unknown> | undefined
    const adapter: AgentAdapter = {
      name: 'ignores-abort',
      async invoke(_payload, ctx) {
        await sleep(150)
        late = ctx.llm().then(
          () => 'started',
          (error: unknown) => (error as Error).message,
        )
        return { output: null }
      },
    }
    const { result } = await runAttempt(options(adapter, fakeTask({ budget: { max_duration_ms: 50 } })))
    expect(result.budget_limit).toBe('max_duration_ms')
    await sleep(200)
    expect(await late).toBe('the attempt has ended: no model calls after it')
  })

  it('starts no gateway for an adapter that never asks for a model', async () => {
    const { result, trace } = await runAttempt(options({ name: 'plain', invoke: () => Promise.resolve({ output: 'ABC' }) }))
    expect(trace.spans.filter((s) => s.category === 'model')).toEqual([])
    expect(result).toMatchObject({ model: 'plain', decoding: {}, cost_usd: null, price_table_version: '' })
  })
})
