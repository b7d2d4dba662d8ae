/**
 * The replay adapter: plays back a stored trace (a golden, or an attempt recorded earlier) so it
 * can be re-graded under the current graders and invariants. Its tool calls are re-issued through
 * the tool box, so the proxy checks and records them as if an agent had made them now.
 */
import { AgentTrace } from '../../core/contracts/index.js'
import type { AdapterContext, AdapterOutput, AgentAdapter } from '../../core/plugins.js'

/** The trace to replay for a task: `config.trace`, else `config.traces[taskId]`. */
export function traceFor(config: Record<string, unknown>, taskId: string): AgentTrace {
  const traces = config['traces']
  const raw =
    config['trace'] ??
    (typeof traces === 'object' && traces !== null && !Array.isArray(traces) ? (traces as Record<string, unknown>)[taskId] : undefined)
  if (raw === undefined) throw new Error(`replay adapter: no trace for task "${taskId}" (give config.trace or config.traces["${taskId}"])`)
  const parsed = AgentTrace.safeParse(typeof raw === 'string' ? JSON.parse(raw) : raw)
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
