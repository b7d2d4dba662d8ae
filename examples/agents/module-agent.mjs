/**
 * An example Forge agent for the `module` adapter: the default export is a factory that makes a
 * fresh agent per attempt. `invoke(payload, tools, context)` calls tools through the harness's
 * tool box and returns `{ output, self_report }`.
 *
 *   forge run --suite smoke --adapter module --adapter-config '{"path":"examples/agents/module-agent.mjs"}'
 */
export default function createAgent() {
  return {
    async invoke(payload, tools, context) {
      let previous
      for (const tool of tools.specs) {
        if (context.signal.aborted) break
        const args = {}
        for (const [name, schema] of Object.entries(tool.input_schema.properties ?? {})) {
          if (name in payload.input) args[name] = payload.input[name]
          else if (previous !== undefined) args[name] = schema.type === 'string' && typeof previous !== 'string' ? String(previous) : previous
        }
        const reply = await tools.call(tool.name, args)
        if (!reply.ok) return { output: null, self_report: `${tool.name} failed: ${reply.error}` }
        previous = reply.result
      }
      return { output: previous ?? null, self_report: `called ${tools.specs.map((t) => t.name).join(', ')}` }
    },
  }
}
