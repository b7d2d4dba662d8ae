/**
 * Lone UTF-16 surrogates: half of a pair, which a JS string can hold (an agent's JSON `"\ud800"` parses
 * to one) but UTF-8 cannot. JSON.stringify writes one as its escape, ClickHouse refuses that escape,
 * and a row that holds one fails the insert of every row of its batch. Everything an attempt stores is
 * made well-formed first: each lone surrogate becomes U+FFFD, as a UTF-8 decoder does with a bad byte.
 */

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g

/** `text` with every lone surrogate replaced by U+FFFD (the same string when it has none). */
export function wellFormedText(text: string): string {
  LONE_SURROGATE.lastIndex = 0
  return LONE_SURROGATE.test(text) ? text.replace(LONE_SURROGATE, '\ufffd') : text
}

/**
 * `value` with every string in it (object keys too) well-formed: the same object where nothing
 * changes, new objects and arrays only along the paths to what did.
 */
export function wellFormed<T>(value: T): T {
  if (typeof value === 'string') return wellFormedText(value) as T
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i]
      const made = wellFormed(item)
      if (made !== item) (copy ??= value.slice())[i] = made
    }
    return (copy ?? value) as T
  }
  if (value === null || typeof value !== 'object') return value
  let copy: Record<string, unknown> | undefined
  for (const [key, item] of Object.entries(value)) {
    const madeKey = wellFormedText(key)
    const made = wellFormed(item)
    if (madeKey === key && made === item) continue
    copy ??= { ...(value as Record<string, unknown>) }
    if (madeKey !== key) delete copy[key]
    copy[madeKey] = made
  }
  return (copy ?? value) as T
}

const BACKSLASH = 0x5c

/**
 * Whether JSON text written by JSON.stringify holds a lone surrogate: it escapes those as `\udXXX`
 * (lower-case hex) and writes every paired one as itself, so any such escape is one. A search over the
 * bytes, for the hot path: the rare message that has one is made well-formed and encoded again.
 */
export function hasLoneSurrogateEscape(json: Uint8Array): boolean {
  const bytes = Buffer.from(json.buffer, json.byteOffset, json.byteLength)
  for (let at = bytes.indexOf('\\ud'); at !== -1; at = bytes.indexOf('\\ud', at + 1)) {
    const hex = bytes[at + 3]
    // 8–f: the high (d800–dbff) and low (dc00–dfff) halves
    if (hex === undefined || !((hex >= 0x38 && hex <= 0x39) || (hex >= 0x61 && hex <= 0x66))) continue
    // an escape only when the backslash before it is not itself escaped (an odd run of backslashes)
    let run = 1
    while (at - run >= 0 && bytes[at - run] === BACKSLASH) run++
    if (run % 2 === 1) return true
  }
  return false
}
