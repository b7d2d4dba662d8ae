// A module agent with module-level state: a leak between attempts would show as a count above 1.
let invocations = 0
globalThis.__forgeCounterModuleEvaluations = (globalThis.__forgeCounterModuleEvaluations ?? 0) + 1

export default {
  async invoke(payload, tools) {
    invocations += 1
    const reply = await tools.call('upper', { value: payload.input.value })
    return { output: reply.ok ? reply.result : null, self_report: String(invocations) }
  },
}
