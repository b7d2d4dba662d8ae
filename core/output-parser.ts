/**
 * The fallback output parser: agents that answer in prose get their structured answer extracted.
 * Pure and deliberately small; the rules are tried in order and the first that matches wins:
 *
 * 1. `json`          — the whole text (trimmed) is a JSON object or array.
 * 2. `fenced_json`   — the last ``` / ```json code fence whose body is a JSON object or array.
 * 3. `embedded_json` — the last balanced `{…}` / `[…]` in the text that parses as JSON.
 * 4. `answer_line`   — the last "Final answer: X" line, else the last "Answer: X" line
 *                      (case-insensitive, markdown emphasis and surrounding quotes stripped).
 * 5. `number`        — only with `{ expect: 'number' }`: the last number in the text.
 * 6. `text`          — none applied: the text as it was.
 *
 * Bare JSON scalars are left alone on purpose: `"42"` stays the string a grader compares as text.
 */
import { extractNumber } from './graders/output.js'
import { parseUntrustedJson } from './untrusted-json.js'

export type OutputParseMethod = 'json' | 'fenced_json' | 'embedded_json' | 'answer_line' | 'number' | 'text'

export interface OutputParse {
  value: unknown
  method: OutputParseMethod
}

export interface OutputParseOptions {
  /** what the caller wants: `number` adds rule 5 (the numeric grader already reads the last number itself) */
  expect?: 'structured' | 'number'
}

/** The structured answer in an agent's text output, and which rule found it. */
export function parseAgentOutput(text: string, options: OutputParseOptions = {}): OutputParse {
  const trimmed = text.trim()
  const whole = parseContainer(trimmed)
  if (whole.ok) return { value: whole.value, method: 'json' }

  const fenced = lastFencedJson(text)
  if (fenced.ok) return { value: fenced.value, method: 'fenced_json' }

  const embedded = lastEmbeddedJson(text)
  if (embedded.ok) return { value: embedded.value, method: 'embedded_json' }

  const answer = answerLine(text)
  if (answer !== undefined) return { value: answer, method: 'answer_line' }

  if (options.expect === 'number') {
    const number = extractNumber(text)
    if (number !== null) return { value: number, method: 'number' }
  }
  return { value: text, method: 'text' }
}

/**
 * An agent's output with the parser applied to strings only: structured outputs (objects, numbers)
 * pass through untouched, and so does text in which no rule found anything.
 */
export function normalizeAgentOutput(output: unknown, options: OutputParseOptions = {}): OutputParse {
  if (typeof output !== 'string') return { value: output, method: 'text' }
  return parseAgentOutput(output, options)
}

type Parsed = { ok: true; value: unknown } | { ok: false }

/** JSON text that is an object or an array; scalars do not count as structure. */
function parseContainer(text: string): Parsed {
  const first = text[0]
  if (first !== '{' && first !== '[') return { ok: false }
  try {
    const value: unknown = parseUntrustedJson(text)
    return typeof value === 'object' && value !== null ? { ok: true, value } : { ok: false }
  } catch {
    return { ok: false }
  }
}

const FENCE = /```[ \t]*([A-Za-z0-9_-]*)[ \t]*\r?\n([\s\S]*?)```/g

/** The last fence (of the JSON languages, or none) whose body parses; at most EMBEDDED_MAX_PARSES are tried, from the last back. */
function lastFencedJson(text: string): Parsed {
  const bodies: string[] = []
  for (const match of text.matchAll(FENCE)) {
    const language = (match[1] ?? '').toLowerCase()
    if (language !== '' && language !== 'json' && language !== 'jsonc' && language !== 'javascript' && language !== 'js') continue
    bodies.push(match[2] ?? '')
    if (bodies.length > EMBEDDED_MAX_PARSES) bodies.shift()
  }
  for (let i = bodies.length - 1; i >= 0; i -= 1) {
    const parsed = parseContainer(bodies[i]!.trim())
    if (parsed.ok) return parsed
  }
  return { ok: false }
}

// at most this many candidate fences and containers are parsed, so pathological text stays cheap
const EMBEDDED_MAX_PARSES = 50

/**
 * The last balanced JSON object/array in the text, outermost first (so the final answer wins over
 * earlier ones, and `{"a":[1]}` over its `[1]`). One pass pairs the brackets (strings respected
 * inside brackets, a mismatch resets), then candidates are parsed from the last closing bracket back.
 * Each closing bracket closes at most one pair, so the pass finds pairs in order of their closing
 * bracket and keeps only the last EMBEDDED_MAX_PARSES; the open brackets wait on a typed stack (a
 * megabyte of `[` cost 1.2 s as an object per bracket).
 */
function lastEmbeddedJson(text: string): Parsed {
  const opens = new Int32Array(text.length + 1)
  let depth = 0
  // the last EMBEDDED_MAX_PARSES pairs, a ring: pair n at n % EMBEDDED_MAX_PARSES
  const keptOpen = new Int32Array(EMBEDDED_MAX_PARSES)
  const keptClose = new Int32Array(EMBEDDED_MAX_PARSES)
  let pairs = 0
  let inString = false
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i += 1
      else if (c === 0x22) inString = false
      continue
    }
    if (c === 0x22 && depth > 0) inString = true
    else if (c === 0x7b || c === 0x5b) opens[depth++] = i
    else if ((c === 0x7d || c === 0x5d) && depth > 0) {
      const open = opens[--depth]!
      if (text.charCodeAt(open) === (c === 0x7d ? 0x7b : 0x5b)) {
        keptOpen[pairs % EMBEDDED_MAX_PARSES] = open
        keptClose[pairs % EMBEDDED_MAX_PARSES] = i
        pairs += 1
      } else {
        depth = 0
      }
    }
  }
  for (let n = pairs - 1; n >= Math.max(0, pairs - EMBEDDED_MAX_PARSES); n -= 1) {
    const parsed = parseContainer(text.slice(keptOpen[n % EMBEDDED_MAX_PARSES], keptClose[n % EMBEDDED_MAX_PARSES]! + 1))
    if (parsed.ok) return parsed
  }
  return { ok: false }
}

// greedy captures, trimmed in code: lazy captures before an optional tail backtrack quadratically
const FINAL_ANSWER = /^[ \t>*_#-]*final[ \t]+answer[ \t*_]*:(.+)$/gim
const ANSWER = /^[ \t>*_#-]*answer[ \t*_]*:(.+)$/gim

function answerLine(text: string): string | undefined {
  const last = (pattern: RegExp): string | undefined => {
    let value: string | undefined
    for (const match of text.matchAll(pattern)) value = match[1]
    return value
  }
  const raw = last(FINAL_ANSWER) ?? last(ANSWER)
  if (raw === undefined) return undefined
  const unquoted = stripQuotes(trimEmphasis(raw))
  return unquoted === '' ? undefined : unquoted
}

/** Whitespace, `*` and `_` cut from both ends (a loop, not a regex: linear on any input). */
function trimEmphasis(text: string): string {
  const strip = (ch: string | undefined): boolean => ch === '*' || ch === '_' || (ch !== undefined && ch.trim() === '')
  let start = 0
  let end = text.length
  while (start < end && strip(text[start])) start += 1
  while (end > start && strip(text[end - 1])) end -= 1
  return text.slice(start, end)
}

function stripQuotes(text: string): string {
  const first = text[0]
  if (text.length >= 2 && (first === '"' || first === "'" || first === '`') && text.endsWith(first)) return text.slice(1, -1).trim()
  return text
}
