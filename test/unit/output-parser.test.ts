import { describe, expect, it } from 'vitest'
import { normalizeAgentOutput, parseAgentOutput } from '../../core/output-parser.js'

describe('parseAgentOutput', () => {
  it('parses a whole-text JSON object or array', () => {
    expect(parseAgentOutput('  {"answer": 42, "units": "m"}\n')).toEqual({ value: { answer: 42, units: 'm' }, method: 'json' })
    expect(parseAgentOutput('[1, 2, 3]')).toEqual({ value: [1, 2, 3], method: 'json' })
  })

  it('takes the last JSON code fence, tagged json or untagged, and ignores other languages', () => {
    const text = [
      'First try:',
      '```json',
      '{"answer": 1}',
      '```',
      'Some python that is not the answer:',
      '```python',
      '{"answer": 99}',
      '```',
      'Corrected:',
      '```',
      '{"answer": 2}',
      '```',
    ].join('\n')
    expect(parseAgentOutput(text)).toEqual({ value: { answer: 2 }, method: 'fenced_json' })
  })

  it('finds the last outermost JSON embedded in prose, with brackets inside strings', () => {
    expect(parseAgentOutput('I think {"a": 1} but then {"city": "Paris {France}", "tags": ["x", "y"]} is final.')).toEqual({
      value: { city: 'Paris {France}', tags: ['x', 'y'] },
      method: 'embedded_json',
    })
    expect(parseAgentOutput('the list is [3, 4] ok')).toEqual({ value: [3, 4], method: 'embedded_json' })
  })

  it('skips bracketed text that is not JSON', () => {
    expect(parseAgentOutput('see [the docs] and {not json}')).toEqual({ value: 'see [the docs] and {not json}', method: 'text' })
  })

  it('reads a "Final answer:" line before an "Answer:" line, stripping emphasis and quotes', () => {
    expect(parseAgentOutput('Answer: maybe 3\nLet me check.\n**Final Answer:** "Paris"\n')).toEqual({ value: 'Paris', method: 'answer_line' })
    expect(parseAgentOutput('Thinking...\nanswer: DESSERTS')).toEqual({ value: 'DESSERTS', method: 'answer_line' })
    expect(parseAgentOutput('> Answer: `echo: hello forge`')).toEqual({ value: 'echo: hello forge', method: 'answer_line' })
  })

  it('extracts the last number only when a number is expected', () => {
    const text = 'There were 3 candidates; the sum is 1,234.5 in total'
    expect(parseAgentOutput(text)).toEqual({ value: text, method: 'text' })
    expect(parseAgentOutput(text, { expect: 'number' })).toEqual({ value: 1234.5, method: 'number' })
  })

  it('leaves plain text, and JSON scalars, as they are', () => {
    expect(parseAgentOutput('echo: hello forge')).toEqual({ value: 'echo: hello forge', method: 'text' })
    expect(parseAgentOutput('42')).toEqual({ value: '42', method: 'text' })
    expect(parseAgentOutput('"quoted"')).toEqual({ value: '"quoted"', method: 'text' })
    expect(parseAgentOutput('')).toEqual({ value: '', method: 'text' })
  })

  it('stays fast on pathological input', () => {
    const text = '['.repeat(50_000) + '{"a":1}'
    expect(parseAgentOutput(text)).toEqual({ value: { a: 1 }, method: 'embedded_json' })
  })
})

describe('normalizeAgentOutput', () => {
  it('parses strings only and passes structured outputs through', () => {
    expect(normalizeAgentOutput('Result:\n```json\n{"n": 9}\n```')).toEqual({ value: { n: 9 }, method: 'fenced_json' })
    expect(normalizeAgentOutput({ n: 9 })).toEqual({ value: { n: 9 }, method: 'text' })
    expect(normalizeAgentOutput(9)).toEqual({ value: 9, method: 'text' })
    expect(normalizeAgentOutput(undefined)).toEqual({ value: undefined, method: 'text' })
  })
})
