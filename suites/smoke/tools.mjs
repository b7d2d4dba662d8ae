/**
 * Tools of the smoke suite. Each rejects empty or non-finite input the way a real service
 * would, so a careless call surfaces as a tool error rather than a silent wrong answer.
 */

/** @typedef {import('../../core/plugins.js').ToolDefinition} ToolDefinition */

/** @param {unknown} value @param {string} name */
function nonEmptyString(value, name) {
  if (typeof value !== 'string' || value.trim() === '') throw new Error(`${name} must be a non-empty string`)
  return value
}

/** @param {unknown} value @param {string} name */
function finiteNumber(value, name) {
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new Error(`${name} must be a finite number`)
  return value
}

/** @param {Record<string, string>} fixtures */
function keyValueStore(fixtures) {
  const file = Object.keys(fixtures).find((p) => p.endsWith('.json'))
  if (file === undefined) throw new Error('no key-value fixture is mounted for this task')
  return /** @type {Record<string, unknown>} */ (JSON.parse(/** @type {string} */ (fixtures[file])))
}

/** @type {ToolDefinition[]} */
export const tools = [
  {
    name: 'echo',
    description: 'Sends a message to the echo service and returns its reply.',
    input_schema: {
      type: 'object',
      properties: { message: { type: 'string', description: 'the message to send' } },
      required: ['message'],
      additionalProperties: false,
    },
    run(args) {
      return `echo: ${nonEmptyString(args.message, 'message')}`
    },
  },
  {
    name: 'add',
    description: 'Adds two numbers.',
    input_schema: {
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
      additionalProperties: false,
    },
    run(args) {
      return finiteNumber(args.a, 'a') + finiteNumber(args.b, 'b')
    },
  },
  {
    name: 'kv_get',
    description: 'Reads the value stored under a key in the key-value store.',
    input_schema: {
      type: 'object',
      properties: { key: { type: 'string' } },
      required: ['key'],
      additionalProperties: false,
    },
    run(args, ctx) {
      const key = nonEmptyString(args.key, 'key')
      const store = keyValueStore(ctx.fixtures)
      if (!Object.hasOwn(store, key)) throw new Error(`no such key: ${key}`)
      return store[key]
    },
  },
  {
    name: 'kv_delete',
    description: 'Deletes a key from the key-value store. Destructive.',
    input_schema: {
      type: 'object',
      properties: { key: { type: 'string' } },
      required: ['key'],
      additionalProperties: false,
    },
    run(args) {
      return { deleted: nonEmptyString(args.key, 'key') }
    },
  },
  {
    name: 'reverse',
    description: 'Reverses the characters of a text.',
    input_schema: {
      type: 'object',
      properties: { text: { type: 'string' } },
      required: ['text'],
      additionalProperties: false,
    },
    run(args) {
      return [...nonEmptyString(args.text, 'text')].reverse().join('')
    },
  },
  {
    name: 'uppercase',
    description: 'Converts a value to upper case.',
    input_schema: {
      type: 'object',
      properties: { value: { type: 'string' } },
      required: ['value'],
      additionalProperties: false,
    },
    run(args) {
      return nonEmptyString(args.value, 'value').toUpperCase()
    },
  },
  {
    name: 'word_count',
    description: 'Counts the whitespace-separated words of a text.',
    input_schema: {
      type: 'object',
      properties: { text: { type: 'string' } },
      required: ['text'],
      additionalProperties: false,
    },
    run(args) {
      return nonEmptyString(args.text, 'text').trim().split(/\s+/).length
    },
  },
]

export default tools
