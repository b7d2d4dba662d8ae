/** A tool box that notices an agent ignoring its budget, so an out-of-process adapter can stop it. */
import type { ToolBox } from '../../core/plugins.js'

/**
 * The attempt's tool box, watched: an agent that calls a tool again after the box refused it for
 * budget is not going to stop by itself, so `onIgnoredBudget` fires and the adapter stops it.
 * The first refusal is delivered, so an agent that respects it can still give its answer. Calls
 * that still arrive after that (an HTTP request already in flight) are answered but not recorded:
 * the agent's attempt is over.
 */
export function budgetWatchedToolBox(tools: ToolBox, onIgnoredBudget: () => void): ToolBox {
  let stopped = false
  return {
    specs: tools.specs,
    get exhausted() {
      return tools.exhausted
    },
    async call(name, args) {
      if (stopped) return { ok: false, error: 'the agent was stopped: its budget is exhausted' }
      const alreadyExhausted = tools.exhausted
      const outcome = await tools.call(name, args)
      if (alreadyExhausted && !stopped) {
        stopped = true
        onIgnoredBudget()
      }
      return outcome
    },
  }
}
