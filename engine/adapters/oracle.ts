/**
 * The oracle adapter: replays the task's golden trace through the real tool proxy and answers
 * with the golden output — a run with it proves every task is solvable with its tools, graders
 * and invariants as they are now. The runner hands the golden (ctx.golden) to this adapter only.
 *
 * When a re-issued call now gives a different result than the golden recorded, the golden is
 * stale: the difference is noted in the trace's errors (the grade still decides the outcome).
 */
import { z } from 'zod'
import type { AdapterContext, AdapterOutput, AgentAdapter } from '../../core/plugins.js'
import { harnessConfigShape, parseAdapterConfig } from './config-schema.js'

/** ctx.config of the oracle adapter: nothing of its own (it replays the task's golden). */
export const OracleConfig = z.strictObject({ ...harnessConfigShape }).describe('Config of the oracle adapter (--adapter-config): only the keys every adapter takes.')

export const oracleAdapter: AgentAdapter = {
  name: 'oracle',
  async invoke(_payload, ctx: AdapterContext): Promise<AdapterOutput> {
    parseAdapterConfig('oracle', OracleConfig, ctx.config)
    const golden = ctx.golden
    if (golden === undefined) {
      throw new Error(`oracle adapter: task "${ctx.taskId}" has no golden trace (name one with \`golden:\` in the task file)`)
    }
    const errors: Array<{ kind: string; message: string }> = []
    for (const call of [...golden.tool_calls].sort((a, b) => a.index - b.index)) {
      if (ctx.signal.aborted) break
      const outcome = await ctx.tools.call(call.name, call.args)
      const goldenOk = call.error === undefined && call.refused === undefined
      if (outcome.ok !== goldenOk) {
        errors.push({
          kind: 'golden_divergence',
          message: `call #${call.index} ${call.name}: the golden ${goldenOk ? 'succeeded' : 'failed'}, the replay ${outcome.ok ? 'succeeded' : `failed (${outcome.error})`}`,
        })
      } else if (outcome.ok && call.result !== undefined && JSON.stringify(outcome.result) !== JSON.stringify(call.result)) {
        errors.push({
          kind: 'golden_divergence',
          message: `call #${call.index} ${call.name}: the golden recorded ${JSON.stringify(call.result)}, the replay returned ${JSON.stringify(outcome.result)}`,
        })
      }
    }
    const output: AdapterOutput = { output: structuredClone(golden.output), refused: golden.refused, errors }
    if (golden.self_report !== undefined) output.self_report = golden.self_report
    return output
  },
}
