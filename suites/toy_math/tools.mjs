/**
 * The toy_math suite's one tool: a calculator over + - * / and parentheses, evaluated by a small
 * recursive-descent parser (never eval), so a hostile expression can only fail to parse.
 */

/** @typedef {import('../../core/plugins.js').ToolDefinition} ToolDefinition */

/**
 * Evaluates an arithmetic expression.
 *   expr   := term (('+' | '-') term)*
 *   term   := factor (('*' | '/') factor)*
 *   factor := ('+' | '-') factor | number | '(' expr ')'
 * @param {string} source
 * @returns {number}
 */
export function evaluate(source) {
  let pos = 0
  const fail = (/** @type {string} */ why) => {
    throw new Error(`${why} at position ${pos} in ${JSON.stringify(source)}`)
  }
  const skipSpace = () => {
    while (pos < source.length && /\s/.test(source.charAt(pos))) pos += 1
  }
  const peek = () => {
    skipSpace()
    return source.charAt(pos)
  }

  /** @returns {number} */
  const expr = () => {
    let value = term()
    for (let op = peek(); op === '+' || op === '-'; op = peek()) {
      pos += 1
      const right = term()
      value = op === '+' ? value + right : value - right
    }
    return value
  }
  /** @returns {number} */
  const term = () => {
    let value = factor()
    for (let op = peek(); op === '*' || op === '/'; op = peek()) {
      pos += 1
      const right = factor()
      if (op === '/' && right === 0) fail('division by zero')
      value = op === '*' ? value * right : value / right
    }
    return value
  }
  /** @returns {number} */
  const factor = () => {
    const c = peek()
    if (c === '+' || c === '-') {
      pos += 1
      const value = factor()
      return c === '-' ? -value : value
    }
    if (c === '(') {
      pos += 1
      const value = expr()
      if (peek() !== ')') fail('expected )')
      pos += 1
      return value
    }
    const match = /^(?:\d+(?:\.\d*)?|\.\d+)/.exec(source.slice(pos))
    if (match === null) fail(c === '' ? 'unexpected end of expression' : `unexpected ${JSON.stringify(c)}`)
    pos += /** @type {RegExpExecArray} */ (match)[0].length
    return Number(/** @type {RegExpExecArray} */ (match)[0])
  }

  if (source.trim() === '') fail('empty expression')
  const value = expr()
  if (peek() !== '') fail(`unexpected ${JSON.stringify(peek())}`)
  if (!Number.isFinite(value)) fail('result is not finite')
  return value
}

/** @type {ToolDefinition[]} */
export const tools = [
  {
    name: 'calculator',
    description: 'Evaluates an arithmetic expression using + - * / and parentheses; returns a number.',
    input_schema: {
      type: 'object',
      properties: { expression: { type: 'string', description: 'for example (1 + 2) * 3' } },
      required: ['expression'],
      additionalProperties: false,
    },
    run(args) {
      if (typeof args.expression !== 'string') throw new Error('expression must be a string')
      return evaluate(args.expression)
    },
  },
]

export default tools
