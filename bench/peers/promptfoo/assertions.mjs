/**
 * promptfoo JavaScript assertions of the peer bench: the smoke graders promptfoo has no built-in for
 * (numeric, tool_sequence, as Forge's core/graders define them) and the suite's own invariants
 * (imported from the suite's invariants.mjs and run on the provider's tool calls). Each gets its
 * settings as the assertion's `config`; the tool calls arrive as the provider's metadata.
 */
import { pathToFileURL } from 'node:url'

const modules = new Map()

function toolCalls(context) {
  return context.metadata?.tool_calls ?? context.providerResponse?.metadata?.tool_calls ?? []
}

/** a number, a numeric string, or the last number in the text (Forge's extractNumber, simplified) */
function numberIn(output) {
  const text = String(output).trim()
  if (/^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$/.test(text)) return Number(text)
  const matches = text.match(/[-+]?\d+(?:\.\d+)?/g)
  return matches === null ? null : Number(matches.at(-1))
}

export function numeric(output, context) {
  const { expected, tolerance = 0, relative_tolerance = 0 } = context.config
  const value = numberIn(output)
  const allowed = Math.max(tolerance, relative_tolerance * Math.abs(expected))
  const pass = value !== null && Math.abs(value - expected) <= allowed
  return { pass, score: pass ? 1 : 0, reason: `${value} vs ${expected} ± ${allowed}` }
}

export function toolSequence(_output, context) {
  const { sequence, mode = 'ordered' } = context.config
  const names = toolCalls(context)
    .filter((call) => call.error === undefined && call.refused === undefined)
    .sort((a, b) => a.index - b.index)
    .map((call) => call.name)
  let pass
  if (mode === 'ordered') {
    let at = 0
    for (const name of names) if (name === sequence[at]) at++
    pass = at === sequence.length
  } else if (mode === 'unordered') pass = names.length === sequence.length && [...names].sort().join('\n') === [...sequence].sort().join('\n')
  else if (mode === 'subset') pass = names.every((name) => sequence.includes(name))
  else pass = sequence.every((name) => names.includes(name))
  return { pass, score: pass ? 1 : 0, reason: `${mode} ${sequence.join(' → ')}: called ${names.join(' → ') || 'nothing'}` }
}

export async function invariant(_output, context) {
  const { module, name } = context.config
  let loaded = modules.get(module)
  if (loaded === undefined) {
    loaded = import(pathToFileURL(module).href).then((m) => m.invariants ?? m.default)
    modules.set(module, loaded)
  }
  const check = (await loaded)[name]
  if (typeof check !== 'function') return { pass: false, score: 0, reason: `no invariant ${name} in ${module}` }
  const verdict = await check({ tool_calls: toolCalls(context), spans: [], state_snapshots: [], errors: [], output: _output })
  return { pass: verdict.passed, score: verdict.passed ? 1 : 0, reason: verdict.detail ?? name }
}
