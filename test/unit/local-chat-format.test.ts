/** How OpenAI chat requests meet a small local model: tool choice, the reply grammar, history, parsing, JSON schemas. */
import { describe, expect, it } from 'vitest'
import { jsonReplySchema, offeredTools, parseReply, replyGrammar, toHistory, type ChatTool } from '../../engine/llm/local/chat-format.js'

const calculator: ChatTool = {
  type: 'function',
  function: { name: 'calculator', description: 'Evaluates an arithmetic expression.', parameters: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] } },
}
const lookup: ChatTool = {
  type: 'function',
  function: { name: 'kv_get', parameters: { type: 'object', properties: { key: { type: 'string', enum: ['a', 'b'] }, limit: { type: 'integer' }, tags: { type: 'array', items: { type: 'string' } } } } },
}

describe('tool_choice', () => {
  it('auto offers every function tool and an answer; none offers no tool; required and a named function offer no answer', () => {
    const tools = [calculator, lookup, { type: 'retrieval', function: { name: 'x' } }]
    expect(offeredTools(tools, undefined)).toEqual({ tools: [calculator, lookup], answer: true })
    expect(offeredTools(tools, 'auto')).toEqual({ tools: [calculator, lookup], answer: true })
    expect(offeredTools(tools, 'none')).toEqual({ tools: [], answer: true })
    expect(offeredTools(tools, 'required')).toEqual({ tools: [calculator, lookup], answer: false })
    expect(offeredTools(tools, { type: 'function', function: { name: 'kv_get' } })).toEqual({ tools: [lookup], answer: false })
    // a named function the request does not offer falls back to auto
    expect(offeredTools(tools, { type: 'function', function: { name: 'nope' } })).toEqual({ tools: [calculator, lookup], answer: true })
    expect(offeredTools(undefined, 'required')).toEqual({ tools: [], answer: true })
  })
})

describe('the reply grammar', () => {
  it('allows a call of each offered tool with arguments of its schema, or an answer', () => {
    expect(replyGrammar([calculator, lookup])).toBe(
      [
        String.raw`root ::= "{\"tool\":\"calculator\",\"arguments\":" args0 "}" | "{\"tool\":\"kv_get\",\"arguments\":" args1 "}" | "{\"answer\":" string "}"`,
        String.raw`args0 ::= "{" "\"expression\":" string "}"`,
        String.raw`args1 ::= "{" "\"key\":" ("\"a\"" | "\"b\"") ",\"limit\":" integer ",\"tags\":" ("[" (string ("," string)*)? "]") "}"`,
        String.raw`string ::= "\"" ( [^"\\\x00-\x1F] | "\\" ["\\/bfnrt] )* "\""`,
        String.raw`number ::= "-"? [0-9]+ ("." [0-9]+)?`,
        String.raw`integer ::= "-"? [0-9]+`,
        String.raw`boolean ::= "true" | "false"`,
        String.raw`value ::= string | number | boolean | "null"`,
      ].join('\n'),
    )
  })

  it('leaves the answer out when a tool call is required', () => {
    const root = replyGrammar([calculator], false).split('\n')[0]
    expect(root).toBe(String.raw`root ::= "{\"tool\":\"calculator\",\"arguments\":" args0 "}"`)
  })
})

describe('parsing a reply', () => {
  it('reads a call, an answer (non-string answers as JSON) and nothing else', () => {
    expect(parseReply('{"tool":"calculator","arguments":{"expression":"1+2"}}')).toEqual({ tool: 'calculator', arguments: { expression: '1+2' } })
    expect(parseReply('{"tool":"calculator"}')).toEqual({ tool: 'calculator', arguments: {} })
    expect(parseReply('{"answer":"3"}')).toEqual({ answer: '3' })
    expect(parseReply('{"answer":3}')).toEqual({ answer: '3' })
    // cut off at max_tokens
    expect(parseReply('{"tool":"calculator","argum')).toBeUndefined()
    expect(parseReply('"3"')).toBeUndefined()
    expect(parseReply('{"other":1}')).toBeUndefined()
  })
})

describe('chat history', () => {
  it('keeps system prompts first, adds the tool instructions, and writes earlier calls and results in the reply format', () => {
    const history = toHistory(
      [
        { role: 'system', content: 'Solve it.' },
        { role: 'user', content: [{ type: 'text', text: 'What is ' }, { type: 'text', text: '1+2?' }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', function: { name: 'calculator', arguments: '{"expression":"1+2"}' } }] },
        { role: 'tool', content: '3' },
        { role: 'assistant', content: '3' },
      ],
      [calculator],
    )
    expect(history).toEqual([
      {
        type: 'system',
        text:
          'Solve it.\n\nTools:\n- calculator: Evaluates an arithmetic expression. Arguments: {"expression":{"type":"string"}}\n' +
          'Reply with one JSON object: {"tool": "<name>", "arguments": {...}} to call a tool, or {"answer": "<final answer>"} when done.',
      },
      { type: 'user', text: 'What is 1+2?' },
      { type: 'model', response: ['{"tool":"calculator","arguments":{"expression":"1+2"}}'] },
      { type: 'user', text: 'Tool result: 3' },
      { type: 'model', response: ['{"answer":"3"}'] },
    ])
  })

  it('without tools, keeps plain text as it was said', () => {
    expect(toHistory([{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }], [])).toEqual([
      { type: 'user', text: 'hi' },
      { type: 'model', response: ['hello'] },
    ])
  })
})

describe('response_format JSON schemas', () => {
  it('become closed objects with every property required, small integer ranges as enums and capped strings', () => {
    expect(
      jsonReplySchema({
        type: 'object',
        properties: {
          score: { type: 'integer', minimum: 1, maximum: 5 },
          reason: { type: 'string' },
          step: { type: ['integer', 'null'] },
          verdict: { enum: ['pass', 'fail'] },
          tags: { type: 'array', items: { type: 'string', maxLength: 10 } },
        },
        required: ['score'],
      }),
    ).toEqual({
      type: 'object',
      properties: {
        score: { enum: [1, 2, 3, 4, 5] },
        reason: { type: 'string', maxLength: 120 },
        step: { oneOf: [{ type: 'integer' }, { type: 'null' }] },
        verdict: { enum: ['pass', 'fail'] },
        tags: { type: 'array', items: { type: 'string', maxLength: 10 } },
      },
      required: ['score', 'reason', 'step', 'verdict', 'tags'],
      additionalProperties: false,
    })
  })
})
