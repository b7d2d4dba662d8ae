/**
 * promptfoo custom provider for the peer bench (bench/peers/README.md): the same mock agent as Forge's
 * mock adapter on a clean attempt, with zero think time. It calls the task's allowlisted tools in
 * order, filling each tool's arguments from the input fields of the same name or from the previous
 * tool's result, runs each call through the suite's own tool code (suites/<suite>/tools.mjs), and
 * answers with the last result. The tool calls go back as metadata, for the tool_sequence and
 * invariant assertions. config: { workload: <workload.json>, tools_module: <tools.mjs> }.
 */
import { readFileSync } from 'node:fs'
import { pathToFileURL } from 'node:url'

function isRecord(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** the tool's parameters: name, required */
function parameters(spec) {
  const schema = spec.input_schema ?? {}
  const properties = isRecord(schema.properties) ? schema.properties : {}
  const required = Array.isArray(schema.required) ? schema.required : []
  return [...new Set([...Object.keys(properties), ...required])].map((name) => ({ name, required: required.includes(name) }))
}

function fillArgs(spec, input, previous) {
  const args = {}
  for (const p of parameters(spec)) {
    if (Object.hasOwn(input, p.name)) args[p.name] = input[p.name]
    else if (p.required && previous !== undefined) {
      const value = previous.value
      args[p.name] = isRecord(value) && Object.hasOwn(value, p.name) ? value[p.name] : value
    }
  }
  return args
}

function text(value) {
  if (value === undefined || value === null) return ''
  return typeof value === 'string' ? value : JSON.stringify(value)
}

export default class ForgeMockAgent {
  constructor(options = {}) {
    this.config = options.config ?? {}
    this.providerId = options.id ?? 'forge-mock-agent'
    const workload = JSON.parse(readFileSync(this.config.workload, 'utf8'))
    this.tasks = new Map(workload.tasks.map((task) => [task.id, task]))
    this.tools = undefined
  }

  id() {
    return this.providerId
  }

  async loadTools() {
    this.tools ??= import(pathToFileURL(this.config.tools_module).href).then((module) => new Map(module.tools.map((tool) => [tool.name, tool])))
    return this.tools
  }

  async callApi(_prompt, context) {
    const task = this.tasks.get(context.vars.task_id)
    if (task === undefined) return { error: `no task ${context.vars.task_id} in the workload` }
    const tools = await this.loadTools()
    const calls = []
    let previous
    for (const spec of task.tools) {
      const args = fillArgs(spec, task.input, previous)
      const call = { index: calls.length, name: spec.name, args, retry_index: 0 }
      try {
        const result = await tools.get(spec.name).run(args, { attemptUid: '', taskId: task.id, fixtures: task.fixtures })
        calls.push({ ...call, result })
        previous = { value: result }
      } catch (error) {
        calls.push({ ...call, error: error instanceof Error ? error.message : String(error) })
        return { output: `I could not finish: ${calls.at(-1).error}`, metadata: { tool_calls: calls } }
      }
    }
    const output = text(previous?.value)
    return { output, metadata: { tool_calls: calls }, tokenUsage: { prompt: 0, completion: 0, total: 0 } }
  }
}
