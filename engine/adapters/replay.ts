/**
 * The replay adapter: plays back a stored trace (a golden, or an attempt recorded earlier) so it
 * can be re-graded under the current graders and invariants. Its tool calls are re-issued through
 * the tool box, so the proxy checks and records them as if an agent had made them now.
 */
import { z } from 'zod'
import { AgentTrace } from '../../core/contracts/index.js'
import type { AdapterContext, AdapterOutput, AgentAdapter } from '../../core/plugins.js'
import { harnessConfigShape, parseAdapterConfig } from './config-schema.js'

/** A stored trace: an AgentTrace object or its JSON text (checked against AgentTrace per task, when replayed). */
const StoredTraceInput = z.union([z.string().min(1), z.record(z.string(), z.unknown())])

/** ctx.config of the replay adapter: the trace of every task, or one trace per task id. */
export const ReplayConfig = z
  .strictObject({
    trace: StoredTraceInput.optional().describe('The trace replayed for every task: an AgentTrace object or its JSON text.'),
    traces: z.record(z.string(), StoredTraceInput).optional().describe('Task id → the trace replayed for that task (an AgentTrace object or its JSON text).'),
    ...harnessConfigShape,
  })
  .refine((config) => config.trace !== undefined || config.traces !== undefined, { message: 'give trace (one for every task) or traces (task id → trace)', path: ['trace'] })
  .describe('Config of the replay adapter (--adapter-config).')
export type ReplayConfig = z.output<typeof ReplayConfig>

/** The trace to replay for a task: `config.trace`, else `config.traces[taskId]`. */
export function traceFor(config: Record<string, unknown>, taskId: string): AgentTrace {
  const { trace, traces } = parseAdapterConfig('replay', ReplayConfig, config)
  const raw = trace ?? traces?.[taskId]
  if (raw === undefined) throw new Error(`replay adapter: no trace for task "${taskId}" (give config.trace or config.traces["${taskId}"])`)
  let data: unknown = raw
  if (typeof raw === 'string') {
    try {
      data = JSON.parse(raw)
    } catch (error) {
      throw new Error(`replay adapter: the trace for task "${taskId}" is not JSON: ${error instanceof Error ? error.message : String(error)}`, { cause: error })
    }
  }
  const parsed = AgentTrace.safeParse(data)
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.map(String).join('.') || '(trace)'}: ${i.message}`)
    throw new Error(`replay adapter: the trace for task "${taskId}" is not an AgentTrace: ${problems.join('; ')}`)
  }
  return parsed.data
}

export const replayAdapter: AgentAdapter = {
  name: 'replay',
  async invoke(_payload, ctx: AdapterContext): Promise<AdapterOutput> {
    const trace = traceFor(ctx.config, ctx.taskId)
    for (const call of [...trace.tool_calls].sort((a, b) => a.index - b.index)) {
      if (ctx.signal.aborted) break
      await ctx.tools.call(call.name, call.args)
    }
    const output: AdapterOutput = { output: trace.output, refused: trace.refused, usage: trace.usage, errors: trace.errors }
    if (trace.self_report !== undefined) output.self_report = trace.self_report
    return output
  },
}
