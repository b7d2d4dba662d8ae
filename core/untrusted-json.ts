/**
 * JSON from an agent (its protocol lines, output, tool-call bodies, model requests, the files it
 * wrote, an agent service's answers). V8's JSON.parse is fast on ordinary text but slow to fail on
 * deep nesting: a 1 MiB line of `[` held a worker's event loop 0.65 s, the LLM gateway's 16 MiB body
 * 5.8 s — per request, for every attempt on that worker — and a deep document that does parse breaks
 * JSON.stringify later (a stack overflow). So nesting deeper than MAX_JSON_DEPTH is refused before
 * parsing, by a linear scan (~3 ms per MiB) that only text long enough to be that deep needs.
 */

/** The deepest nesting of arrays and objects accepted in JSON from an agent; no answer, tool call or model request comes near it. */
export const MAX_JSON_DEPTH = 512

/** Whether `text`, read as JSON, nests arrays and objects deeper than `max` (brackets inside strings do not count). */
export function nestsDeeperThan(text: string, max: number): boolean {
  if (text.length <= max) return false
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++
      else if (c === 0x22) inString = false
    } else if (c === 0x22) {
      inString = true
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true
    } else if (c === 0x5d || c === 0x7d) {
      depth--
    }
  }
  return false
}

/** JSON.parse for text an agent controls: throws a SyntaxError, as JSON.parse does on bad text, when it nests deeper than MAX_JSON_DEPTH. */
export function parseUntrustedJson(text: string): unknown {
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) throw new SyntaxError(`JSON nested deeper than ${MAX_JSON_DEPTH} levels`)
  return JSON.parse(text)
}
