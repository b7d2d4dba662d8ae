import { describe, expect, it } from 'vitest'
import { parseAgentLine } from '../../core/agent-protocol.js'
import { parseAgentOutput } from '../../core/output-parser.js'
import { MAX_JSON_DEPTH, nestsDeeperThan, parseUntrustedJson } from '../../core/untrusted-json.js'

const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`

describe('parseUntrustedJson', () => {
  it(`parses JSON nested up to ${MAX_JSON_DEPTH} levels, and refuses deeper as JSON.parse refuses bad text`, () => {
    expect(parseUntrustedJson('{"a":[1,{"b":"c"}]}')).toEqual({ a: [1, { b: 'c' }] })
    expect(JSON.stringify(parseUntrustedJson(nested(MAX_JSON_DEPTH)))).toBe(nested(MAX_JSON_DEPTH))
    expect(() => parseUntrustedJson(nested(MAX_JSON_DEPTH + 1))).toThrow(new SyntaxError(`JSON nested deeper than ${MAX_JSON_DEPTH} levels`))
    // the slow way V8 fails: a megabyte of opening brackets is refused by the scan instead
    expect(() => parseUntrustedJson('['.repeat(1 << 20))).toThrow(SyntaxError)
    expect(() => parseUntrustedJson('{"a":')).toThrow(SyntaxError)
  })

  it('counts brackets outside strings only, escaped quotes included', () => {
    const inString = JSON.stringify({ text: `${'['.repeat(2000)} \\" ${'{'.repeat(2000)}` })
    expect(nestsDeeperThan(inString, 3)).toBe(false)
    expect(parseUntrustedJson(inString)).toEqual({ text: `${'['.repeat(2000)} \\" ${'{'.repeat(2000)}` })
    expect(nestsDeeperThan('[[["a"],["b"]]]', 3)).toBe(false)
    expect(nestsDeeperThan('[[[["a"]]]]', 3)).toBe(true)
    expect(nestsDeeperThan('"\\"[[[[["', 3)).toBe(false)
  })
})

describe('agent text nested too deep', () => {
  it('is text on the protocol and in the output parser, never a parsed message or answer', () => {
    const deepFinal = `{"type":"final","output":${nested(MAX_JSON_DEPTH + 10)}}`
    expect(parseAgentLine(deepFinal)).toEqual({ kind: 'text', text: deepFinal })
    expect(parseAgentLine('{'.repeat(100_000))).toEqual({ kind: 'text', text: '{'.repeat(100_000) })
    expect(parseAgentOutput('['.repeat(100_000)).method).toBe('text')
    // too deep as a whole; the innermost levels that fit are the last balanced container that parses
    expect(parseAgentOutput(nested(MAX_JSON_DEPTH + 1)).method).toBe('embedded_json')
    // a shallow answer after deep noise is still found
    expect(parseAgentOutput(`${'['.repeat(100_000)} then {"answer": 42}`)).toEqual({ value: { answer: 42 }, method: 'embedded_json' })
    expect(parseAgentOutput(`${'```json\n{'.repeat(10_000)}\n\`\`\`json\n{"answer": 7}\n\`\`\``)).toEqual({ value: { answer: 7 }, method: 'fenced_json' })
  })
})
