/** Helpers shared by the text graders: turning an agent's output into text, fields and numbers. */
import { parseUntrustedJson } from '../untrusted-json.js'

/** The agent's output as text: strings as they are, objects as JSON, null/undefined as ''. */
export function outputText(output: unknown): string {
  if (output === null || output === undefined) return ''
  if (typeof output === 'string') return output
  if (typeof output === 'number' || typeof output === 'boolean' || typeof output === 'bigint') return String(output)
  try {
    return JSON.stringify(output) ?? String(output)
  } catch {
    // circular structures and the like: still show something rather than throw mid-grading
    return String(output)
  }
}

/** A string for a grade detail: JSON-quoted and cut to `max` characters. */
export function quote(text: string, max = 120): string {
  return JSON.stringify(text.length > max ? `${text.slice(0, max)}…` : text)
}

export type Selection = { ok: true; value: unknown } | { ok: false; detail: string }

/**
 * The value a grader looks at: the whole output, or the value at a dot path (`answer.items.0`)
 * when `field` is given and the output is an object or a JSON string.
 */
export function selectOutput(output: unknown, field: string | undefined): Selection {
  if (field === undefined) return { ok: true, value: output }
  let current: unknown = output
  if (typeof current === 'string') {
    try {
      current = parseUntrustedJson(current)
    } catch {
      return { ok: false, detail: `field "${field}" not found: output is not JSON (${quote(output as string)})` }
    }
  }
  for (const segment of field.split('.')) {
    if (Array.isArray(current) && /^\d+$/.test(segment) && Number(segment) < current.length) {
      current = current[Number(segment)]
    } else if (current !== null && typeof current === 'object' && !Array.isArray(current) && Object.hasOwn(current, segment)) {
      current = (current as Record<string, unknown>)[segment]
    } else {
      return { ok: false, detail: `field "${field}" not found in output ${quote(outputText(output))}` }
    }
  }
  return { ok: true, value: current }
}

const WHOLE_NUMBER = /^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$/
// a sign counts only when it does not follow a word character (so "2024-05" is not -5);
// thousands separators are accepted ("1,234" → 1234)
const NUMBER_IN_TEXT = /(?:(?<![\w)\]])[-+])?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?/g

/** A number from an output: a number, a numeric string, or else the last number in the text; null if none. */
export function extractNumber(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null
  const text = outputText(value).trim()
  if (WHOLE_NUMBER.test(text)) return Number(text)
  const matches = text.match(NUMBER_IN_TEXT)
  const last = matches?.[matches.length - 1]
  if (last === undefined) return null
  const parsed = Number(last.replaceAll(',', ''))
  return Number.isFinite(parsed) ? parsed : null
}
